import Foundation

/// A ``PrefsStore`` that keeps its sets in memory, for tests and previews.
///
/// Nothing survives the process. Each instance is a separate store; pass the same instance
/// to several ``PersistentPrefs`` objects to share sets between them.
///
/// ```swift
/// let store = InMemoryStore()
/// let prefs = SamplePrefs(key: "Preview", store: store)
/// ```
public final class InMemoryStore: PrefsStore, @unchecked Sendable {  // `sets` is a Locked
    private let sets = Locked<[String: [String: Any]]>([:])

    /// A unique identifier for this in-memory store.
    public let identifier: String

    /// Creates an empty in-memory store.
    public init() {
        identifier = "memory:\(UUID().uuidString)"
    }

    /// Returns the set stored under `root`, or `nil`.
    ///
    /// - Parameter root: The root key of the set.
    /// - Returns: The stored dictionary, or `nil`.
    public func load(root: String) throws -> [String: Any]? {
        sets.withLock { $0[root] }
    }

    /// Replaces the set stored under `root`.
    ///
    /// - Parameters:
    ///   - values: The whole set.
    ///   - root: The root key of the set.
    public func save(_ values: [String: Any], root: String) throws {
        sets.withLock { $0[root] = values }
    }

    /// Removes the set stored under `root`.
    ///
    /// - Parameter root: The root key of the set.
    public func remove(root: String) throws {
        _ = sets.withLock { $0.removeValue(forKey: root) }
    }

    /// The root keys that hold a set, sorted.
    ///
    /// - Returns: The root keys present in the store.
    public func roots() throws -> [String] {
        sets.withLock { $0.keys.sorted() }
    }
}

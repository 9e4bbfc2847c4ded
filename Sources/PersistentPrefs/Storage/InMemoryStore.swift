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

    /// See ``PrefsStore/load(root:)``.
    public func load(root: String) throws -> [String: Any]? { sets.withLock { $0[root] } }

    /// See ``PrefsStore/save(_:root:)``.
    public func save(_ values: [String: Any], root: String) throws { sets.withLock { $0[root] = values } }

    /// See ``PrefsStore/remove(root:)``.
    public func remove(root: String) throws { _ = sets.withLock { $0.removeValue(forKey: root) } }

    /// See ``PrefsStore/roots()``.
    public func roots() throws -> [String] { sets.withLock { $0.keys.sorted() } }
}

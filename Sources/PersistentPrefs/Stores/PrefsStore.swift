import Foundation

/// Where preference sets live: one `[String: Any]` dictionary per root key.
///
/// ``PersistentPrefs`` talks to storage only through this protocol. The library ships
/// ``UserDefaultsStore`` (the default) and ``InMemoryStore`` (tests and previews); a store of
/// your own can keep sets anywhere.
///
/// Contract:
/// - ``save(_:root:)`` and ``remove(root:)`` return only when the change is durable: a
///   process killed right after they return must find the change on its next start.
/// - Values handed to ``save(_:root:)`` are already vetted and normalised: `String`,
///   `NSNumber`, `Date`, `Data`, and `[Any]` / `[String: Any]` of those, nested.
/// - ``load(root:)`` may hand back values in the platform's own shapes (on Linux,
///   `Optional`-wrapped values and `AnyHashable` keys); ``PersistentPrefs`` normalises them
///   in one place.
/// - Throw ``PersistentPrefs/PersistentPrefs/PrefsError`` to describe a failure; other errors reach callers
///   as ``PersistentPrefs/PersistentPrefs/PrefsError/unknownError(error:)``.
/// - Two stores with equal ``identifier`` values are the same storage: instances using them
///   share one in-memory copy of each set.
public protocol PrefsStore: Sendable {
    /// A string that identifies the underlying storage (for example the suite name).
    var identifier: String { get }

    /// Returns the dictionary stored under `root`, or `nil` when nothing is stored there.
    ///
    /// - Parameter root: The root key of the set.
    /// - Returns: The stored dictionary, or `nil`.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the stored data cannot be read.
    func load(root: String) throws -> [String: Any]?

    /// Replaces the dictionary stored under `root`; durable when it returns.
    ///
    /// - Parameters:
    ///   - values: The whole set, already vetted and normalised.
    ///   - root: The root key of the set.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the write failed; nothing was changed.
    func save(_ values: [String: Any], root: String) throws

    /// Removes whatever is stored under `root`; durable when it returns.
    ///
    /// - Parameter root: The root key of the set.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the removal failed.
    func remove(root: String) throws

    /// The root keys that currently hold a set, sorted.
    ///
    /// - Returns: The root keys present in the store.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the store cannot be read.
    func roots() throws -> [String]
}

import Foundation

/// The library's one reentrancy rule: a write never waits for itself.
///
/// A thread inside a write holds what the write excludes others by — a store file's lock
/// (`FileLock`), a suite object's write lock (`DefaultsHandle`), a set's turn (`SharedSet.Turn`).
/// A write it starts from inside (an `update` body or a migration step writing its own set or
/// another set of the same file, a style writing inside its own update) that needs one of them
/// again is refused with ``PersistentPrefs/PrefsError/transactionInProgress(root:)``, naming the
/// write it is inside, rather than left to wait forever. This type answers "does this thread hold
/// it?" for every one of them, from one record kept per thread; a wait that would come back to
/// this thread through other threads' turns is the turn's to find (its table of waits), with the
/// same error.
enum WriteScope {
    /// The key of this thread's record in `Thread.current.threadDictionary`: by resource, the
    /// label of the write holding it.
    private static let recordKey = "PersistentPrefs.WriteScope"

    /// The label of the write this thread is inside that holds `resource`, or `nil`.
    static func label(holding resource: String) -> String? {
        (Thread.current.threadDictionary[recordKey] as? [String: String])?[resource]
    }

    /// Throws ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the write this
    /// thread is inside when it holds `resource`.
    static func check(_ resource: String) throws {
        if let outer = label(holding: resource) { throw PersistentPrefs.PrefsError.transactionInProgress(root: outer) }
    }

    /// Runs `body` with `resource` recorded as held by this thread for the write `label` (the
    /// caller has taken it); the record ends with `body`.
    static func holding<Result>(_ resource: String, label: String, _ body: () throws -> Result) rethrows -> Result {
        let dictionary = Thread.current.threadDictionary
        var record = dictionary[recordKey] as? [String: String] ?? [:]
        let outer = record.updateValue(label, forKey: resource)
        dictionary[recordKey] = record
        defer {
            var record = dictionary[recordKey] as? [String: String] ?? [:]
            record[resource] = outer
            dictionary[recordKey] = record.isEmpty ? nil : record
        }
        return try body()
    }
}

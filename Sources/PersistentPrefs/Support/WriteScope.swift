import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// The library's one reentrancy rule: a write never waits for itself.
///
/// A thread inside a write holds what the write excludes others by — a store file's lock
/// (`FileLock`), a suite object's write lock (`DefaultsHandle`), a set's turn (`SharedSet.Turn`).
/// A write it starts from inside (an `update` body or a migration step writing its own set or
/// another set of the same file, a style writing inside its own update) that needs one of them
/// again is refused with ``PersistentPrefs/PrefsError/transactionInProgress(root:)``, naming the
/// write it is inside, rather than left to wait forever. This type answers "does this thread hold
/// it?" for every one of them, from one record kept per thread (thread-local storage: a
/// `threadDictionary` look-up, bridged on Linux, cost more than a durable write's own code); a wait that would come back to
/// this thread through other threads' turns is the turn's to find (its table of waits), with the
/// same error.
enum WriteScope {
    /// What this thread's writes hold: by resource, the label of the write holding it. Kept in
    /// thread-local storage while the thread holds anything, dropped when it holds nothing (so no
    /// destructor is needed at the thread's end).
    private final class Record {
        var held: [String: String] = [:]
    }

    /// The thread-local slot of this thread's ``Record``.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-local key for the write scope")
        return key
    }()

    /// This thread's record, or `nil` when it holds nothing.
    private static var record: Record? {
        pthread_getspecific(key).map { Unmanaged<Record>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The label of the write this thread is inside that holds `resource`, or `nil`.
    static func label(holding resource: String) -> String? {
        record?.held[resource]
    }

    /// Throws ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the write this
    /// thread is inside when it holds `resource`.
    static func check(_ resource: String) throws {
        if let outer = label(holding: resource) { throw PersistentPrefs.PrefsError.transactionInProgress(root: outer) }
    }

    /// Runs `body` with `resource` recorded as held by this thread for the write `label` (the
    /// caller has taken it); the record ends with `body`.
    static func holding<Result>(_ resource: String, label: String, _ body: () throws -> Result) rethrows -> Result {
        let record: Record
        if let existing = Self.record {
            record = existing
        } else {
            record = Record()
            pthread_setspecific(key, Unmanaged.passRetained(record).toOpaque())
        }
        let outer = record.held.updateValue(label, forKey: resource)
        defer {
            record.held[resource] = outer
            if record.held.isEmpty {
                pthread_setspecific(key, nil)
                Unmanaged.passUnretained(record).release()
            }
        }
        return try body()
    }
}

import Foundation

/// The library's one reentrancy rule: a write never waits for itself. A thread inside a write holds what it excludes
/// others by (a store file's `FileLock`, a suite's `DefaultsHandle` write lock, a set's `SharedSet.Turn`); a write
/// started from inside (an `update` body or migration step writing a set of the same file, a style writing inside its
/// own update) that needs one again is refused with ``PersistentPrefs/PrefsError/transactionInProgress(root:)``,
/// naming the outer write, rather than left to wait forever. This answers "does this thread hold it?" from one
/// thread-local record (no Foundation dictionary, which Linux bridges); a wait that comes back through other
/// threads' turns is the turn's to find, with the same error.
enum WriteScope {
    /// What this thread's writes hold: by resource, the label of the write holding it. Dropped when the thread holds
    /// nothing (so no destructor is needed at the thread's end).
    private final class Record {
        var held: [String: String] = [:]
        /// Work put off until the thread's writes end (see ``afterWrites(_:)``), in order.
        var deferred: [() -> Void] = []
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

    /// Whether this thread is inside a write (holds anything a write excludes others by).
    static var isInsideWrite: Bool {
        pthread_getspecific(key) != nil
    }

    /// Runs `work` now when this thread is inside no write; else once its writes end and their locks are let go (a
    /// set's events and lease ends, for a set written inside an `update` body), so no observer runs, and no watch
    /// stops, while that write holds its locks.
    static func afterWrites(_ work: @escaping () -> Void) {
        guard let record else { return work() }
        record.deferred.append(work)
    }

    /// Ends `lease` (if any) outside every lock: now, or once this thread's writes end.
    static func ending(_ lease: SetLease?) {
        guard let lease else { return }
        afterWrites { withExtendedLifetime(lease) {} }
    }

    /// The label of the write this thread is inside that holds `resource`, or `nil`.
    static func label(holding resource: String) -> String? {
        record?.held[resource]
    }

    /// Throws ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the write this thread is inside when
    /// it holds `resource`.
    static func check(_ resource: String) throws {
        if let outer = label(holding: resource) { throw PersistentPrefs.PrefsError.transactionInProgress(root: outer) }
    }

    /// Runs `body` with `resource` (which the caller has taken) recorded as held by this thread for the write `label`.
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
                let deferred = record.deferred
                Unmanaged.passUnretained(record).release()
                for work in deferred { work() }
            }
        }
        return try body()
    }
}

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
/// it?" for every one of them, from one record kept per thread in thread-local storage (every
/// durable write asks, so no Foundation dictionary, which Linux bridges); a wait that would come
/// back to this thread through other threads' turns is the turn's to find (its table of waits),
/// with the same error.
enum WriteScope {
    /// What this thread's writes hold: by resource, the label of the write holding it. Kept in
    /// thread-local storage while the thread holds anything, dropped when it holds nothing (so no
    /// destructor is needed at the thread's end).
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

    /// Runs `work` now when this thread is inside no write; else once its writes end, with every
    /// lock they held let go: a set's events and the end of its leases, when the set was written
    /// from inside another write (an `update` body), so that no observer runs, and no watch stops,
    /// while that write holds its locks.
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
                let deferred = record.deferred
                Unmanaged.passUnretained(record).release()
                for work in deferred { work() }
            }
        }
        return try body()
    }
}

import Foundation

/// A value guarded by one `NSLock`.
///
/// `NSLock` rather than `Synchronization.Mutex`: `Mutex` needs macOS 15 / iOS 18, and a
/// preferences library should run on older Apple systems too. The value lives behind a
/// pointer rather than in a stored `var`, so the hot read path pays for the lock only, not
/// also for Swift's dynamic exclusivity checks (the lock already gives exclusive access).
/// Callers never run user code (overridable members, observers) inside `withLock`.
final class Locked<State>: @unchecked Sendable {  // `storage` is only touched while holding `lock`
    private let lock = NSLock()
    private let storage: UnsafeMutablePointer<State>

    init(_ state: State) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: state)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}

/// A process-wide table of what the library keeps per file (lock holders, journal views,
/// parsed layer files, layer paths, swept folders), keyed by path; its entries are objects of a
/// class of the table's own, each table behind a lock of its own.
///
/// Every such table is this one non-generic type over `Locked<[String: AnyObject]>`, rather
/// than a `Locked<[String: Holder]>`, a `Locked<[String: View]>` and so on: a process builds
/// the metadata of each distinct generic type at run time, which a short-lived command pays
/// for each table type. Entries are read back with a class cast, which needs no such look-up.
struct PathTable: Sendable {
    private let entries = Locked<[String: AnyObject]>([:])

    /// The entry of `path` when there is one of class `Entry`.
    func entry<Entry: AnyObject>(_ path: String, as type: Entry.Type) -> Entry? {
        entries.withLock { $0[path] } as? Entry
    }

    /// Runs `body` with exclusive access to the entries.
    func withEntries<Result>(_ body: (inout [String: AnyObject]) throws -> Result) rethrows -> Result {
        try entries.withLock(body)
    }
}

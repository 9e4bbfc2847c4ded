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

import Foundation

/// One immutable object that readers use and writers replace, behind a lock.
///
/// Readers hold the lock only while `body` runs; a replaced object is released after the lock
/// is let go, so its deinit never runs under it.
final class SnapshotCell<Value: AnyObject>: @unchecked Sendable {  // `current` is Locked
    private let current = Locked<Value?>(nil)

    /// Runs `body` on the current object (`nil` before the first ``publish(_:)``), holding the
    /// cell's lock; `body` must not wait for anything nor publish.
    func read<Result>(_ body: (Value?) -> Result) -> Result {
        current.withLock { body($0) }
    }

    /// Makes `value` the object readers see.
    func publish(_ value: Value?) {
        let replaced = current.withLock { current in
            defer { current = value }
            return current
        }
        _ = replaced  // released here, outside the lock
    }
}

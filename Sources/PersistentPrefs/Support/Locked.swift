import Foundation

/// A value guarded by one `NSLock` (`Synchronization.Mutex` needs macOS 15 / iOS 18). The value lives behind a
/// pointer rather than in a stored `var`, so the hot read path pays for the lock only, not also for dynamic
/// exclusivity checks. Callers never run user code (overridable members, observers) inside `withLock`.
///
/// A lock given a ``LockLevel`` takes part in the library's lock order; one without is outside it (it guards one
/// object's state or one table, and is never held while a lock of the order is taken).
final class Locked<State>: @unchecked Sendable {  // `storage` is only touched while holding `lock`
    private let lock = NSLock()
    private let storage: UnsafeMutablePointer<State>
    #if DEBUG
        private let level: LockLevel?
    #endif

    /// Guards `state`; `level` places the lock in the lock order (``LockLevel``), `nil` outside it.
    init(_ state: State, level: LockLevel? = nil) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: state)
        #if DEBUG
            self.level = level
        #endif
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        #if DEBUG
            LockLevel.entering(level)
            defer { LockLevel.leaving(level) }
        #endif
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}

/// The library's lock order: a thread holding a lock of one level takes only locks of later levels, which rules out
/// a deadlock among them. Debug builds check it on every acquisition and stop at the first breach; release builds
/// carry no check.
///
/// 1. ``turn``: a set's turn (`SharedSet.Turn`), held by a write or reload for its whole length, the store's
///    cross-process lock taken inside. Turns of several sets may nest (a transaction over two sets); a wait for
///    itself is refused by the turn's own check (`transactionInProgress`);
/// 2. ``cell``: the set's `Locked` state (`SharedSet.Cell`), held to take or install a state;
/// 3. ``feed``: the set's `ChangeFeed` queue, taken under the cell to queue events in state order (observers are
///    called with no lock held);
/// 4. ``instance``: an instance's own state, under which only the read stamp (an atomic, or a `LockedInt`) is read.
enum LockLevel: Int, CaseIterable, Sendable {
    case turn = 0
    case cell
    case feed
    case instance

    #if DEBUG
        /// How many locks of each level this thread holds: a byte per level in one thread-local word (no allocation).
        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            precondition(pthread_key_create(&key, nil) == 0, "no thread-local key for the lock order")
            return key
        }()

        private static var held: UInt {
            get { UInt(bitPattern: pthread_getspecific(key)) }
            set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
        }

        /// The byte of ``held`` that counts the locks outside the order (`Locked`s without a level).
        private static let outsideShift = 8 * allCases.count

        /// Why this thread may not take a lock of `level` now, or `nil` when it may.
        static func breach(taking level: LockLevel) -> String? {
            let held = held
            if (held >> outsideShift) & 0xFF != 0 {
                return "lock order broken: a \(level) lock taken while this thread holds a lock outside the order (see LockLevel)"
            }
            for other in LockLevel.allCases where other.rawValue >= level.rawValue && (held >> (8 * other.rawValue)) & 0xFF != 0 {
                if other == .turn && level == .turn { continue }
                return "lock order broken: a \(level) lock taken while this thread holds a \(other) lock (see LockLevel)"
            }
            return nil
        }

        /// Checks that this thread may take a lock of `level` now (stopping the program if not), and counts it as
        /// held; `nil` counts a lock outside the order, which may be taken under any lock.
        static func entering(_ level: LockLevel?) {
            guard let level else {
                held += 1 << outsideShift
                return
            }
            if let breach = breach(taking: level) { preconditionFailure(breach) }
            held += 1 << (8 * level.rawValue)
        }

        /// Counts a lock of `level` (`nil`: outside the order) as released.
        static func leaving(_ level: LockLevel?) {
            held -= 1 << (level.map { 8 * $0.rawValue } ?? outsideShift)
        }
    #endif
}

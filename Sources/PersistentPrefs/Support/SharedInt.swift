import Foundation

#if canImport(Darwin)
    /// On Apple platforms the counter is a lock: `Synchronization.Atomic` needs macOS 15 / iOS 18.
    typealias SharedInt = LockedInt
#else
    import Synchronization

    /// An integer read on the hot path of every typed read (the ``PersistentPrefs/groupID`` generation, a shared
    /// set's read stamp), so elsewhere an atomic.
    final class SharedInt: Sendable {
        private let value = Atomic<Int>(0)

        /// The current value.
        func load() -> Int { value.load(ordering: .acquiring) }

        /// Adds one.
        func increment() { value.add(1, ordering: .releasing) }

        /// Adds one and returns the new value: a number no other caller is given.
        func next() -> Int { value.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue }

        /// Sets the value.
        func store(_ newValue: Int) { value.store(newValue, ordering: .releasing) }
    }
#endif

/// The lock-based counter that Apple platforms use as ``SharedInt``; compiled everywhere, so Linux builds check it.
final class LockedInt: Sendable {
    private let value = Locked(0)

    /// The current value.
    func load() -> Int { value.withLock { $0 } }

    /// Adds one.
    func increment() { value.withLock { $0 += 1 } }

    /// Adds one and returns the new value: a number no other caller is given.
    func next() -> Int { value.withLock { $0 += 1; return $0 } }

    /// Sets the value.
    func store(_ newValue: Int) { value.withLock { $0 = newValue } }
}

import Foundation

#if canImport(Darwin)
    /// On Apple platforms the counter is a lock: `Synchronization.Atomic` needs macOS 15 / iOS 18.
    typealias Generation = LockedGeneration
#else
    import Synchronization

    /// A counter read on every access of a ``PersistentPrefs`` instance without an explicit
    /// store, to notice a change of ``PersistentPrefs/groupID``.
    ///
    /// Elsewhere an atomic: this read is on the hot path of every typed read.
    final class Generation: Sendable {
        private let value = Atomic<Int>(0)

        /// The current generation.
        func load() -> Int { value.load(ordering: .acquiring) }

        /// Moves to the next generation.
        func increment() { value.add(1, ordering: .releasing) }
    }
#endif

/// The lock-based counter that Apple platforms use as ``Generation``; compiled everywhere, so
/// every Linux build checks it.
final class LockedGeneration: Sendable {
    private let value = Locked(0)

    /// The current generation.
    func load() -> Int { value.withLock { $0 } }

    /// Moves to the next generation.
    func increment() { value.withLock { $0 += 1 } }
}

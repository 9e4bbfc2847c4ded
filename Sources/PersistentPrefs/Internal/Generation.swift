import Foundation

#if canImport(Darwin)
    /// A counter read on every access of a ``PersistentPrefs`` instance without an explicit
    /// store, to notice a change of ``PersistentPrefs/groupID``.
    ///
    /// On Apple platforms a lock (`Synchronization.Atomic` needs macOS 15 / iOS 18).
    final class Generation: Sendable {
        private let value = Locked(0)

        /// The current generation.
        func load() -> Int { value.withLock { $0 } }

        /// Moves to the next generation.
        func increment() { value.withLock { $0 += 1 } }
    }
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

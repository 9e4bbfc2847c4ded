import Foundation

/// Runs `body` on `object` without the retain and release Swift would put around it: an
/// atomic pair each, several times what the rest of a lock-free read costs.
///
/// Only for an object the caller keeps alive meanwhile: a `let` of an object in use, or the
/// current object of a ``SnapshotCell`` inside a section.
@inline(__always)
func withoutRetain<Object: AnyObject, Result>(_ object: Object, _ body: (Object) -> Result) -> Result {
    Unmanaged.passUnretained(object)._withUnsafeGuaranteedRef(body)
}

#if canImport(Darwin)
    /// On Apple platforms the cell is a lock: `Synchronization.Atomic` needs macOS 15 / iOS 18.
    typealias SnapshotCell = LockedSnapshotCell
    /// On Apple platforms each cell's lock guards its reads, so a section counts nothing.
    final class SnapshotReaders: Sendable {
        /// The count every cell of the library uses.
        static let shared = SnapshotReaders()

        /// Runs `body`.
        @inline(__always)
        func section<Result>(_ body: () -> Result) -> Result { body() }
    }
#else
    import Synchronization

    /// Where readers announce themselves before using the objects of ``SnapshotCell``s: how many
    /// threads are inside a ``section(_:)`` now, counted in two halves.
    ///
    /// A reader counts itself in the half the current epoch names. A writer that must know
    /// that every reader who could hold an object it replaced has left (``waitForReaders()``)
    /// flips the epoch and waits for the old half to empty, twice: new readers count in the
    /// other half meanwhile, so it waits only for reads already under way, however busy the
    /// readers are (one count would starve it: busy readers on every core keep it above zero).
    ///
    /// The library's cells share one count (``shared``): a read that goes through two cells (an
    /// instance's resolved set, then that set's values) announces itself once.
    final class SnapshotReaders: Sendable {
        private let epoch = Atomic<Int>(0)
        private let evenCount = Atomic<Int>(0)
        private let oddCount = Atomic<Int>(0)
        /// Writers waiting for readers, one at a time (each flips the epoch twice).
        private let waiting = Locked(())

        /// The count every cell of the library uses.
        static let shared = SnapshotReaders()

        /// Runs `body`, inside which ``SnapshotCell/withCurrent(_:)`` may be called on cells that
        /// use this count.
        ///
        /// `body` must not wait for anything (a lock, a write) nor publish: writers may be waiting
        /// for it to leave.
        @inline(__always)
        func section<Result>(_ body: () -> Result) -> Result {
            if epoch.load(ordering: .sequentiallyConsistent) & 1 == 0 {
                // Wrapping: one locked instruction each (a checked add is a compare-and-swap loop).
                evenCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
                defer { evenCount.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
                return body()
            } else {
                oddCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
                defer { oddCount.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
                return body()
            }
        }

        /// Whether no reader is inside a section now.
        var isQuiet: Bool {
            evenCount.load(ordering: .sequentiallyConsistent) == 0 && oddCount.load(ordering: .sequentiallyConsistent) == 0
        }

        /// Returns once every reader that was inside a section when it was called has left.
        /// Never call it inside a section.
        func waitForReaders() {
            waiting.withLock { _ in
                for _ in 0..<2 {
                    let old = epoch.add(1, ordering: .sequentiallyConsistent).oldValue
                    // Readers stay inside for a dictionary look-up: a long wait means a reader
                    // thread was descheduled inside, so yield to it rather than spin.
                    if old & 1 == 0 {
                        while evenCount.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
                    } else {
                        while oddCount.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
                    }
                }
            }
        }
    }

    /// One immutable object that readers use without taking a lock, replaced by writers.
    ///
    /// A reader announces itself (``SnapshotReaders/section(_:)``), loads the current object and
    /// uses it in place (no retain), then leaves; a writer swaps in the new object and releases
    /// the objects it replaced once it has seen no reader inside (until then they wait in
    /// `retired`). Readers never wait; a writer waits only when many replaced objects are
    /// still waiting (readers never all out at once), and then only for the reads under way
    /// (see ``SnapshotReaders/waitForReaders()``).
    ///
    /// Why it is safe: every step is sequentially consistent. A reader that loaded an object
    /// announced itself before loading it, and so before the swap that replaced it; the writer
    /// reads the counts (or starts waiting) after that swap, so it sees the reader unless the
    /// reader has left.
    final class SnapshotCell<Value: AnyObject>: @unchecked Sendable {  // `retired` is Locked; the rest are atomics
        private let current = Atomic<Unmanaged<Value>?>(nil)
        /// Replaced objects a reader may still be using; touched by writers only.
        private let retired = Locked<[Unmanaged<Value>]>([])
        /// The readers this cell waits for.
        let readers: SnapshotReaders

        init(readers: SnapshotReaders = .shared) {
            self.readers = readers
        }

        deinit {
            current.load(ordering: .sequentiallyConsistent)?.release()
            retired.withLock { $0.forEach { $0.release() } }
        }

        /// Runs `body` on the current object (`nil` before the first ``publish(_:)``); call it
        /// inside a section of ``readers``, whose rules `body` follows.
        @inline(__always)
        func withCurrent<Result>(_ body: (Value?) -> Result) -> Result {
            guard let object = current.load(ordering: .sequentiallyConsistent) else { return body(nil) }
            return object._withUnsafeGuaranteedRef { body($0) }
        }

        /// `body`'s answer for the current object, used in place, or `none` before the first
        /// ``publish(_:)``; call it inside a section of ``readers``, whose rules `body` follows.
        /// Unlike ``withCurrent(_:)``, whose optional argument may cost a retain and release.
        @inline(__always)
        func withCurrentObject<Result>(else none: Result, _ body: (Value) -> Result) -> Result {
            guard let object = current.load(ordering: .sequentiallyConsistent) else { return none }
            return object._withUnsafeGuaranteedRef(body)
        }

        /// ``withCurrent(_:)`` in a section of its own.
        @inline(__always)
        func read<Result>(_ body: (Value?) -> Result) -> Result {
            readers.section { withCurrent(body) }
        }

        /// Makes `value` the object readers see; the one it replaces is released once no reader
        /// can still be using it. Never call it inside a section.
        func publish(_ value: Value?) {
            let replaced = current.exchange(value.map { Unmanaged.passRetained($0) }, ordering: .sequentiallyConsistent)
            retired.withLock { retired in
                if let replaced { retired.append(replaced) }
                guard !retired.isEmpty else { return }
                // Usually no reader is inside; else the objects wait for a later write, up to a
                // bound, past which this writer waits for the reads under way.
                if !readers.isQuiet {
                    guard retired.count > Self.maximumRetired else { return }
                    readers.waitForReaders()
                }
                for object in retired { object.release() }
                retired.removeAll(keepingCapacity: true)
            }
        }

        /// How many replaced objects wait for readers to leave now.
        var retiredCount: Int { retired.withLock { $0.count } }

        /// How many replaced objects may wait for readers to leave before a writer waits too.
        static var maximumRetired: Int { 16 }
    }
#endif

/// The lock-based cell that Apple platforms use as ``SnapshotCell``; compiled everywhere, so
/// every Linux build checks it.
final class LockedSnapshotCell<Value: AnyObject>: @unchecked Sendable {  // `current` is Locked
    private let current = Locked<Value?>(nil)

    /// A cell; `readers` is not used (the lock guards every read), only accepted so both cells
    /// are made alike.
    init(readers: SnapshotReaders = .shared) {}

    /// Runs `body` on the current object (`nil` before the first ``publish(_:)``), holding the
    /// cell's lock.
    func withCurrent<Result>(_ body: (Value?) -> Result) -> Result {
        current.withLock { body($0) }
    }

    /// `body`'s answer for the current object, or `none` before the first ``publish(_:)``,
    /// holding the cell's lock.
    func withCurrentObject<Result>(else none: Result, _ body: (Value) -> Result) -> Result {
        current.withLock { $0.map(body) ?? none }
    }

    /// ``withCurrent(_:)``.
    func read<Result>(_ body: (Value?) -> Result) -> Result {
        withCurrent(body)
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

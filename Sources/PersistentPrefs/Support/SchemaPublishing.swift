import Foundation

/// The schema files being written off the writers' threads (see ``SetStorage/publish(_:classID:root:inline:)``), one
/// at a time and in the order their writes asked for them, by one of the library's threads at most. Whatever shows a
/// schema file to its reader in this process waits for the files asked for before it: the public properties and
/// methods that name or read a schema file, ``PersistentPrefs/synchronize()``, and a normal exit. A publication takes
/// no lock but its own and `publishedSchemas`', so it may be waited for under any lock of the library.
enum SchemaPublishing {
    private static let queue = Queue()
    private static let waitsAtExit: Void = { atexit { SchemaPublishing.waitForAll() } }()

    /// Runs `work` after the publications asked for before it (``waitForAll()`` waits for it), or at once when
    /// `inline`: a program that writes once and exits would wait for it at exit anyway, and starts no thread for it.
    static func run(inline: Bool = false, _ work: @escaping @Sendable () -> Void) {
        guard !inline else { return work() }
        _ = waitsAtExit
        if queue.append(work) { Detached.run { queue.drain() } }
    }

    /// Returns once every publication asked for before the call is done (written, or left out).
    static func waitForAll() {
        queue.waitForTicket()
    }

    private final class Queue: @unchecked Sendable {  // every `var` is only touched holding `condition`'s lock
        private let condition = NSCondition()
        private var work: [@Sendable () -> Void] = []
        private var draining = false
        /// Publications asked for and done since the process started; a waiter waits for the count asked for then.
        private var asked = 0
        private var done = 0
        /// The process that asked: a child made by `fork` inherits the counts but not the thread that drains them.
        private var owner: pid_t = 0

        /// Queues `item`; `true` when no thread drains the queue, so the caller starts one.
        func append(_ item: @escaping @Sendable () -> Void) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            if owner != getpid() {
                // First use, or a child made by `fork`: its parent's queue, and the thread draining it, are not its own.
                (work, draining, asked, done, owner) = ([], false, 0, 0, getpid())
            }
            work.append(item)
            asked += 1
            guard !draining else { return false }
            draining = true
            return true
        }

        func drain() {
            condition.lock()
            while !work.isEmpty {
                let item = work.removeFirst()
                condition.unlock()
                item()
                condition.lock()
                done += 1
                condition.broadcast()
            }
            draining = false
            condition.unlock()
        }

        func waitForTicket() {
            condition.lock()
            defer { condition.unlock() }
            guard owner == getpid() else { return }
            let ticket = asked
            while done < ticket { condition.wait() }
        }
    }
}

import Foundation

/// Work run off the caller's thread, on threads of the library's own, for background work (delivering a watched set's
/// events, checking a set when its watch begins, stopping an idle watcher, writing schema files): on Linux, once a process has
/// used a dispatch queue or a task, libdispatch wakes it every second for as long as it runs. These threads wait
/// without a timer: each item goes to a waiting thread, or a new one when none waits (so an item never waits behind
/// another, and a stuck one delays only itself), and a thread that finds no work for ``idleLifetime`` seconds ends.
enum Detached {
    /// How long a thread waits for more work before it ends.
    static let idleLifetime: TimeInterval = 5

    /// Runs `work` on one of the library's threads, after `delay` seconds when given.
    static func run(after delay: TimeInterval = 0, _ work: @escaping @Sendable () -> Void) {
        guard delay > 0 else { return pool.submit(work) }
        pool.submit {
            Thread.sleep(forTimeInterval: delay)
            work()
        }
    }

    private static let pool = Pool()

    /// The threads and the work waiting for them.
    private final class Pool: @unchecked Sendable {  // every `var` is only touched holding `condition`'s lock
        private let condition = NSCondition()
        private var work: [@Sendable () -> Void] = []
        /// Threads waiting for work, and how many of them an item has been handed to.
        private var waiting = 0
        private var handed = 0

        func submit(_ item: @escaping @Sendable () -> Void) {
            condition.lock()
            work.append(item)
            let wakes = waiting > handed
            if wakes {
                handed += 1
                condition.signal()
            }
            condition.unlock()
            if !wakes {
                let thread = Thread { self.serve() }
                thread.name = "PersistentPrefs"
                thread.start()
            }
        }

        /// A thread's life: runs the work there is, waits for more, ends when none comes in time.
        private func serve() {
            condition.lock()
            while true {
                if !work.isEmpty {
                    let item = work.removeFirst()
                    condition.unlock()
                    item()
                    condition.lock()
                    continue
                }
                waiting += 1
                let deadline = Date(timeIntervalSinceNow: Detached.idleLifetime)
                while handed == 0, condition.wait(until: deadline) {}
                waiting -= 1
                if handed > 0 {
                    handed -= 1  // woken for an item (or a later one took it: look again)
                    continue
                }
                // Timed out, and no item was handed to a waiting thread meanwhile.
                condition.unlock()
                return
            }
        }
    }
}

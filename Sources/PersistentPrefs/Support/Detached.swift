import Foundation

/// Work run off the caller's thread on a thread of its own, which ends with the work.
///
/// Used where the library works in the background for a set that is only being watched
/// (delivering a watcher's events, checking a set when its watch begins, stopping an idle
/// watcher): on Linux, once a process has used a dispatch queue or a task, libdispatch's worker
/// pool wakes the process every second for as long as it runs, so an idle process that watches
/// sets would never be idle. A thread that has ended wakes nothing. Starting one costs tens of
/// microseconds, paid once per burst of events.
enum Detached {
    /// Runs `work` on a new thread, after `delay` seconds when given.
    static func run(after delay: TimeInterval = 0, _ work: @escaping @Sendable () -> Void) {
        let thread = Thread {
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            work()
        }
        thread.name = "PersistentPrefs"
        thread.start()
    }
}

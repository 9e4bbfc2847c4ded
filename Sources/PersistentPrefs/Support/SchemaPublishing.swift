import Foundation

/// The schema files being written off the writers' threads (see ``SetStorage/publish(_:classID:root:)``). Whatever
/// shows a schema file to its reader waits for them: the public properties and methods that name or read a schema file,
/// ``PersistentPrefs/synchronize()``, and a normal exit of the process.
enum SchemaPublishing {
    private static let pending = Pending()
    private static let waitsAtExit: Void = { atexit { SchemaPublishing.waitForAll() } }()

    /// Runs `work` on one of the library's threads (``waitForAll()`` waits for it), or at once when `inline`: a
    /// program that writes once and exits would wait for it at exit anyway, and starts no thread for it.
    static func run(inline: Bool = false, _ work: @escaping @Sendable () -> Void) {
        guard !inline else { return work() }
        _ = waitsAtExit
        pending.change(by: 1)
        Detached.run {
            work()
            pending.change(by: -1)
        }
    }

    /// Returns once every schema file started so far is written (or left out).
    static func waitForAll() {
        pending.waitForNone()
    }

    private final class Pending: @unchecked Sendable {  // `count` is only touched holding `condition`'s lock
        private let condition = NSCondition()
        private var count = 0

        func change(by delta: Int) {
            condition.lock()
            count += delta
            if count == 0 { condition.broadcast() }
            condition.unlock()
        }

        func waitForNone() {
            condition.lock()
            while count > 0 { condition.wait() }
            condition.unlock()
        }
    }
}

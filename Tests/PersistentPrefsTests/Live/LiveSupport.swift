import Foundation
import PersistentPrefs

/// A set with three keys of different kinds, for the observation tests.
final class LivePrefs: PersistentPrefs {
    @Pref("A") var a = 0
    @Pref("B") var b = ""
    @Pref("C") var c: [String] = []
    @Pref("Integer Value") var int = 12345
}

/// Events as a handler receives them, and values read at that moment, collected thread-safely.
final class EventLog: @unchecked Sendable {  // `entries` is only touched while holding `lock`
    private let lock = NSLock()
    private var entries: [PrefsChangeEvent] = []
    private var readings: [Int] = []

    /// Records an event (and optionally a value read in the handler).
    func append(_ event: PrefsChangeEvent, reading: Int? = nil) {
        lock.lock()
        defer { lock.unlock() }
        entries.append(event)
        if let reading { readings.append(reading) }
    }

    var events: [PrefsChangeEvent] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }

    var values: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return readings
    }

    /// The keys of every event, in order.
    var keys: [Set<String>] { events.map(\.keys) }

    /// Waits up to `timeout` seconds for `condition`; returns whether it came true.
    @discardableResult
    func wait(timeout: TimeInterval = 5, until condition: (EventLog) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(self) { return true }
            usleep(2_000)
        }
        return condition(self)
    }
}

/// A flag set from any thread.
final class Flag: @unchecked Sendable {  // `value` is only touched while holding `lock`
    private let lock = NSLock()
    private var value = false
    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    /// Waits up to `timeout` seconds for the flag; returns whether it is set.
    @discardableResult
    func wait(timeout: TimeInterval = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !isSet && Date() < deadline { usleep(2_000) }
        return isSet
    }
}

extension TestSuite {
    /// A child-process runner whose suites are this process's suites (same config folder).
    var sharedChild: ChildProcess {
        ChildProcess(configHome: (path as NSString).deletingLastPathComponent)
    }
}

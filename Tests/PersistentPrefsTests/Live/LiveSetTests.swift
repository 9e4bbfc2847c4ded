import Foundation
import Observation
@testable import PersistentPrefs
import Testing

/// Live sets across real processes: another process writes (through the library, through plain
/// `UserDefaults`, into a `PlistFileStore` folder, or removes the file), and this process's
/// instance and observers see it without `flush()`.
@Suite("Live sets: other processes' changes are seen and observed", waitLimit)
struct LiveSetTests {
    private static let key = "Integer Value"

    /// Observes `prefs`, recording each event with the value of "Integer Value" read in the handler.
    private func observe(_ prefs: LivePrefs, store: any PrefsStore, _ log: EventLog) -> PrefsObservation {
        let root = prefs.key
        return prefs.observeChanges(to: [Self.key]) { event in
            log.append(event, reading: LivePrefs(key: root, store: store).int)
        }
    }

    @Test(
        "a write by another process is observed and read without flush()", .linuxSuiteFiles,
        arguments: ["library", "plain UserDefaults"])
    func otherProcessWrites(writer: String) throws {
        let suite = TestSuite("live-\(writer)")
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.b = "before"  // the set exists and is loaded
        let log = EventLog()
        let observation = observe(prefs, store: suite.store, log)
        defer { observation.cancel() }

        let command = writer == "library" ? "put-int" : "plain-put-int"
        let run = try suite.sharedChild.run("prefs-test-helper", [command, suite.name, "Root", "4242"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(log.wait { $0.values.last == 4242 }, "events: \(log.events)")
        #expect(log.events.allSatisfy { $0.keys.contains(Self.key) && $0.root == "Root" })
        #expect(prefs.int == 4242)  // no flush()
        #expect(prefs.b == "before")
    }

    @Test("a write into a PlistFileStore folder by another process, and a folder created later")
    func plistFileStore() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let folder = directory.path + "/created/later"
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder))
        let prefs = LivePrefs(key: "Root", store: store)
        #expect(prefs.int == 12345)
        let log = EventLog()
        let observation = observe(prefs, store: store, log)
        defer { observation.cancel() }
        let (child, home) = ChildProcess.inTemporaryConfigHome()
        defer { home.remove() }
        for value in [7, 8] {
            let run = try child.run("prefs-test-helper", ["put-int", folder, "Root", "\(value)"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(log.wait { $0.values.last == value }, "events: \(log.events)")
            #expect(prefs.int == value)
        }
    }

    @Test("a deleted suite file reads as empty and is observed; a replaced one is read again", .linuxSuiteFiles)
    func deletedAndReplacedFile() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.int = 5
        prefs.a = 1
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }

        try FileManager.default.removeItem(atPath: suite.path)
        #expect(log.wait { $0.keys.last == [Self.key, "A"] }, "events: \(log.events)")
        #expect(prefs.values.isEmpty)
        #expect(prefs.int == 12345)

        // Replaced by a file written elsewhere (as a backup restore would).
        let replacement = ["Root": ["A": 2]] as NSDictionary
        let data = try PropertyListSerialization.data(fromPropertyList: replacement, format: .xml, options: 0)
        let temporary = suite.path + ".restore"
        try data.write(to: URL(fileURLWithPath: temporary))
        #expect(rename(temporary, suite.path) == 0)
        #expect(log.wait { $0.keys.last == ["A"] }, "events: \(log.events)")
        #expect(prefs.a == 2)
    }

    @Test("a damaged file written by someone else is moved aside and reported; the watcher survives", .linuxSuiteFiles)
    func damagedFile() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.a = 1
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }
        try Data("<?xml version=\"1.0\"?><plist><dict><key>Root".utf8).write(to: URL(fileURLWithPath: suite.path))
        #expect(log.wait { $0.keys.last == ["A"] }, "events: \(log.events)")
        #expect(prefs.a == 0)
        guard case .corruptStore? = prefs.lastError else {
            Issue.record("expected corruptStore, got \(String(describing: prefs.lastError))")
            return
        }
        // Still watching: the next outside change is heard as well.
        let run = try suite.sharedChild.run("prefs-test-helper", ["put-int", suite.name, "Root", "77"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(log.wait { $0.keys.last?.contains(Self.key) == true })
        #expect(prefs.int == 77)
    }

    @Test("1,000 writes in a burst from another process: the last value observed is the last one written", .linuxSuiteFiles)
    func burst() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.int = 0
        let log = EventLog()
        let observation = observe(prefs, store: suite.store, log)
        defer { observation.cancel() }
        let run = try suite.sharedChild.run("prefs-test-helper", ["burst-int", suite.name, "Root", "1000"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(log.wait(timeout: 2) { $0.values.last == 1000 }, "last observed: \(String(describing: log.values.last))")
        #expect(prefs.int == 1000)
        let seen = log.values
        #expect(seen == seen.sorted(), "events arrive in the order the set changed")
        print("1,000 outside writes in a burst: \(seen.count) events, last value \(seen.last ?? -1)")
    }

    @Test("withObservationTracking hears another process's write to a @Pref key", .linuxSuiteFiles)
    func observationTrackingAcrossProcesses() throws {
        // `withObservationTracking` needs macOS 14 (the package supports macOS 12).
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.int = 1
        let fired = Flag()
        withObservationTracking {
            _ = prefs.int
        } onChange: {
            fired.set()
        }
        let run = try suite.sharedChild.run("prefs-test-helper", ["put-int", suite.name, "Root", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(fired.wait())
        #expect(prefs.int == 2)
    }

    @Test("an observer in another process hears this process's writes", .linuxSuiteFiles)
    func observerInAnotherProcess() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = LivePrefs(key: "Root", store: suite.store)
        prefs.int = 1
        let watcher = try suite.sharedChild.process("prefs-test-helper", ["watch-int", suite.name, "Root"])
        let out = Pipe()
        watcher.standardOutput = out
        try watcher.run()
        defer {
            // SIGKILL: a child started from a test thread inherits its blocked signals.
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
        }
        let lines = LineReader(out.fileHandleForReading)
        #expect(lines.next(timeout: 10) == "ready")
        for value in [10, 11, 12] {
            prefs.int = value
            #expect(lines.next(timeout: 5) == "\(value)")
        }
    }
}

/// Reads lines from a pipe with a timeout.
final class LineReader: @unchecked Sendable {  // `buffer` is only touched while holding `lock`
    private let lock = NSCondition()
    private var buffer = ""
    private var lines: [String] = []

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [self] handle in
            let data = handle.availableData
            lock.lock()
            defer { lock.unlock() }
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            buffer += String(decoding: data, as: UTF8.self)
            while let newline = buffer.firstIndex(of: "\n") {
                lines.append(String(buffer[..<newline]))
                buffer = String(buffer[buffer.index(after: newline)...])
            }
            lock.broadcast()
        }
    }

    /// The next line, or `nil` when none arrived within `timeout` seconds.
    func next(timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while lines.isEmpty {
            if !lock.wait(until: deadline) { return nil }
        }
        return lines.removeFirst()
    }
}

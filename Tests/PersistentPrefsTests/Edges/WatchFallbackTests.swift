import Foundation
@testable import PersistentPrefs
import PersistentPrefsSample
import Testing

/// When the operating system cannot watch files (every `inotify` instance of the user in use),
/// sets still become current (the watcher polls) and the degradation is visible; the watcher
/// tries `inotify` again and recovers.
@Suite("Edges: no inotify", waitLimit)
struct WatchFallbackTests {
    #if os(Linux)
        static let isLinux = true
    #else
        static let isLinux = false
    #endif

    /// A backend factory that fails until `allow()`, then makes the platform's backend.
    final class FlakyBackend: @unchecked Sendable {  // `allowed` and `tries` are only touched while holding `lock`
        private let lock = NSLock()
        private var allowed = false
        private var tries = 0

        var attempts: Int {
            lock.lock()
            defer { lock.unlock() }
            return tries
        }

        func allow() {
            lock.lock()
            allowed = true
            lock.unlock()
        }

        var factory: ChangeWatcher.BackendFactory {
            { report in
                self.lock.lock()
                self.tries += 1
                let allowed = self.allowed
                self.lock.unlock()
                guard allowed else { throw BackendUnavailable(reason: "inotify_init1 failed: Too many open files (test)") }
                return try ChangeWatcher.platformBackend(report)
            }
        }
    }

    @Test("without a backend the watcher polls: changes are heard, the degradation is named, and the backend is tried again until it works")
    func pollsThenRecovers() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let flaky = FlakyBackend()
        let watcher = ChangeWatcher(linger: 0.1, pollInterval: 0.05, retryInterval: 0.5, makeBackend: flaky.factory)
        let file = URL(fileURLWithPath: directory.path + "/set.plist")
        let heard = EventLog()
        let token = watcher.watch(file) { heard.append(PrefsChangeEvent(root: "set", keys: ["file"])) }
        defer { watcher.unwatch(token) }
        let reason = try #require(watcher.degradation(for: file))
        #expect(reason.contains("Too many open files (test)") && reason.contains("looks at the file every 0.05 s"), "\(reason)")
        #expect(watcher.degradation(for: URL(fileURLWithPath: "/elsewhere/x.plist")) == nil)

        // Created, rewritten in place (same size, as plain UserDefaults does), replaced, removed: each is heard.
        try Data("one".utf8).write(to: file)
        #expect(heard.wait(timeout: 10) { $0.events.count >= 1 })
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: Data("two".utf8))
        try handle.close()
        #expect(heard.wait(timeout: 10) { $0.events.count >= 2 })
        try Data("three!".utf8).write(to: file, options: .atomic)
        #expect(heard.wait(timeout: 10) { $0.events.count >= 3 })
        try FileManager.default.removeItem(at: file)
        #expect(heard.wait(timeout: 10) { $0.events.count >= 4 })
        let retried = Date().addingTimeInterval(10)
        while flaky.attempts < 3 && Date() < retried { usleep(10_000) }
        #expect(flaky.attempts >= 3, "the backend was not tried again")
        #expect(watcher.degradation(for: file) != nil, "still degraded while the backend fails")

        flaky.allow()
        let recovered = Date().addingTimeInterval(10)
        while watcher.degradation(for: file) != nil && Date() < recovered { usleep(10_000) }
        #expect(watcher.degradation(for: file) == nil, "the watcher never recovered")
        let before = heard.events.count
        try Data("four".utf8).write(to: file, options: .atomic)
        #expect(heard.wait(timeout: 10) { $0.events.count > before }, "a change after recovery was not heard")
    }

    @Test("a listener that never returns delays no other listener")
    func stuckListener() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let watcher = ChangeWatcher(linger: 0.1)
        let release = DispatchSemaphore(value: 0)
        let stuckCalled = Flag()
        let other = Flag()
        let stuck = watcher.watch(URL(fileURLWithPath: directory.path + "/a.plist")) {
            stuckCalled.set()
            release.wait()
        }
        let fine = watcher.watch(URL(fileURLWithPath: directory.path + "/b.plist")) { other.set() }
        defer {
            release.signal()
            watcher.unwatch(stuck)
            watcher.unwatch(fine)
        }
        try Data("a".utf8).write(to: URL(fileURLWithPath: directory.path + "/a.plist"))
        #expect(stuckCalled.wait(timeout: 10))
        try Data("b".utf8).write(to: URL(fileURLWithPath: directory.path + "/b.plist"))
        #expect(other.wait(timeout: 10), "the second listener waited for the first")
    }

    /// Every inotify instance of one user held by one process, a set watched by another process
    /// of that user, changed by a third. Runs as the user nobody (root only), so the instances
    /// this test runner and the tests beside it use are not touched.
    @Test(
        "with every inotify instance held by another process, an observer still hears changes and reports the degradation; it recovers when they are freed",
        .enabled(if: Self.isLinux && geteuid() == 0, "needs Linux, and root to exhaust another user's inotify instances instead of the test runner's"))
    func instancesExhausted() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(chown(directory.path, 65534, 65534) == 0)
        let store = directory.path + "/store"  // a folder of its own: the suites' folder is no PlistFileStore's
        var environment = ProcessInfo.processInfo.environment
        environment["PREFS_HELPER_AS_NOBODY"] = "1"
        environment["XDG_CONFIG_HOME"] = directory.path
        func helper(_ arguments: [String]) throws -> (Process, LineReader) {
            let process = Process()
            process.executableURL = try ChildProcess.executable("prefs-test-helper")
            process.arguments = arguments
            process.environment = environment
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, LineReader(out.fileHandleForReading))
        }
        func put(_ value: Int) throws {
            let (process, lines) = try helper(["put-int", store, "R", "\(value)"])
            #expect(lines.next(timeout: 20) == "done")
            process.waitUntilExit()
        }
        try put(1)
        let (holder, held) = try helper(["hold-inotify", "-", "-"])
        var holderRunning = true
        defer { if holderRunning { kill(holder.processIdentifier, SIGKILL) } }
        let count = try #require(held.next(timeout: 20))
        #expect(count.hasPrefix("held "), "\(count)")
        let (watcher, events) = try helper(["watch-report", store, "R"])
        defer { kill(watcher.processIdentifier, SIGKILL) }
        let ready = try #require(events.next(timeout: 20))
        #expect(ready.hasPrefix("ready ") && ready.contains("not reported at once") && ready.contains("inotify_init1 failed"), "\(ready)")
        #expect(events.next(timeout: 10) == "problems 1 lastError watchDegraded")

        try put(2)
        let degraded = try #require(events.next(timeout: 10), "the change never reached the observer")
        #expect(degraded.hasPrefix("int 2 ") && degraded.contains("inotify_init1 failed"), "\(degraded)")

        // The instances come free: at its next retry (every 5 s) the watcher is inotify again.
        // Each write is reported; write until one is reported live, instead of betting on a
        // sleep longer than the retry interval.
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        holderRunning = false
        let giveUp = Date().addingTimeInterval(40)
        var value = 3
        var report: String?
        while true {
            try put(value)
            report = events.next(timeout: 10)
            // Heard, but still by polling: the retry has not come yet.
            guard let line = report, line.hasPrefix("int \(value) "), line != "int \(value) live", Date() < giveUp else { break }
            usleep(250_000)
            value += 1
        }
        #expect(report == "int \(value) live", "\(report ?? "no event")")
    }
}

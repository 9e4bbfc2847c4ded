import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// A process stopped (SIGSTOP, a debugger) while it holds a store file's writers' lock: reads
/// never wait for it, writes give up after `PersistentPrefs.lockTimeout` naming the file and the
/// holder, and observers of other sets in the waiting process keep hearing their changes.
@Suite("Edges: a stopped lock holder", waitLimit)
struct StoppedWriterTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case suite, plistFile
        var testDescription: String { rawValue }

        /// The stores whose lock this test can hold from a helper process: a suite only where
        /// it is the library's own file under its own lock (Linux).
        static let here: [Store] = suitesAreLibraryFiles ? allCases : [.plistFile]
    }

    /// A store with the set "R" at int 1, the store's file, and the argument a helper process
    /// needs for the same store (a suite name in the same config folder, or the directory).
    static func makeStore(_ kind: Store, directory: TemporaryDirectory) throws -> (any PrefsStore, String, String) {
        switch kind {
        case .suite:
            let name = "StoppedWriter-\(UUID().uuidString)"
            let store = try #require(UserDefaultsStore(suiteName: name))
            return (store, TestSuite.path(ofSuite: name), name)
        case .plistFile:
            let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
            return (store, try store.fileURL(forRoot: "R").path, directory.path)
        }
    }

    @Test("reads never wait for the stopped holder; a write in another process gives up within its bound, naming the file and the holder",
          arguments: Store.here)
    func readsAndWrites(kind: Store) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (store, file, argument) = try Self.makeStore(kind, directory: directory)
        defer { TestSuite.removeFiles(of: file) }
        do {
            let writer = SamplePrefs(key: "R", store: store)
            writer.int = 1
            try #require(writer.lastError == nil)
        }  // no instance left: the next one reads the store afresh
        // A suite's process shares this process's suites; a store's process has suites of its own
        // (the store folder is no suites' folder).
        let child = ChildProcess(configHome: kind == .suite ? (file as NSString).deletingLastPathComponent : directory.path + "/config")
        let holder = try StoppedLockHolder(file, child: child)
        defer { holder.end() }

        // A fresh set (not cached in this process) and a fresh process both read at once.
        let read = finishing(within: 20) { SamplePrefs(key: "R", store: store).int }
        #expect(read == 1, "the read waited for the stopped writer")
        let childRead = finishing(within: 20) { try? child.run("prefs-test-helper", ["get-int", argument, "R"]).stdout }
        #expect(childRead??.trimmingCharacters(in: .whitespacesAndNewlines) == "1")

        // A write in another process with a 1 s bound: it ends, refused, naming file and holder.
        let started = Date()
        let output = finishing(within: 30) { try? child.run("prefs-test-helper", ["put-int-within", argument, "R", "2", "1"]).stdout }
        let elapsed = Date().timeIntervalSince(started)
        let line = try #require(output ?? nil, "the write did not give up")
        #expect(line.hasPrefix("error Gave up writing \(file)"), "\(line)")
        #expect(line.contains("process \(holder.pid) holds it"), "\(line)")
        #expect(elapsed >= 1, "it gave up before its bound: \(elapsed) s")
        #expect(try store.load(root: "R")?[SamplePrefs.Key.int.rawValue] as? Int == 1, "nothing was written")
    }

    @Test("in this process: the write's error names the file, the holder and the wait; the set is unchanged; after the holder goes, writes work")
    func inProcessTimeout() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = SamplePrefs(key: "R", store: store)
        prefs.int = 1
        let file = try store.fileURL(forRoot: "R").path
        let holder = try StoppedLockHolder(file, child: ChildProcess(configHome: directory.path))
        let outcome = finishing(within: 30) { () -> PersistentPrefs.PrefsError? in
            prefs.int = 2
            return prefs.lastError
        }
        guard case .lockTimeout(let path, let pid, let waited)?? = outcome else {
            holder.end()
            Issue.record("expected lockTimeout, got \(String(describing: outcome))")
            return
        }
        #expect(path == file)
        #expect(pid == holder.pid)
        #expect(waited >= PersistentPrefs.lockTimeout)
        #expect(prefs.int == 1)
        holder.end()
        prefs.int = 3
        #expect(prefs.lastError == nil)
        #expect(try store.load(root: "R")?[SamplePrefs.Key.int.rawValue] as? Int == 3)
    }

    @Test("while a write and a reload of one set wait for a stopped holder, another set's observer hears its changes")
    func unrelatedObserversKeepHearing() throws {
        let stuckDirectory = TemporaryDirectory()
        let liveDirectory = TemporaryDirectory()
        defer {
            stuckDirectory.remove()
            liveDirectory.remove()
        }
        let stuckStore = PlistFileStore(directory: URL(fileURLWithPath: stuckDirectory.path))
        let liveStore = PlistFileStore(directory: URL(fileURLWithPath: liveDirectory.path))
        nonisolated(unsafe) let stuck = SamplePrefs(key: "R", store: stuckStore)
        stuck.int = 1
        let live = LivePrefs(key: "R", store: liveStore)
        live.int = 1
        let heard = EventLog()
        let observation = live.observeChanges { heard.append($0) }
        defer { observation.cancel() }
        let stuckFile = try stuckStore.fileURL(forRoot: "R").path
        let holder = try StoppedLockHolder(stuckFile, child: ChildProcess(configHome: stuckDirectory.path))
        defer { holder.end() }

        // A write of the stuck set waits for the lock (up to the 5 s default) on a thread of its own.
        let writeEnded = Flag()
        Thread {
            stuck.int = 2
            writeEnded.set()
        }.start()
        Thread.sleep(forTimeInterval: 0.2)
        // Someone outside the library replaces the stuck set's file: its reload queues behind the write.
        let replaced = try PropertyListSerialization.data(
            fromPropertyList: [SamplePrefs.Key.int.rawValue: 7], format: .binary, options: 0)
        try replaced.write(to: URL(fileURLWithPath: stuckFile), options: .atomic)
        // Another process writes the live set: its observer must hear it while the write still waits.
        let put = try ChildProcess(configHome: liveDirectory.path + "/config").run(
            "prefs-test-helper", ["put-int", liveDirectory.path, "R", "5"])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(heard.wait(timeout: 10) { $0.keys.contains(["Integer Value"]) }, "the live set's observer heard nothing")
        #expect(!writeEnded.isSet, "the stuck write ended before the live set's event (the test proves nothing then)")
        #expect(live.int == 5)
        #expect(writeEnded.wait(timeout: 30), "the stuck write never gave up")
    }
}

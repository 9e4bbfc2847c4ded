import Foundation
@testable import PersistentPrefs
import Testing

/// What a short-lived program pays: making an instance and writing start no watcher, the first
/// read does (checking the store for what changed meanwhile), and a schema whose default is the
/// moment an instance was made is not rewritten by every process.
@Suite("One-shot programs: no watcher, no schema rewrite; reads stay live", waitLimit)
struct OneShotTests {
    @Test("a set starts watching when it is first used: another process's write reaches it before its first read")
    func watchStartsWithTheInstance() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = LivePrefs(key: "Root", store: store)
        prefs.int = 1
        let sharedSet = try #require(SharedSet.existing(storeIdentifier: store.identifier, root: "Root"))
        #expect(sharedSet.isWatching)
        let (child, home) = ChildProcess.inTemporaryConfigHome()
        defer { home.remove() }
        let run = try child.run("prefs-test-helper", ["put-int", directory.path, "Root", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        // No read in between: the watch, not a read, brings the change in.
        let deadline = Date().addingTimeInterval(10)
        while (try? sharedSet.value(forKey: "Integer Value")) as? Int != 2, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(prefs.int == 2)  // the very first read after the write: no flush(), no observer
    }

    @Test("where sets are not watched (a one-shot program), writes and reads start no watch; observing the set starts it", .linuxSuiteFiles)
    func oneShotScopeStartsNoWatch() throws {
        let suite = TestSuite("oneshot-read")
        defer { suite.remove() }
        try PersistentPrefs.$watchesSets.withValue(false) {
            let prefs = LivePrefs(key: "Root", store: suite.store)
            prefs.int = 7
            let sharedSet = try #require(SharedSet.existing(storeIdentifier: suite.store.identifier, root: "Root"))
            #expect(prefs.int == 7)
            #expect(prefs.values["Integer Value"] as? Int == 7)
            #expect(!sharedSet.isWatching)
            let observation = prefs.observeChanges { _ in }
            defer { observation.cancel() }
            #expect(sharedSet.isWatching)
        }
    }

    @Test("a one-shot process that writes a set and exits opens no inotify descriptor and no thread", .linuxSuiteFiles)
    func oneShotProcessStartsNothing() throws {
        let (child, home) = ChildProcess.inTemporaryConfigHome()
        defer { home.remove() }
        for value in [1, 2] {  // a new set, then one that exists
            let run = try child.run("prefs-test-helper", ["put-int-watchers", "oneshot", "Root", "\(value)"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "inotify=0 threads=1\n")
        }
        let read = try child.run("prefs-test-helper", ["get-int", "oneshot", "Root"])
        #expect(read.stdout == "2\n")
    }

    @Test("a schema whose date default is the moment of use is not rewritten by the next process", .linuxSuiteFiles)
    func dateDefaultDoesNotRewriteSchema() throws {
        let (child, home) = ChildProcess.inTemporaryConfigHome()
        defer { home.remove() }
        let first = try child.run("prefs-harness", ["--suite", "s", "--key", "Main", "--sample", "set", "int", "1"])
        #expect(first.status == 0, "\(first.stderr)")
        let folder = home.path + "/s.schemas"
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".json") })
        let path = folder + "/" + name
        func signature() throws -> (inode: UInt64, modified: Int, bytes: Data) {
            var info = stat()
            #expect(stat(path, &info) == 0)
            #if canImport(Darwin)
                let modified = info.st_mtimespec
            #else
                let modified = info.st_mtim
            #endif
            return (UInt64(info.st_ino), modified.tv_sec * 1_000_000_000 + modified.tv_nsec, try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        let before = try signature()
        Thread.sleep(forTimeInterval: 0.02)  // a rewrite would show in the time too
        let second = try child.run("prefs-harness", ["--suite", "s", "--key", "Main", "--sample", "set", "int", "2"])
        #expect(second.status == 0, "\(second.stderr)")
        let after = try signature()
        #expect(after.inode == before.inode)
        #expect(after.modified == before.modified)
        #expect(after.bytes == before.bytes)
        // The date key is described without its per-process default; the others keep theirs.
        let object = try #require(try JSONSerialization.jsonObject(with: after.bytes) as? [String: Any])
        let keys = try #require(object["keys"] as? [String: [String: Any]])
        #expect(keys["Date Value"]?["kind"] as? String == "date")
        #expect(keys["Date Value"]?["default"] == nil)
        #expect(keys["Integer Value"]?["default"] as? Int == 12345)
        // The harness still knows the file as the sample's own schema.
        let describe = try child.run("prefs-harness", ["--suite", "s", "--key", "Main", "--sample", "set", "int", "3"])
        #expect(describe.status == 0, "\(describe.stderr)")
    }

    @Test("a published schema leaves out a date default made while the process runs, and keeps a fixed one")
    func publishedDateDefaults() {
        let now = PrefsSchema.Key(name: "When", type: "Date", kind: "date", defaultValue: Date(), summary: "made now")
        #expect(now.published.defaultValue == nil)
        #expect(now.published.summary == "made now")
        #expect(now.published.kind == "date")
        let fixed = Date(timeIntervalSinceReferenceDate: 0)
        let constant = PrefsSchema.Key(name: "Epoch", type: "Date", kind: "date", defaultValue: fixed)
        #expect(constant.published.defaultValue as? Date == fixed)
        let future = PrefsSchema.Key(name: "Until", type: "Date", kind: "date", defaultValue: Date.distantFuture)
        #expect(future.published.defaultValue as? Date == Date.distantFuture)
        let number = PrefsSchema.Key(name: "Volume", type: "Int", kind: "integer", defaultValue: 5)
        #expect(number.published.defaultValue as? Int == 5)
    }
}

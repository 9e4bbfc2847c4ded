import Foundation
@testable import PersistentPrefs
import Testing

@testable import PersistentPrefsSync

@Suite("PrefsSync: crashes, damage and changes of mind")
struct PrefsSyncRecoveryTests {
    @Test("a device file older than the record says (a crash after keeping the record, an engine putting an old copy back) is written again")
    func olderOwnFileWrittenAgain() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B")
        defer { a.remove(); b.remove() }
        a.prefs["Volume"] = 1
        try a.sync.start(a.prefs, suite: "com.example.synced")
        let old = try Data(contentsOf: a.file)
        a.prefs["Volume"] = 2
        try a.sync.syncNow()
        try old.write(to: a.file)  // the state a crash after `keep` and before `write` leaves
        try a.sync.syncNow()
        try a.sync.syncNow()
        try b.sync.start(b.prefs, suite: "com.example.synced")
        let isNew = String(decoding: try Data(contentsOf: a.file), as: UTF8.self).contains("<integer>2</integer>")
        #expect(b.prefs["Volume"] as? Int == 2, "A's change never reaches B: A's file is \(isNew ? "new" : "old")")
    }

    @Test("a key a device's program makes device-local is no longer published, and not reset on the other devices")
    func keyBecomingLocal() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B")
        defer { a.remove(); b.remove() }
        try a.prefs.setValues(["Volume": 1, "Window Frame": "a-frame"])
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try b.sync.start(b.prefs, suite: "com.example.synced")
        #expect(b.prefs["Window Frame"] as? String == "a-frame")
        b.prefs["Window Frame"] = "b-frame"
        try b.sync.syncNow()
        try a.sync.syncNow()
        // A's next version of the program keeps the key home.
        a.sync.stop()
        let a2 = try a.anotherProcess()
        try a2.start(a.prefs, suite: "com.example.synced", localKeys: ["Window Frame"])
        #expect(try a2.syncNow().warnings.isEmpty, "its own file, rewritten without the key, is no clone's")
        #expect(!String(decoding: try Data(contentsOf: a.file), as: UTF8.self).contains("Window Frame"))
        try b.sync.syncNow()
        #expect(b.prefs["Window Frame"] as? String == "b-frame", "B's own value was reset by A making the key local")
    }

    @Test("another process of the device that names no device-local keys (prefs-harness) keeps the program's home")
    func localKeysKeptForOtherProcesses() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B")
        defer { a.remove(); b.remove() }
        try b.prefs.setValues(["Window Frame": "b-frame"])
        try b.sync.start(b.prefs, suite: "com.example.synced")
        try a.prefs.setValues(["Volume": 1, "Window Frame": "a-frame"])
        try a.sync.start(a.prefs, suite: "com.example.synced", localKeys: ["Window Frame"])
        let harness = try a.anotherProcess()
        try harness.start(a.prefs, suite: "com.example.synced")
        let text = String(decoding: try Data(contentsOf: a.file), as: UTF8.self)
        #expect(!text.contains("Window Frame"), "the harness published A's device-local key")
        try b.sync.syncNow()
        #expect(b.prefs["Window Frame"] as? String == "b-frame", "B's value overwritten by A's device-local value")
        // And the app's next pass then publishes a reset of it.
        try a.sync.syncNow()
        try b.sync.syncNow()
        #expect(b.prefs["Window Frame"] as? String == "b-frame", "B's value reset by the app's next pass: \(String(describing: b.prefs["Window Frame"]))")
    }

    @Test("a record rebuilt from the device's file keeps refusing what the device refused, and publishes none of it")
    func rebuiltRecordKeepsRefusals() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B", StricterSyncedPrefs.self)
        defer { a.remove(); b.remove() }
        b.prefs["Volume"] = 4
        try b.sync.start(b.prefs, suite: "com.example.synced")
        try a.sync.start(a.prefs, suite: "com.example.synced")
        a.prefs["Volume"] = 50
        try a.sync.syncNow()
        #expect(try b.sync.syncNow().refused.map(\.key) == ["Volume"])
        let record = try DeviceState(syncFolder: stage.folder, root: b.stateFolder).recordFile(suite: "com.example.synced", root: "Main")
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: record))
        let report = try b.sync.syncNow()  // B's user changed nothing
        #expect(report.refused.map(\.key) == ["Volume"], "after the rebuild: \(report)")
        try a.sync.syncNow()
        #expect(a.prefs["Volume"] as? Int == 50, "A's value replaced by B's held value: \(String(describing: a.prefs["Volume"]))")
    }

    @Test("a device file stamped beyond what a clock makes, or far ahead of this device's clock, is skipped and named; clocks stay put")
    func stampsOutOfBounds() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        defer { a.remove() }
        a.prefs["Volume"] = 1
        try a.sync.start(a.prefs, suite: "com.example.synced")
        let files = SyncFolder(url: stage.folder)
        let setFolder = try files.setFolder(suite: "com.example.synced", root: "Main")
        var huge = DeviceLog<SyncValue>(device: "HUGE")
        huge.published = SyncStamp(wall: 4_102_444_800_000, counter: Int64.max, device: "HUGE")
        huge.entries["Name"] = SyncEntry(value: .string("x"), stamp: huge.published)
        try files.write(huge, in: setFolder)
        var ahead = DeviceLog<SyncValue>(device: "AHEAD")
        ahead.published = SyncStamp(wall: 4_102_444_800_000, counter: 0, device: "AHEAD")  // 2100
        ahead.entries["Theme"] = SyncEntry(value: .string("x"), stamp: ahead.published)
        try files.write(ahead, in: setFolder)

        let report = try a.sync.syncNow()
        let reasons = Dictionary(uniqueKeysWithValues: report.skippedFiles.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        #expect(reasons["HUGE.plist"]?.contains("published stamp") == true, "\(reasons)")
        #expect(reasons["AHEAD.plist"]?.contains("days ahead of this device's clock") == true, "\(reasons)")
        #expect(a.prefs["Name"] == nil && a.prefs["Theme"] == nil)
        a.prefs["Volume"] = 2
        try a.sync.syncNow()
        let published = try #require(try files.scan(setFolder, me: "B", lastWritten: nil).others.first { $0.log.device == "DEVICE-A" })
        #expect(published.log.published.wall < 4_102_444_800_000, "this device's clock did not jump to 2100")
    }
}

/// The set on a device whose newer version refuses `Name` "Ann".
final class NoAnnPrefs: SyncedPrefs {
    override var validators: [String: PrefsValidator] { ["Name": PrefsValidator { ($0 as? String) != "Ann" }] }
}

@Suite("PrefsSync: what a pass applies")
struct PrefsSyncApplyingTests {
    @Test("a merged value a crash kept from the set, that the device now refuses, is reported, not applied, and syncing goes on")
    func pendingNowRefused() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B")
        defer { a.remove(); b.remove() }
        a.prefs["Name"] = "Ann"
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try b.sync.start(b.prefs, suite: "com.example.synced")
        #expect(b.prefs["Name"] as? String == "Ann")
        // The state a crash after writing B's device file and before writing B's set leaves.
        let state = DeviceState(syncFolder: stage.folder, root: b.stateFolder)
        let path = try state.recordFile(suite: "com.example.synced", root: "Main")
        var (record, _) = try state.record(at: path)
        record.record.pending["Name"] = SyncRecord.Pending(before: nil, after: .string("Ann"))
        try state.keep(record, at: path)
        b.prefs["Name"] = nil
        // B's program is updated: it now refuses "Ann".
        let strict = NoAnnPrefs(key: "Main", values: nil, store: b.suite.store)
        let sync = try b.anotherProcess()
        var thrown: (any Error)?
        do { try sync.start(strict, suite: "com.example.synced") } catch { thrown = error }
        #expect(thrown == nil, "the pass threw: \(String(describing: thrown))")
        do { try sync.syncNow() } catch { thrown = error }
        #expect(thrown == nil, "and again: \(String(describing: thrown))")
        #expect(sync.lastReport?.refused.map(\.key) == ["Name"])
        #expect(strict["Name"] == nil)
    }

    @Test("syncNow from an observer that a pass's own write runs is refused at once (it would wait for itself), not a deadlock")
    func syncNowWithinPass() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        let b = try stage.device("B")
        defer { a.remove(); b.remove() }
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try b.sync.start(b.prefs, suite: "com.example.synced")
        let outcomes = Locked<[String]>([])
        let sync = b.sync
        let observation = b.prefs.observeChanges { _ in
            do {
                _ = try sync.syncNow()
                outcomes.withLock { $0.append("synced") }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        defer { observation.cancel() }
        a.prefs["Volume"] = 3
        try a.sync.syncNow()
        let done = DispatchSemaphore(value: 0)
        let bSync = b.sync
        DispatchQueue.global().async {
            _ = try? bSync.syncNow()
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success, "the pass waits for itself")
        #expect(b.prefs["Volume"] as? Int == 3)
        let refusal = "\(PersistentPrefs.PrefsError.transactionInProgress(root: "Main"))"
        #expect(outcomes.withLock { $0 }.contains(refusal), "\(outcomes.withLock { $0 })")
    }

    @Test("the report names only the keys the pass wrote, not one changed on the device during the pass")
    func appliedNamesWrittenKeys() throws {
        let stage = try SyncScene()
        defer { stage.scratch.remove() }
        let a = try stage.device("A")
        defer { a.remove() }
        let suite = TestSuite("RecoveryInterrupted")
        defer { suite.remove() }
        let b = InterruptedSyncedPrefs(key: "Main", values: nil, store: suite.store)
        let sync = try PrefsSync(folder: stage.folder, device: "DEVICE-B", clock: { Date() }, stateFolder: URL(fileURLWithPath: stage.scratch.path + "/state-B"))
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try sync.start(b, suite: "com.example.synced")
        try a.prefs.setValues(["Volume": 2, "Name": "Ann"])
        try a.sync.syncNow()
        InterruptedSyncedPrefs.whileVetting = { b["Volume"] = 99 }
        let report = try sync.syncNow()
        #expect(b["Volume"] as? Int == 99)
        #expect(!report.applied.map(\.key).contains("Volume"), "reported applied: \(report.applied.map(\.key))")
    }
}

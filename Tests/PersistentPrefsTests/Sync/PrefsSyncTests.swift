import Foundation
@testable import PersistentPrefs
import Testing

@testable import PersistentPrefsSync

/// The set two devices sync: `Volume` at most 10 on the device whose class says so.
class SyncedPrefs: PersistentPrefs {
    override var keys: [String] { ["Volume", "Name", "Theme", "Window Frame"] }
}

/// The same set on a device whose version takes `Volume` only up to 10, and knows no `Theme`.
final class StricterSyncedPrefs: SyncedPrefs {
    override var keys: [String] { ["Volume", "Name", "Window Frame"] }
    override var validators: [String: PrefsValidator] { ["Volume": .range(0...10)] }
}

/// A set whose vetting of `Name` runs `whileVetting` once: a change made on the device while a pass is under way.
final class InterruptedSyncedPrefs: SyncedPrefs {
    nonisolated(unsafe) static var whileVetting: (() -> Void)?
    override var validators: [String: PrefsValidator] {
        ["Name": PrefsValidator { _ in
            let interruption = Self.whileVetting
            Self.whileVetting = nil
            interruption?()
            return true
        }]
    }
}

/// One simulated device: a suite of its own (standing for its config folder), its own state folder and identity, and
/// the shared sync folder; every device names the set `com.example.synced`.
struct SyncDevice {
    let name: String
    let folder: URL
    let suite: TestSuite
    let prefs: SyncedPrefs
    let sync: PrefsSync
    let stateFolder: URL
    private let identity: String?

    init(_ name: String, folder: URL, scratch: String, kind: SyncedPrefs.Type, identity: String??) throws {
        self.name = name
        self.folder = folder
        suite = TestSuite("Sync\(name)")
        switch kind {
        case is StricterSyncedPrefs.Type: prefs = StricterSyncedPrefs(key: "Main", values: nil, store: suite.store)
        case is InterruptedSyncedPrefs.Type: prefs = InterruptedSyncedPrefs(key: "Main", values: nil, store: suite.store)
        default: prefs = SyncedPrefs(key: "Main", values: nil, store: suite.store)
        }
        stateFolder = URL(fileURLWithPath: scratch + "/state-\(name)")
        self.identity = identity ?? "DEVICE-\(name)"
        sync = try PrefsSync(folder: folder, device: self.identity, clock: { Date() }, stateFolder: stateFolder)
    }

    /// Another process of the same device: the same state folder and identity.
    func anotherProcess() throws -> PrefsSync {
        try PrefsSync(folder: folder, device: identity, clock: { Date() }, stateFolder: stateFolder)
    }

    /// The device's file in the sync folder (for a device given its identity).
    var file: URL { folder.appendingPathComponent("\(syncedSet)/DEVICE-\(name).plist") }

    func remove() { suite.remove() }
}

/// A sync folder and a scratch folder for the devices' state, removed at the end.
struct SyncScene {
    let scratch = TemporaryDirectory()
    var folder: URL { URL(fileURLWithPath: scratch.path + "/Sync", isDirectory: true) }

    init() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// A device; `identity` `.some(nil)`: the one kept in its state folder.
    func device(_ name: String, _ kind: SyncedPrefs.Type = SyncedPrefs.self, identity: String?? = nil) throws -> SyncDevice {
        try SyncDevice(name, folder: folder, scratch: scratch.path, kind: kind, identity: identity)
    }
}


/// The sync folder's name of the scenes' root key `Main` (a capital letter adds its hash: see `SyncFolder.component`).
let syncedRoot = (try? SyncFolder.component("Main")) ?? "Main"
/// The scenes' set folder under a sync folder.
let syncedSet = "com.example.synced/" + syncedRoot

@Suite("PrefsSync: sets synced through a folder")
struct PrefsSyncTests {
    @Test("a fresh install takes the folder's values and overwrites none; device-local keys stay home; a later change and a reset travel")
    func freshInstallAndChanges() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        let b = try scene.device("B")
        defer { a.remove(); b.remove() }

        try a.prefs.setValues(["Volume": 3, "Name": "Ann", "Window Frame": "0 0 100 100"])
        try a.sync.start(a.prefs, suite: "com.example.synced", localKeys: ["Window Frame"])

        try b.prefs.setValues(["Volume": 9, "Window Frame": "5 5 50 50"])
        let changed = Locked<[Set<String>]>([])
        let observation = b.prefs.observeChanges { event in changed.withLock { $0.append(event.keys) } }
        defer { observation.cancel() }
        let report = try b.sync.start(b.prefs, suite: "com.example.synced", localKeys: ["Window Frame"])
        #expect(report.applied.map(\.key) == ["Name", "Volume"])
        #expect(report.refused.isEmpty && report.skippedFiles.isEmpty && report.warnings.isEmpty)
        #expect(b.prefs["Volume"] as? Int == 3)
        #expect(b.prefs["Name"] as? String == "Ann")
        #expect(b.prefs["Window Frame"] as? String == "5 5 50 50", "a device-local key is never applied")
        #expect(eventually { changed.withLock { $0.contains { $0.contains("Volume") } } }, "the merge is an ordinary write: observers see it")

        let fileOfA = try String(contentsOf: scene.folder.appendingPathComponent("\(syncedSet)/DEVICE-A.plist"), encoding: .utf8)
        #expect(!fileOfA.contains("Window Frame"), "a device-local key is never published")

        b.prefs["Theme"] = "dark"
        b.prefs["Name"] = nil
        try b.sync.syncNow()
        try a.sync.syncNow()
        #expect(a.prefs["Theme"] as? String == "dark")
        #expect(a.prefs["Name"] == nil)
        #expect(a.prefs["Window Frame"] as? String == "0 0 100 100")

        // A device whose program does not keep the key home publishes it; this one still does not apply it.
        let c = try scene.device("C")
        defer { c.remove() }
        c.prefs["Window Frame"] = "9 9 9 9"
        try c.sync.start(c.prefs, suite: "com.example.synced")
        try b.sync.syncNow()
        #expect(b.prefs["Window Frame"] as? String == "5 5 50 50")
        #expect(c.prefs["Theme"] as? String == "dark")
        // Nor does it relay or reset it: the device that publishes it keeps its value.
        try b.sync.syncNow()
        try c.sync.syncNow()
        #expect(c.prefs["Window Frame"] as? String == "9 9 9 9")
        let fileOfB = try String(contentsOf: scene.folder.appendingPathComponent("\(syncedSet)/DEVICE-B.plist"), encoding: .utf8)
        #expect(!fileOfB.contains("Window Frame"))
    }

    @Test("a value this device's set refuses is reported, named, not applied, and nothing else is held back")
    func refusals() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        let b = try scene.device("B", StricterSyncedPrefs.self)
        defer { a.remove(); b.remove() }

        try b.sync.start(b.prefs, suite: "com.example.synced")
        b.prefs["Volume"] = 4
        try b.sync.syncNow()
        try a.sync.start(a.prefs, suite: "com.example.synced")
        #expect(a.prefs["Volume"] as? Int == 4)

        try a.prefs.setValues(["Volume": 50, "Theme": "dark", "Name": "Bo"])
        try a.sync.syncNow()
        let report = try b.sync.syncNow()
        #expect(report.refused.map(\.key) == ["Theme", "Volume"])
        #expect(report.refused.first { $0.key == "Volume" }?.reason.contains("Volume") == true)
        #expect(report.applied.map(\.key) == ["Name"])
        #expect(b.prefs["Volume"] as? Int == 4 && b.prefs["Name"] as? String == "Bo")
        #expect(b.prefs.lastError == nil)
        // Asked again on every pass.
        #expect(try b.sync.syncNow().refused.map(\.key) == ["Theme", "Volume"])
        // A's value stands in the folder: B's refusal does not publish B's own value over it.
        try a.sync.syncNow()
        #expect(a.prefs["Volume"] as? Int == 50)
    }

    @Test("a device whose identity turns up in a file it did not write (a copied home folder) takes a new one, with a warning")
    func clonedIdentity() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A", identity: .some(nil))  // the identity kept in its state folder
        defer { a.remove() }
        a.prefs["Volume"] = 1
        try a.sync.start(a.prefs, suite: "com.example.synced")

        // The copy: the same state folder and set on another machine, which then goes its own way.
        let clone = try scene.device("C", identity: .some(nil))
        defer { clone.remove() }
        try clone.prefs.setValues(a.prefs.values)
        try FileManager.default.createDirectory(at: clone.stateFolder.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: a.stateFolder, to: clone.stateFolder)
        a.prefs["Volume"] = 2
        try a.sync.syncNow()  // the original writes on: its file is newer than anything the copy wrote
        clone.prefs["Name"] = "Cy"
        let report = try clone.sync.start(clone.prefs, suite: "com.example.synced")
        #expect(report.warnings.count == 1)
        #expect(report.warnings.first?.contains("did not write it") == true)
        #expect(clone.prefs["Volume"] as? Int == 2)

        let names = try FileManager.default.contentsOfDirectory(atPath: scene.folder.path + "/" + syncedSet).sorted()
        #expect(names.count == 2, "the clone writes a file of its own: \(names)")
        try a.sync.syncNow()
        #expect(a.prefs["Name"] as? String == "Cy")
        #expect(try a.sync.syncNow().warnings.isEmpty, "the original keeps its identity")
    }

    @Test("a key changed on the device while a pass merges keeps that change, and the next pass publishes it")
    func changedDuringPass() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        let b = try scene.device("B", InterruptedSyncedPrefs.self)
        defer { a.remove(); b.remove() }
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try b.sync.start(b.prefs, suite: "com.example.synced")

        try a.prefs.setValues(["Volume": 2, "Name": "Ann"])
        try a.sync.syncNow()
        InterruptedSyncedPrefs.whileVetting = { b.prefs["Volume"] = 99 }  // after the pass read the set, before it writes
        try b.sync.syncNow()
        #expect(InterruptedSyncedPrefs.whileVetting == nil, "the change was made during the pass")
        #expect(b.prefs["Volume"] as? Int == 99, "the merge does not undo a change it did not see")
        #expect(b.prefs["Name"] as? String == "Ann")
        try b.sync.syncNow()
        try a.sync.syncNow()
        #expect(a.prefs["Volume"] as? Int == 99)
        #expect(b.prefs["Volume"] as? Int == 99)
    }

    @Test("the schema version never syncs")
    func schemaVersion() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        defer { a.remove() }
        try a.prefs.update { values in
            values["Volume"] = 1
            values[PersistentPrefs.schemaVersionKey] = 3
        }
        try a.sync.start(a.prefs, suite: "com.example.synced")
        let file = try String(contentsOf: scene.folder.appendingPathComponent("\(syncedSet)/DEVICE-A.plist"), encoding: .utf8)
        #expect(file.contains("Volume"))
        #expect(!file.contains(PersistentPrefs.schemaVersionKey))
    }

    @Test("a damaged record is moved aside and rebuilt from the device's file, with a warning: a change made since is published, none is lost")
    func damagedRecord() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        let b = try scene.device("B")
        defer { a.remove(); b.remove() }
        try a.prefs.setValues(["Volume": 5, "Name": "Ann"])
        try a.sync.start(a.prefs, suite: "com.example.synced")
        b.prefs["Volume"] = 6
        try b.sync.start(b.prefs, suite: "com.example.synced")
        #expect(b.prefs["Volume"] as? Int == 5)
        b.prefs["Theme"] = "dark"
        try b.sync.syncNow()

        let record = try DeviceState(syncFolder: scene.folder, root: b.stateFolder).recordFile(suite: "com.example.synced", root: "Main")
        try Data("<plist><dict><key>started".utf8).write(to: URL(fileURLWithPath: record))
        b.prefs["Volume"] = 7  // not published when the record broke
        let report = try b.sync.syncNow()
        #expect(report.warnings.count == 1 && report.warnings[0].contains("rebuilt from this device's file"), "\(report.warnings)")
        #expect(b.prefs["Volume"] as? Int == 7 && b.prefs["Theme"] as? String == "dark" && b.prefs["Name"] as? String == "Ann")
        let aside = try FileManager.default.contentsOfDirectory(atPath: (record as NSString).deletingLastPathComponent)
        #expect(aside.contains { $0.hasPrefix(syncedRoot + ".plist.damaged-") })
        try a.sync.syncNow()
        #expect(a.prefs["Volume"] as? Int == 7 && a.prefs["Theme"] as? String == "dark")

        // With no file of its own in the folder either, the set syncs as a fresh install.
        let c = try scene.device("C")
        defer { c.remove() }
        try c.sync.start(c.prefs, suite: "com.example.synced")
        let recordOfC = try DeviceState(syncFolder: scene.folder, root: c.stateFolder).recordFile(suite: "com.example.synced", root: "Main")
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: recordOfC))
        try FileManager.default.removeItem(at: scene.folder.appendingPathComponent("\(syncedSet)/DEVICE-C.plist"))
        c.prefs["Volume"] = 1
        let fresh = try c.sync.syncNow()
        #expect(fresh.warnings.count == 1 && fresh.warnings[0].contains("fresh install"), "\(fresh.warnings)")
        #expect(c.prefs["Volume"] as? Int == 7, "a fresh install takes the folder's value")
    }

    @Test("a set in a named suite starts as the README and the article start it, under its suite's name, without naming it")
    func startInNamedSuite() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let suite = TestSuite("SyncNamed")
        defer { suite.remove() }
        let prefs = SyncedPrefs(key: "Main", values: nil, store: suite.store)
        prefs["Volume"] = 4
        prefs["Window Frame"] = "0 0 800 600"
        let sync = try PrefsSync(folder: scene.folder, device: "DEVICE-A", clock: { Date() }, stateFolder: URL(fileURLWithPath: scene.scratch.path))
        try sync.start(prefs, localKeys: ["Window Frame"])
        defer { sync.stop() }
        let file = scene.folder.path + "/" + (try SyncFolder.component(suite.name)) + "/" + syncedRoot + "/DEVICE-A.plist"
        let published = try String(contentsOfFile: file, encoding: .utf8)
        #expect(published.contains("Volume") && !published.contains("Window Frame"), "\(published)")
    }

    @Test("a missing folder, a device identity that cannot be one and a set with no suite name are refused, named")
    func refusedSetUps() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        #expect(throws: PersistentPrefs.PrefsError.self) { try PrefsSync(folder: scene.folder.appendingPathComponent("missing")) }
        #expect(throws: PersistentPrefs.PrefsError.self) {
            try PrefsSync(folder: scene.folder, device: "../evil", clock: { Date() }, stateFolder: URL(fileURLWithPath: scene.scratch.path))
        }
        let sync = try PrefsSync(folder: scene.folder, device: "DEVICE-A", clock: { Date() }, stateFolder: URL(fileURLWithPath: scene.scratch.path))
        let inMemory = SyncedPrefs(key: "Main", values: nil, store: InMemoryStore())
        #expect(throws: PersistentPrefs.PrefsError.self) { try sync.start(inMemory) }
        try sync.start(inMemory, suite: "com.example.memory")
    }
}

@Suite("PrefsSync live")
struct PrefsSyncLiveTests {
    @Test("a change is published within a second and merged by a started device as the folder changes; stop ends it")
    func live() throws {
        let scene = try SyncScene()
        defer { scene.scratch.remove() }
        let a = try scene.device("A")
        let b = try scene.device("B")
        defer { a.remove(); b.remove() }
        try a.sync.start(a.prefs, suite: "com.example.synced")
        try b.sync.start(b.prefs, suite: "com.example.synced")

        let started = Date()
        a.prefs["Volume"] = 1
        a.prefs["Volume"] = 2
        a.prefs["Name"] = "Ann"
        #expect(eventually(5) { b.prefs["Volume"] as? Int == 2 && b.prefs["Name"] as? String == "Ann" })
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(a.sync.lastError == nil && a.sync.lastReport != nil)
        b.prefs["Name"] = nil
        #expect(eventually(5) { a.prefs["Name"] == nil })

        a.sync.stop()
        let fileOfA = scene.folder.appendingPathComponent("\(syncedSet)/DEVICE-A.plist")
        let before = try Data(contentsOf: fileOfA)
        a.prefs["Volume"] = 3
        usleep(1_500_000)
        #expect(try Data(contentsOf: fileOfA) == before, "a stopped sync publishes nothing")
        #expect(b.prefs["Volume"] as? Int == 2)
    }

    @Test("a mount table tells which file system holds a folder; a local one is not remote")
    func fileSystems() throws {
        #if !canImport(Darwin)
            let table = """
                22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
                40 22 0:35 / /home/me/My\\040Sync rw shared:20 - nfs4 server:/export rw
                41 40 0:36 / /home/me/My\\040Sync/local rw shared:21 - tmpfs tmpfs rw
                42 22 0:37 / /media/cloud rw - fuse.rclone remote: rw
                """
            #expect(FolderWatching.fileSystemType(of: "/home/me/My Sync/prefs", in: table) == "nfs4")
            #expect(FolderWatching.fileSystemType(of: "/home/me/My Sync/local/prefs", in: table) == "tmpfs")
            #expect(FolderWatching.fileSystemType(of: "/home/me/My Syncthing", in: table) == "ext4")
            #expect(FolderWatching.fileSystemType(of: "/media/cloud/prefs", in: table) == "fuse.rclone")
            for type in ["nfs4", "cifs", "fuse.rclone", "fuse.sshfs", "virtiofs", "9p"] { #expect(FolderWatching.isRemote(type: type), "\(type)") }
            for type in ["ext4", "tmpfs", "btrfs", "xfs", "overlay"] { #expect(!FolderWatching.isRemote(type: type), "\(type)") }
            let ownTable = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
            #expect(FolderWatching.fileSystemType(of: "/", in: ownTable) != nil, "this machine's mount table reads")
        #endif
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        #expect(FolderWatching.remoteFileSystem(at: scratch.path) == nil)
    }
}

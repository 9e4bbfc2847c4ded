import Foundation
@testable import PersistentPrefs
import PersistentPrefsSample
import Testing

/// The vendor layer of this test process: one folder for every test (``PersistentPrefs/vendorDefaultsDirectory``
/// is process-wide), each test using store folders of its own inside it. The folder outlives
/// every test, so it is removed when the test process exits. Every test that writes a vendor
/// layer uses ``vendorRoot``.
private let vendorRootDirectory = TemporaryDirectory()

let vendorRoot: URL = {
    let folder = URL(fileURLWithPath: vendorRootDirectory.path, isDirectory: true)
    PersistentPrefs.vendorDefaultsDirectory = folder
    atexit { vendorRootDirectory.remove() }
    return folder
}()

final class LayeredPrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11, summary: "Output volume") var volume = 5
    @Pref("Name") var name = "code"
    @Pref("Mode") var mode = "quiet"
}

/// A set in a PlistFileStore whose vendor layer file the test writes.
struct LayerFixture {
    let storeFolder: TemporaryDirectory
    let store: PlistFileStore
    let root = "Main"
    let vendorFile: URL

    init() throws {
        storeFolder = TemporaryDirectory()
        let layerName = "layer-\(UUID().uuidString)"
        store = PlistFileStore(directory: URL(fileURLWithPath: storeFolder.path), layerName: layerName)
        let name = try store.fileURL(forRoot: root).lastPathComponent
        vendorFile = vendorRoot.appendingPathComponent(layerName).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: vendorFile.deletingLastPathComponent(), withIntermediateDirectories: true)
    }

    /// Writes the vendor layer (atomically, as an administrator's editor or package would).
    func writeVendor(_ set: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: set, format: .xml, options: 0)
        try data.write(to: vendorFile, options: .atomic)
    }

    func prefs() -> LayeredPrefs { LayeredPrefs(key: root, store: store) }

    func remove() {
        storeFolder.remove()
        try? FileManager.default.removeItem(at: vendorFile.deletingLastPathComponent())
    }
}

/// Waits up to `seconds` for `condition`.
func eventually(_ seconds: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

@Suite("Layers: vendor and site defaults beneath the user's values, locked keys", waitLimit)
struct LayerTests {
    @Test("a key reads the user's value, else the layer's, else the declared default; values is the user's own layer")
    func lookup() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 3, "Name": "vendor"])
        let prefs = fixture.prefs()
        #expect(prefs.volume == 3 && prefs.name == "vendor" && prefs.mode == "quiet")
        #expect(prefs.values.isEmpty)
        prefs.name = "mine"
        #expect(prefs.lastError == nil)
        #expect(prefs.name == "mine" && prefs.volume == 3)
        #expect(prefs.values.count == 1 && prefs.values["Name"] as? String == "mine")
        #expect(prefs.effectiveValues["Volume"] as? Int == 3 && prefs["Volume"] as? Int == 3)
        prefs.reset("Name")
        #expect(prefs.name == "vendor", "a removal reveals the layer's value")
        #expect(prefs.layerFileURLs.contains(fixture.vendorFile.standardizedFileURL))
        #expect(prefs.problems.isEmpty)
    }

    @Test("addMissingValues leaves out keys the layers give, so code defaults never hide a site default")
    func missingValues() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 3])
        let prefs = fixture.prefs()
        try prefs.addMissingValues(prefs.declaredDefaults)
        #expect(prefs.values["Volume"] == nil && prefs.values["Name"] as? String == "code")
        #expect(prefs.volume == 3)
    }

    @Test("a locked key reads the layer's value whatever the user stored, and every write road refuses it")
    func lockedKey() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        let prefs = fixture.prefs()
        prefs.volume = 2  // stored before the lock
        try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": ["Volume"]])
        let locked = fixture.prefs()
        #expect(eventually { locked.volume == 7 })
        #expect(locked.isLocked("Volume") && !locked.isLocked("Name") && !locked.isEntirelyLocked && locked.lockedKeys == ["Volume"])
        #expect(locked.isForced("Volume") && !locked.isForced("Name"))
        #expect(locked.values["Volume"] as? Int == 2, "the user's stored value is kept, only ignored")

        let refused = PersistentPrefs.PrefsError.keyLocked(key: "Volume")
        locked.volume = 9
        #expect(locked.lastError == refused)
        locked["Volume"] = 9
        #expect(locked.lastError == refused)
        #expect(throws: refused) { try locked.set(nil, forKey: "Volume") }
        #expect(throws: refused) { try locked.setValues(["Name": "x"]) }  // would drop the stored Volume
        locked.batch { $0.name = "batched"; $0.volume = 1 }
        #expect(locked.lastError == refused)
        #expect(throws: refused) { try locked.update { $0["Volume"] = 4 } }
        #expect(locked.name == "code", "nothing of the refused batch was written")
        #expect(locked.volume == 7)

        // What leaves the locked key alone still works, in every road.
        locked.name = "free"
        #expect(locked.lastError == nil && locked.name == "free")
        try locked.setValues(["Name": "whole", "Volume": 2])
        #expect(locked.values["Name"] as? String == "whole")
        try locked.update { $0["Mode"] = "loud" }
        #expect(locked.mode == "loud" && locked.volume == 7)
        // Inside a batch the locked key reads its mandatory value.
        locked.batch { batch in #expect(batch.volume == 7) }
    }

    @Test("a locked key is refused as locked before its value's rule or type is checked, on every write road")
    func lockBeforeRule() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": ["Volume"]])
        let locked = fixture.prefs()
        #expect(eventually { locked.isLocked("Volume") && locked.volume == 7 })
        let refused = PersistentPrefs.PrefsError.keyLocked(key: "Volume")
        locked.volume = 20
        #expect(locked.lastError == refused)
        #expect(throws: refused) { try locked.set(\.volume, 20) }
        locked["Volume"] = 20
        #expect(locked.lastError == refused)
        locked["Volume"] = "loud"  // of another type, too
        #expect(locked.lastError == refused)
        locked.values = ["Volume": 20, "Name": "x"]
        #expect(locked.lastError == refused)
        #expect(throws: refused) { try locked.set(20, forKey: "Volume") }
        #expect(throws: refused) { try locked.setValues(["Volume": 20]) }
        locked.batch { $0.name = "batched"; $0.volume = 20 }
        #expect(locked.lastError == refused)
        #expect(throws: refused) { try locked.transaction { $0["Volume"] = 20 } }
        #expect(throws: refused) { try locked.update { $0["Volume"] = 20 } }
        #expect(throws: refused) { try locked.update(\.volume) { $0 = 20 } }
        #expect(locked.name == "code" && locked.volume == 7, "nothing was written")
        try locked.set(\.name, "free")  // a key that is not locked is written
        #expect(locked.name == "free")
    }

    @Test("a lock in a less important layer wins over a value in a more important one; a whole set can be locked")
    func lockOrderAndWholeSet() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 4, "PersistentPrefs.locked": true])
        let prefs = fixture.prefs()
        #expect(prefs.isEntirelyLocked && prefs.isLocked("Name") && prefs.isLocked("Anything"))
        #expect(prefs.volume == 4 && prefs.name == "code")
        prefs.name = "x"
        #expect(prefs.lastError == .keyLocked(key: "Name"))
        #expect(prefs.schema["Volume"]?.isLocked == true)
    }

    @Test("a migration that would change a locked key is refused with keyLocked, and nothing is written")
    func migrationRefused() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        _ = try fixture.store.apply(.replace(["Old Volume": 3, "Volume": 1]), root: fixture.root)
        try fixture.writeVendor(["PersistentPrefs.locked": ["Volume"]])
        final class Migrating: PersistentPrefs {
            @Pref("Volume") var volume = 5
            override class var schemaVersion: Int { 1 }
            override class var migrations: [PrefsMigration] { [.renameKey("Old Volume", to: "Volume")] }
        }
        let prefs = Migrating(key: fixture.root, store: fixture.store)
        #expect(prefs.lastError == .keyLocked(key: "Volume"))
        #expect(try fixture.store.load(root: fixture.root)?["Old Volume"] as? Int == 3, "the stored set is untouched")
        // Every write to the set is blocked meanwhile: problems says why, naming the step and the key.
        let blocked = prefs.problems.contains {
            if case .migrationFailed(fixture.root, 1, _, let reason) = $0 { return reason.contains("Volume") && reason.contains("locked") }
            return false
        }
        #expect(blocked, "problems: \(prefs.problems)")
    }

    @Test("editing a layer file is seen live: observers hear when the value read changes, not when a hidden one does")
    func liveLayers() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 3, "Name": "vendor"])
        let prefs = fixture.prefs()
        prefs.name = "mine"
        let heard = EventLog()
        let observation = prefs.observeChanges { heard.append($0) }
        defer { observation.cancel() }
        try fixture.writeVendor(["Volume": 6, "Name": "vendor"])
        #expect(heard.wait(timeout: 10) { $0.keys.contains(["Volume"]) } && prefs.volume == 6)
        try fixture.writeVendor(["Volume": 6, "Name": "renamed"])  // hidden by the user's Name
        try fixture.writeVendor(["Volume": 8, "Name": "renamed"])  // the marker: heard after anything the hidden change causes
        #expect(heard.wait(timeout: 10) { $0.keys.filter { $0.contains("Volume") }.count == 2 } && prefs.volume == 8)
        #expect(heard.keys == [["Volume"], ["Volume"]], "the user's Name hides the layer's")
    }

    @Test("a layer file that is a symbolic link is watched through it: editing its target elsewhere, or pointing the link at another file, is seen live")
    func linkedLayerFile() throws {
        let fixture = try LayerFixture()
        let elsewhere = TemporaryDirectory()
        defer {
            fixture.remove()
            elsewhere.remove()
        }
        func write(_ set: [String: Any], to path: String) throws {
            try PropertyListSerialization.data(fromPropertyList: set, format: .xml, options: 0)
                .write(to: URL(fileURLWithPath: path), options: .atomic)
        }
        let target = elsewhere.path + "/site.plist"
        let other = elsewhere.path + "/other/site.plist"
        try FileManager.default.createDirectory(atPath: elsewhere.path + "/other", withIntermediateDirectories: true)
        try write(["Volume": 3], to: target)
        try write(["Volume": 9, "PersistentPrefs.locked": ["Volume"]], to: other)
        try FileManager.default.createSymbolicLink(atPath: fixture.vendorFile.path, withDestinationPath: target)
        let prefs = fixture.prefs()
        #expect(prefs.volume == 3 && !prefs.isLocked("Volume"))
        let heard = EventLog()
        let observation = prefs.observeChanges { heard.append($0) }
        defer { observation.cancel() }
        try write(["Volume": 6, "PersistentPrefs.locked": ["Volume"]], to: target)
        #expect(heard.wait(timeout: 10) { $0.keys.contains(["Volume"]) })
        #expect(prefs.volume == 6 && prefs.isLocked("Volume"))
        // The link pointed at a file in another folder (replaced in one step, as `ln -sfn` and
        // package managers do): that file is watched from then on.
        let newLink = fixture.vendorFile.path + ".new"
        try FileManager.default.createSymbolicLink(atPath: newLink, withDestinationPath: other)
        #expect(rename(newLink, fixture.vendorFile.path) == 0)
        #expect(heard.wait(timeout: 10) { $0.keys.filter { $0.contains("Volume") }.count == 2 })
        #expect(prefs.volume == 9)
        try write(["Volume": 10, "PersistentPrefs.locked": ["Volume"]], to: other)
        #expect(heard.wait(timeout: 10) { $0.keys.filter { $0.contains("Volume") }.count == 3 })
        #expect(prefs.volume == 10 && prefs.isLocked("Volume"))
    }

    @Test("a damaged layer file is reported in problems and ignored; the user's values still read and write")
    func damagedLayer() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try Data("not a plist".utf8).write(to: fixture.vendorFile)
        let prefs = fixture.prefs()
        prefs.name = "mine"
        #expect(prefs.lastError == nil && prefs.name == "mine" && prefs.volume == 5)
        let problem = prefs.problems.first { if case .corruptStore(let path, _) = $0 { return path == fixture.vendorFile.path } else { return false } }
        #expect(problem != nil, "problems: \(prefs.problems)")
        #expect(try String(contentsOf: fixture.vendorFile, encoding: .utf8) == "not a plist", "a system file is never moved or written")
    }

    @Test("a PlistFileStore outside the configuration folder has no layers unless named; one inside takes its path")
    func layerNames() {
        let outside = PlistFileStore(directory: URL(fileURLWithPath: "/var/tmp/somewhere"))
        #expect(outside.layerName == nil)
        let inside = PlistFileStore(directory: PreferencesFile.preferencesDirectory.appendingPathComponent("myapp/prefs"))
        #expect(inside.layerName == "myapp/prefs")
        #expect(PlistFileStore(directory: URL(fileURLWithPath: "/x"), layerName: "../../etc/app").layerName == "etc/app")
        #expect(!PersistentPrefs.systemConfigDirectories.isEmpty)
    }
}

// MARK: - Locks on every road

/// A value handed from a thread to the test: written before `done` is signalled, read after.
private final class Handoff<Value>: @unchecked Sendable {
    var value: Value?
    let done = DispatchSemaphore(value: 0)
}

/// A suite of the user's with a vendor layer file of its own (root keys at its top level).
private struct LayeredSuite {
    let suite = TestSuite("layered")
    var vendorFile: URL { vendorRoot.appendingPathComponent("\(suite.name).plist") }

    func writeVendor(_ top: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0)
        try data.write(to: vendorFile, options: .atomic)
    }

    func remove() {
        suite.remove()
        try? FileManager.default.removeItem(at: vendorFile)
    }
}

@Suite("Locks: checked under the file's lock, spared by the ledger, wrong-type entries reported", waitLimit)
struct LockRoadTests {
    /// Holds `file`'s lock on another thread while `meanwhile` runs, then lets go.
    private static func holdingLock(of file: URL, _ meanwhile: () throws -> Void) throws {
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        Thread {
            _ = try? FileLock.withLock(for: file, label: "test") {
                holding.signal()
                release.wait()
            }
            released.signal()
        }.start()
        holding.wait()
        defer {
            release.signal()
            released.wait()
        }
        try meanwhile()
    }

    /// A write of Volume waits for the lock while the administrator locks Volume: it is refused
    /// when it gets the lock, and the file is as it was.
    private static func lockedWhileWaiting(file: URL, store: any PrefsStore, root: String, lock: () throws -> Void) throws {
        let prefs = LayeredPrefs(key: root, store: store)
        prefs.volume = 2
        let before = try Data(contentsOf: file)
        let outcome = Handoff<PersistentPrefs.PrefsError>()
        try holdingLock(of: file) {
            Thread {
                let writer = LayeredPrefs(key: root, store: store)
                writer.volume = 9
                outcome.value = writer.lastError
                outcome.done.signal()
            }.start()
            usleep(300_000)  // the write is waiting for the lock by now
            try lock()
        }
        #expect(outcome.done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.value == .keyLocked(key: "Volume"))
        #expect(try Data(contentsOf: file) == before, "the file is byte for byte as it was")
    }

    @Test("a suite write waiting for the lock is refused when the key was locked meanwhile", .linuxSuiteFiles)
    func suiteLockedWhileWaiting() throws {
        let layered = LayeredSuite()
        defer { layered.remove() }
        try Self.lockedWhileWaiting(file: URL(fileURLWithPath: layered.suite.path), store: layered.suite.store, root: "R") {
            try layered.writeVendor(["R": ["Volume": 7, "PersistentPrefs.locked": ["Volume"]]])
        }
    }

    @Test("a PlistFileStore write waiting for the lock is refused when the key was locked meanwhile")
    func folderLockedWhileWaiting() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try Self.lockedWhileWaiting(file: try fixture.store.fileURL(forRoot: fixture.root), store: fixture.store, root: fixture.root) {
            try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": ["Volume"]])
        }
    }

    @Test("what a stale plain save put back under a key locked since is left alone by the ledger, for writers and readers", .linuxSuiteFiles)
    func ledgerSparesLockedKeys() throws {
        let layered = LayeredSuite()
        defer { layered.remove() }
        let store = layered.suite.store
        _ = try store.apply(.set(key: "Volume", value: NSNumber(value: 3)), root: "R")
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: layered.suite.path))
        _ = try store.apply(.set(key: "Volume", value: NSNumber(value: 1)), root: "R")
        try StaleSaveTests.staleSave(snapshot, to: layered.suite)  // Volume is 3 again
        try layered.writeVendor(["R": ["Volume": 7, "PersistentPrefs.locked": ["Volume"]]])

        #expect(try store.load(root: "R")?["Volume"] as? Int == 3, "a reader is shown what the next write leaves")
        _ = try store.apply(.set(key: "Name", value: "free"), root: "R")
        let stored = try #require(try PropertyListSerialization.propertyList(
            from: Data(contentsOf: URL(fileURLWithPath: layered.suite.path)), format: nil) as? [String: Any])
        let set = try #require(stored["R"] as? [String: Any])
        #expect(set["Volume"] as? Int == 3 && set["Name"] as? String == "free")
    }

    @Test("a layer value nested deeper than a write may store leaves its file out, named in problems")
    func tooDeepInLayer() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        var deep: Any = "bottom"
        for _ in 0..<150 { deep = [deep] }
        // Binary: the XML reader declines such nesting itself.
        let data = try PropertyListSerialization.data(fromPropertyList: ["Volume": 7, "Deep": deep], format: .binary, options: 0)
        try data.write(to: fixture.vendorFile, options: .atomic)
        let prefs = fixture.prefs()
        #expect(prefs.volume == 5 && prefs["Deep"] == nil, "the file is left out")
        let reported = prefs.problems.contains {
            if case .corruptStore(let path, let reason) = $0 { return path == fixture.vendorFile.path && reason.contains("\"Deep\"") }
            return false
        }
        #expect(reported, "problems: \(prefs.problems)")
    }

    @Test("a set file's layers: the ledger's repair of an unlocked key stands; a locked key keeps the file's value")
    func setFileSparing() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": ["Volume"]])
        let reader = LayerReader(files: [LayerFile(url: fixture.vendorFile, kind: .vendor, holdsRoots: false)])
        var repaired: [String: Any] = ["Volume": NSNumber(value: 1), "Name": "library's", "Dict": ["Volume": NSNumber(value: 2)]]
        reader.sparingLocked(&repaired, from: ["Volume": NSNumber(value: 3), "Name": "stale", "Dict": ["Volume": NSNumber(value: 9)]])
        #expect(repaired["Volume"] as? Int == 3 && repaired["Name"] as? String == "library's")
        #expect((repaired["Dict"] as? [String: Any])?["Volume"] as? Int == 2, "a value inside another key is no locked key")
        try reader.checkSuiteChange(from: ["Dict": ["Volume": NSNumber(value: 9)]], to: ["Dict": ["Volume": NSNumber(value: 2)]])
    }

    @Test("one set of a suite's layer file holding a value a write could not store takes no top-level lock away")
    func badSetKeepsTopLocks() throws {
        let layered = LayeredSuite()
        defer { layered.remove() }
        var deep: Any = "bottom"
        for _ in 0..<150 { deep = [deep] }
        let top: [String: Any] = ["PersistentPrefs.locked": ["Plain"], "Plain": 1, "Other": ["Deep": deep]]
        try PropertyListSerialization.data(fromPropertyList: top, format: .binary, options: 0).write(to: layered.vendorFile, options: .atomic)
        let reader = LayerReader(files: [LayerFile(url: layered.vendorFile, kind: .vendor, holdsRoots: true)])
        #expect(reader.stack(root: nil).isLocked("Plain"))
        #expect(throws: PersistentPrefs.PrefsError.keyLocked(key: "Plain")) { try reader.checkSuiteChange(from: [:], to: ["Plain": NSNumber(value: 2)]) }
        #expect(!reader.stack(root: "Other").problems.isEmpty, "the set itself is reported when read as a set")
    }

    /// A lock entry of the wrong type, as `label` describes it.
    private static func entry(_ label: String, naming key: String) -> Any {
        switch label {
        case "integer 1": NSNumber(value: 1)
        case "integer 0": NSNumber(value: 0)
        case "real 1.0": NSNumber(value: 1.0)
        case "a string": key
        default: [key, NSNumber(value: 7)]
        }
    }

    @Test("a lock entry of the wrong type leaves its file out, listed in problems, and locks nothing",
          arguments: ["integer 1", "integer 0", "real 1.0", "a string", "a list with a number"])
    func wrongTypeInSet(label: String) throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": Self.entry(label, naming: "Volume")])
        let prefs = fixture.prefs()
        #expect(!prefs.isLocked("Volume") && prefs.lockedKeys.isEmpty, "\(label)")
        #expect(prefs.volume == 5, "the file is left out: \(label)")
        prefs.volume = 9
        #expect(prefs.lastError == nil && prefs.volume == 9)
        let reported = prefs.problems.contains {
            if case .corruptStore(let path, let reason) = $0 { return path == fixture.vendorFile.path && reason.contains("PersistentPrefs.locked") }
            return false
        }
        #expect(reported, "\(label): \(prefs.problems)")
    }

    @Test("a suite layer's top-level lock entry of the wrong type is reported, not ignored or read as a lock", .linuxSuiteFiles,
          arguments: ["a string", "a list with a number", "integer 1"])
    func wrongTypeAtTop(label: String) throws {
        let layered = LayeredSuite()
        defer { layered.remove() }
        try layered.writeVendor(["PersistentPrefs.locked": Self.entry(label, naming: "R"), "R": ["Volume": 7]])
        let prefs = LayeredPrefs(key: "R", store: layered.suite.store)
        #expect(!prefs.isEntirelyLocked && prefs.lockedKeys.isEmpty, "\(label)")
        prefs.volume = 9
        #expect(prefs.lastError == nil && prefs.volume == 9, "\(label)")
        let reported = prefs.problems.contains {
            if case .corruptStore(let path, _) = $0 { return path == layered.vendorFile.path }
            return false
        }
        #expect(reported, "\(label): \(prefs.problems)")
        // A well-formed entry still locks (seen by the live set once the watcher reads the file).
        try layered.writeVendor(["PersistentPrefs.locked": ["R"], "R": ["Volume": 7]])
        #expect(eventually { prefs.isEntirelyLocked && prefs.volume == 7 })
    }
}

// MARK: - Schemas

final class SchemaDemo: PersistentPrefs {
    enum Theme: String, CaseIterable { case light, dark }
    @Pref("Volume", in: 0...11, summary: "Output volume") var volume = 5
    @Pref("Theme", summary: "Colours") var theme = Theme.light
    @Pref("Ratio") var ratio = 0.5
    @Pref("Last") var last: String?
}

/// `keys` lists plain keys (out of order, one twice) and some of the declared ones; the rest are declared only.
final class SchemaWithPlainKeys: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
    @Pref("Theme") var theme = "light"
    @Pref("Ratio") var ratio = 0.5
    @Pref("Last") var last: String?
    override var keys: [String] { ["k9", "Volume", "Alpha", "k10", "k9", "Theme"] }
}

@Suite("Schemas: what a set holds, from code and from the file beside it", waitLimit)
struct SchemaTests {
    @Test("schema lists each key's type, default, range, choices and summary")
    func describing() throws {
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let prefs = SchemaDemo(key: "S", store: PlistFileStore(directory: URL(fileURLWithPath: folder.path)))
        let schema = prefs.schema
        #expect(schema.keys.map(\.name) == ["Last", "Ratio", "Theme", "Volume"])
        let volume = try #require(schema["Volume"])
        #expect(volume.type == "Int" && volume.kind == "integer" && volume.defaultValue as? Int == 5)
        #expect(volume.minimum as? Int == 0 && volume.maximum as? Int == 11 && volume.summary == "Output volume")
        #expect(volume.problem(with: 12) != nil && volume.problem(with: 3) == nil && volume.problem(with: "3") != nil)
        let theme = try #require(schema["Theme"])
        #expect(theme.choices?.compactMap { $0 as? String } == ["light", "dark"] && theme.kind == "string")
        #expect(schema["Ratio"]?.kind == "real" && schema["Last"]?.defaultValue == nil)
    }

    @Test("schema names each key once, in order: plain keys of `keys` beside the declared ones, repeats and all")
    func describingPlainKeys() throws {
        let prefs = SchemaWithPlainKeys(key: "S", store: InMemoryStore())
        let schema = prefs.schema
        #expect(schema.keys.map(\.name) == ["Alpha", "Last", "Ratio", "Theme", "Volume", "k10", "k9"])
        #expect(schema["Volume"]?.type == "Int" && schema["Volume"]?.maximum as? Int == 11, "a declared key keeps its declaration")
        #expect(schema["Alpha"]?.type == nil && schema["k9"]?.kind == nil, "a plain key has no type")
    }

    @Test("the schema file is written by the first write, never by a read, and reads back without the library's types")
    func file() throws {
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder.path))
        let prefs = SchemaDemo(key: "S", store: store)
        let url = try #require(prefs.schemaFileURL)
        #expect(url == store.schemaFileURL(forRoot: "S"))
        _ = prefs.volume
        _ = prefs.values
        #expect(!FileManager.default.fileExists(atPath: url.path), "a read wrote the schema")
        prefs.volume = 7
        try prefs.synchronize()  // the file follows the write on another thread; synchronize() returns once it is written
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let keys = try #require(json["keys"] as? [String: [String: Any]])
        #expect(json["root"] as? String == "S" && json["class"] as? String == "SchemaDemo" && json["format"] as? Int == 1)
        #expect((keys["Volume"]?["range"] as? [String: Any])?["max"] as? Int == 11)
        #expect(keys["Theme"]?["choices"] as? [String] == ["light", "dark"])
        let loaded = try #require(try PrefsSchema.load(from: url))
        #expect(loaded["Volume"]?.summary == "Output volume" && loaded["Volume"]?.maximum as? Int == 11)
        // Another class writing the same root key replaces the file with its own schema.
        let other = LayeredPrefs(key: "S", store: store)
        other.name = "n"
        #expect(try PrefsSchema.load(from: url)?.className == "LayeredPrefs")
    }

    @Test("a damaged schema file is reported naming it, never read as a schema")
    func damagedFile() throws {
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let url = URL(fileURLWithPath: folder.path + "/x.schema.json")
        try Data("{\"format\": 99}".utf8).write(to: url)
        #expect(throws: PersistentPrefs.PrefsError.self) { try PrefsSchema.load(from: url) }
        #expect(try PrefsSchema.load(from: URL(fileURLWithPath: folder.path + "/none.json")) == nil)
    }

    @Test("the schema file is JSON for every kind of value and odd names, keys in order, and reads back the same")
    func jsonOfEveryKind() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let odd = "quote\" back\\ line\n tab\t bell\u{07} é 🎛"
        let keys: [PrefsSchema.Key] = [
            .init(name: "b", type: "Bool", kind: "boolean", defaultValue: NSNumber(value: true)),
            .init(name: "i", type: "Int", kind: "integer", defaultValue: NSNumber(value: -42), minimum: NSNumber(value: Int64.min), maximum: NSNumber(value: UInt64.max)),
            .init(name: "r", type: "Double", kind: "real", defaultValue: NSNumber(value: 0.1), minimum: NSNumber(value: -1e-5), maximum: NSNumber(value: 1e300)),
            .init(name: "inf", type: "Double", kind: "real", defaultValue: NSNumber(value: Double.infinity)),
            .init(name: odd, type: "String", kind: "string", defaultValue: odd, choices: [odd, "", "plain"], summary: odd),
            .init(name: "d", type: "Date", kind: "date", defaultValue: date),
            .init(name: "data", type: "Data", kind: "data", defaultValue: Data([0, 1, 254, 255])),
            .init(name: "a", type: "[Int]", kind: "array", defaultValue: [NSNumber(value: 1), NSNumber(value: 2)]),
            .init(name: "e", type: "[Int]", kind: "array", defaultValue: [Any]()),
            .init(name: "m", type: "[String: Int]", kind: "dictionary", defaultValue: ["z": NSNumber(value: 1), "a": ["x": "y"], "empty": [String: Any]()]),
        ]
        let schema = PrefsSchema(root: "R\"oot", className: "C", schemaVersion: 3, keys: keys)
        let data = schema.jsonData
        let text = String(decoding: data, as: UTF8.self)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "not JSON:\n\(text)")
        #expect(json["root"] as? String == "R\"oot" && json["schemaVersion"] as? Int == 3 && json["format"] as? Int == 1)
        let objects = try #require(json["keys"] as? [String: [String: Any]])
        #expect(Set(objects.keys) == Set(keys.map(\.name)))
        #expect(objects["b"]?["default"] as? Bool == true)
        #expect(objects["inf"]?["default"] is NSNull, "JSON has no infinity: written as null")
        #expect(objects[odd]?["summary"] as? String == odd && objects[odd]?["choices"] as? [String] == [odd, "", "plain"])
        // Object keys in code-point order, every level.
        let order = ["\"a\" :", "\"b\" :", "\"d\" :", "\"data\" :", "\"e\" :", "\"i\" :", "\"inf\" :", "\"m\" :", "\"r\" :"]
        let positions = order.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == order.count && positions == positions.sorted(), "\(text)")
        #expect(text.hasSuffix("}\n") && text.hasPrefix("{\n  \"class\" : \"C\",\n"), "\(text)")

        let loaded = try PrefsSchema(jsonData: data)
        #expect(loaded.root == "R\"oot" && loaded.className == "C" && loaded.schemaVersion == 3)
        #expect(loaded["b"]?.defaultValue as? Bool == true && loaded["i"]?.defaultValue as? Int == -42)
        #expect((loaded["i"]?.minimum as? NSNumber)?.int64Value == Int64.min)
        #expect(loaded["r"]?.defaultValue as? Double == 0.1 && loaded["r"]?.minimum as? Double == -1e-5 && loaded["r"]?.maximum as? Double == 1e300)
        #expect(loaded["d"]?.defaultValue as? Date == date && loaded["data"]?.defaultValue as? Data == Data([0, 1, 254, 255]))
        #expect(loaded[odd]?.defaultValue as? String == odd && loaded["e"]?.defaultValue.map { ($0 as? [Any])?.isEmpty } == true)
        let map = try #require(loaded["m"]?.defaultValue as? [String: Any])
        #expect(map["z"] as? Int == 1 && (map["a"] as? [String: String]) == ["x": "y"] && (map["empty"] as? [String: Any])?.isEmpty == true)
    }

    @Test("observeStore reports every set of a folder that changes, naming its root key and keys")
    func wholeStore() throws {
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder.path))
        SchemaDemo(key: "A", store: store).volume = 1
        let heard = EventLog()
        let observation = PersistentPrefs.observeStore(store) { heard.append($0) }
        defer { observation.cancel() }
        #expect(!observation.isCancelled)
        _ = try PlistFileStore(directory: URL(fileURLWithPath: folder.path)).apply(.set(key: "Volume", value: 2), root: "A")
        _ = try store.apply(.set(key: "Theme", value: "dark"), root: "B")
        let expected = [PrefsChangeEvent(root: "A", keys: ["Volume"]), PrefsChangeEvent(root: "B", keys: ["Theme"])]
        #expect(heard.wait(timeout: 10) { log in expected.allSatisfy { log.events.contains($0) } }, "heard \(heard.events)")
        #expect(PersistentPrefs.observeStore(InMemoryStore()) { _ in }.isCancelled)
    }
}

import Foundation
import PersistentPrefs
import Testing

/// The side effects of migration steps, counted across threads.
final class StepLog: @unchecked Sendable {  // `entries` is only touched while holding `lock`
    private let lock = NSLock()
    private var entries: [String] = []
    func add(_ entry: String) { lock.lock(); entries.append(entry); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return entries }
}

/// Version 3 of an editor's set. Version 0 stored "Font Size", a `Bool` "Dark Mode" and a
/// "Window" dictionary; 1 renamed the font size; 2 made "Dark Mode" a theme name; 3 split the
/// window into "Width" and "Height".
final class VersionedEditorPrefs: PersistentPrefs {
    nonisolated(unsafe) static var log = StepLog()

    @Pref("Editor Font Size") var fontSize = 12
    @Pref("Dark Mode") var theme = "light"
    @Pref("Width") var width = 800
    @Pref("Height") var height = 600

    override class var schemaVersion: Int { 3 }
    override class var migrations: [PrefsMigration] {
        let log = Self.log
        return [
            .renameKey("Font Size", to: "Editor Font Size"),
            .transform("Dark Mode") { value in
                log.add("2")
                return (value as? Bool) == true ? "dark" : "light"
            },
            PrefsMigration("split Window into Width and Height") { set in
                log.add("3")
                guard let window = set.removeValue(forKey: "Window") as? [String: Any] else { return }
                set["Width"] = window["w"]
                set["Height"] = window["h"]
            },
        ]
    }
}

/// One ready-made step on its own, at version 1.
final class RemovingPrefs: PersistentPrefs {
    @Pref("Kept") var kept = 0
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] { [.removeKey("Gone")] }
}

final class CustomPrefs: PersistentPrefs {
    @Pref("Total") var total = 0
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] {
        [.custom { set in set["Total"] = ((set["A"] as? Int) ?? 0) + ((set["B"] as? Int) ?? 0) }]
    }
}

/// A step that fails, and one that writes a key the set does not accept.
struct StepFailure: Error, CustomStringConvertible {
    var description: String { "the old window cannot be read" }
}

final class FailingPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 2 }
    override class var migrations: [PrefsMigration] {
        [.renameKey("Old Size", to: "Size"), PrefsMigration("read the window") { _ in throw StepFailure() }]
    }
}

final class StrayKeyPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 2 }
    override class var migrations: [PrefsMigration] { [.renameKey("Old Size", to: "Siz"), .removeKey("Nothing")] }
}

final class MiscountedPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 3 }
    override class var migrations: [PrefsMigration] { [.removeKey("A")] }
}

/// An older program's view of a set that is now at version 2.
final class OldPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] { [.removeKey("A")] }
}

final class TolerantOldPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] { [.removeKey("A")] }
    override class var writesNewerSchemaVersions: Bool { true }
}

final class UnversionedPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
}

@Suite("Migrations", .serialized)  // VersionedEditorPrefs.log is shared
struct MigrationTests {
    static let stamp = PersistentPrefs.schemaVersionKey
    nonisolated(unsafe) static let version0: [String: Any] = ["Font Size": 14, "Dark Mode": true, "Window": ["w": 1024, "h": 768], "Legacy": "kept"]

    static func stored(_ store: InMemoryStore, _ root: String) throws -> [String: Any] {
        try store.load(root: root) ?? [:]
    }

    @Test("a chain of three versions is applied from 0, 1 and 2, each pending step once")
    func chain() throws {
        let starts: [(Int, [String: Any], [String])] = [
            (0, Self.version0, ["2", "3"]),
            (1, ["Editor Font Size": 14, "Dark Mode": true, "Window": ["w": 1024, "h": 768], "Legacy": "kept", Self.stamp: 1], ["2", "3"]),
            (2, ["Editor Font Size": 14, "Dark Mode": "dark", "Window": ["w": 1024, "h": 768], "Legacy": "kept", Self.stamp: 2], ["3"]),
        ]
        for (from, set, ran) in starts {
            VersionedEditorPrefs.log = StepLog()
            let store = InMemoryStore()
            try store.save(set, root: "Editor")
            let prefs = VersionedEditorPrefs(key: "Editor", store: store)
            #expect(prefs.lastError == nil, "from \(from)")
            #expect(prefs.fontSize == 14 && prefs.theme == "dark" && prefs.width == 1024 && prefs.height == 768, "from \(from)")
            #expect(prefs.storedSchemaVersion == 3)
            #expect(VersionedEditorPrefs.log.all == ran, "from \(from)")
            // The version is stored with the set, invisible in `values`; keys the steps left alone stay.
            let raw = try Self.stored(store, "Editor")
            #expect(raw[Self.stamp] as? Int == 3)
            #expect(raw["Font Size"] == nil && raw["Window"] == nil && raw["Legacy"] as? String == "kept")
            #expect(prefs.values[Self.stamp] == nil && prefs[Self.stamp] == nil)
            #expect(prefs.count == 5)
            // Opening it again runs nothing.
            _ = VersionedEditorPrefs(key: "Editor", store: InMemoryStore())
            let again = VersionedEditorPrefs(key: "Editor", store: store)
            #expect(again.fontSize == 14 && VersionedEditorPrefs.log.all == ran)
        }
    }

    @Test("renameKey moves a value (replacing the new key's), and does nothing when the old key is absent")
    func renameKey() throws {
        let store = InMemoryStore()
        try store.save(["Font Size": 20, "Editor Font Size": 9], root: "Both")
        #expect(VersionedEditorPrefs(key: "Both", store: store).fontSize == 20)
        try store.save(["Editor Font Size": 9, "Dark Mode": false], root: "New")
        let prefs = VersionedEditorPrefs(key: "New", store: store)
        #expect(prefs.fontSize == 9 && prefs.theme == "light")
        #expect(try Self.stored(store, "New")[Self.stamp] as? Int == 3)
    }

    @Test("removeKey, transform and custom steps")
    func readyMadeSteps() throws {
        let store = InMemoryStore()
        try store.save(["Gone": "x", "Kept": 3], root: "Remove")
        let removing = RemovingPrefs(key: "Remove", store: store)
        #expect(removing.values.count == 1 && removing.kept == 3)
        #expect(try Self.stored(store, "Remove")["Gone"] == nil)

        try store.save(["Dark Mode": false], root: "Transform")
        #expect(VersionedEditorPrefs(key: "Transform", store: store).theme == "light")
        #expect(try Self.stored(store, "Transform")["Dark Mode"] as? String == "light")

        // A custom step reads keys the set no longer accepts ("A", "B"), and they stay stored.
        try store.save(["A": 2, "B": 5], root: "Custom")
        let custom = CustomPrefs(key: "Custom", store: store)
        #expect(custom.total == 7)
        #expect(custom["A"] as? Int == 2)
        custom.total = 8
        #expect(custom.lastError == nil)
        custom["A"] = 3
        #expect(custom.lastError == .incorrectKeys(invalidElements: ["A"]))
    }

    @Test("a set with nothing stored is not migrated; its first write stamps the current version")
    func freshSet() throws {
        VersionedEditorPrefs.log = StepLog()
        let store = InMemoryStore()
        let prefs = VersionedEditorPrefs(key: "Fresh", store: store)
        #expect(prefs.storedSchemaVersion == 0)
        #expect(try store.load(root: "Fresh") == nil)
        prefs.width = 1
        #expect(try Self.stored(store, "Fresh")[Self.stamp] as? Int == 3)
        #expect(VersionedEditorPrefs.log.all.isEmpty)
        prefs.clear()
        #expect(try store.load(root: "Fresh") == nil)
        // A whole-set write stamps it too, and a value given for the reserved key is ignored.
        prefs.values = ["Width": 2, Self.stamp: 99]
        #expect(prefs.lastError == nil)
        #expect(try Self.stored(store, "Fresh")[Self.stamp] as? Int == 3)
        try prefs.update { set in
            #expect(set[Self.stamp] == nil)
            set["Height"] = 3
        }
        #expect(try Self.stored(store, "Fresh")[Self.stamp] as? Int == 3)
    }

    @Test("a failing step writes nothing, names the step, and leaves the old values readable")
    func failingStep() throws {
        let store = InMemoryStore()
        try store.save(["Old Size": 4, "Size": 2], root: "Failing")
        let prefs = FailingPrefs(key: "Failing", store: store)
        let failure = PersistentPrefs.PrefsError.migrationFailed(
            root: "Failing", step: 2, name: "read the window", reason: "the old window cannot be read")
        #expect(prefs.lastError == failure)
        #expect(try Self.stored(store, "Failing").count == 2)
        #expect(try Self.stored(store, "Failing")["Size"] as? Int == 2)
        #expect(prefs.size == 2)  // the old value, where the key is unchanged
        #expect(prefs.lastError == failure)  // a @Pref read leaves it alone
        _ = prefs["Size"]
        #expect(prefs.lastError == nil)  // a successful untyped read clears it, as in RVS_PersistentPrefs
        // Writes are refused while the set cannot be migrated: nothing is mixed into the old version.
        prefs.size = 5
        #expect(prefs.lastError == failure)
        #expect(throws: failure) { try prefs.set(5, forKey: "Size") }
        #expect(throws: failure) { try prefs.migrate() }
        #expect(try Self.stored(store, "Failing")["Size"] as? Int == 2)
        #expect(prefs.storedSchemaVersion == 0)
    }

    @Test("a step result the set refuses fails the migration, naming the step that wrote the key")
    func refusedResult() throws {
        let store = InMemoryStore()
        try store.save(["Old Size": 4], root: "Stray")
        let prefs = StrayKeyPrefs(key: "Stray", store: store)
        guard case .migrationFailed("Stray", 1, let name, let reason)? = prefs.lastError else {
            Issue.record("got \(String(describing: prefs.lastError))")
            return
        }
        #expect(name == "rename \"Old Size\" to \"Siz\"")
        #expect(reason.contains("\"Siz\""))
        #expect(try Self.stored(store, "Stray").count == 1)

        try store.save(["A": 1], root: "Miscounted")
        let miscounted = MiscountedPrefs(key: "Miscounted", store: store)
        guard case .migrationFailed("Miscounted", _, "migrations", let why)? = miscounted.lastError else {
            Issue.record("got \(String(describing: miscounted.lastError))")
            return
        }
        #expect(why.contains("schemaVersion is 3 but migrations lists 1 step"))
        #expect(try Self.stored(store, "Miscounted")["A"] as? Int == 1)
    }

    @Test("a set stored by a newer version stays untouched and readable; every setter is refused")
    func newerVersion() throws {
        let store = InMemoryStore()
        let newer: [String: Any] = ["Size": 7, "A": "new shape", Self.stamp: 2]
        try store.save(newer, root: "Newer")
        let refusal = PersistentPrefs.PrefsError.newerSchemaVersion(root: "Newer", stored: 2, supported: 1)
        let prefs = OldPrefs(key: "Newer", store: store)
        #expect(prefs.lastError == nil)  // reading it is fine
        #expect(prefs.size == 7 && prefs["A"] as? String == "new shape")
        prefs.size = 8
        #expect(prefs.lastError == refusal)
        prefs["Size"] = 8
        #expect(prefs.lastError == refusal)
        prefs.values = ["Size": 8]
        #expect(prefs.lastError == refusal)
        prefs.clear()
        #expect(prefs.lastError == refusal)
        prefs.batch { $0.size = 8 }
        #expect(prefs.lastError == refusal)
        #expect(throws: refusal) { try prefs.update { $0["Size"] = 8 } }
        #expect(throws: refusal) { try prefs.update(\.size) { $0 += 1 } }
        #expect(throws: refusal) { try prefs.addMissingValues(["Size": 8]) }
        #expect(throws: refusal) { try prefs.migrate() }
        let unversioned = UnversionedPrefs(key: "Newer", store: store)
        unversioned.size = 8
        #expect(unversioned.lastError == .newerSchemaVersion(root: "Newer", stored: 2, supported: 0))
        let raw = try Self.stored(store, "Newer")
        #expect(raw.count == 3 && raw["Size"] as? Int == 7 && raw[Self.stamp] as? Int == 2)

        // A subclass that opts in writes, and the set keeps its newer version.
        let tolerant = TolerantOldPrefs(key: "Newer", store: store)
        #expect(tolerant.lastError == nil)
        tolerant.size = 9
        #expect(tolerant.lastError == nil)
        #expect(try Self.stored(store, "Newer")[Self.stamp] as? Int == 2)
        #expect(try Self.stored(store, "Newer")["Size"] as? Int == 9)
    }

    @Test("migrationPreview shows the steps and both sets without writing; migrate() then runs them")
    func previewAndExplicitRun() throws {
        VersionedEditorPrefs.log = StepLog()
        let store = InMemoryStore()
        try store.save(Self.version0, root: "Preview")
        let report = try PersistentPrefs.withoutAutomaticMigration {
            try VersionedEditorPrefs(key: "Preview", store: store).migrationPreview()
        }
        #expect(report.fromVersion == 0 && report.toVersion == 3)
        #expect(report.steps == [
            "version 1: rename \"Font Size\" to \"Editor Font Size\"", "version 2: transform \"Dark Mode\"",
            "version 3: split Window into Width and Height",
        ])
        #expect(report.before["Font Size"] as? Int == 14)
        #expect(report.after["Editor Font Size"] as? Int == 14 && report.after["Width"] as? Int == 1024)
        #expect(try Self.stored(store, "Preview")["Font Size"] as? Int == 14)
        #expect(try Self.stored(store, "Preview")[Self.stamp] == nil)

        let prefs = PersistentPrefs.withoutAutomaticMigration { VersionedEditorPrefs(key: "Preview", store: store) }
        #expect(prefs.storedSchemaVersion == 0)
        #expect(prefs["Font Size"] as? Int == 14)
        let ran = try prefs.migrate()
        #expect(ran.steps.count == 3 && ran.fromVersion == 0)
        #expect(prefs.fontSize == 14 && prefs.storedSchemaVersion == 3)
        #expect(try prefs.migrate().steps.isEmpty)
        // Preview of a migrated set: nothing to do.
        #expect(try prefs.migrationPreview().steps.isEmpty)
    }

    @Test("a write to a set not yet migrated migrates it first, in the same store write")
    func writeMigratesFirst() throws {
        let store = InMemoryStore()
        try store.save(Self.version0, root: "WriteFirst")
        let prefs = PersistentPrefs.withoutAutomaticMigration { VersionedEditorPrefs(key: "WriteFirst", store: store) }
        prefs.width = 5
        #expect(prefs.lastError == nil)
        let raw = try Self.stored(store, "WriteFirst")
        #expect(raw[Self.stamp] as? Int == 3 && raw["Width"] as? Int == 5 && raw["Editor Font Size"] as? Int == 14)
        #expect(raw["Height"] as? Int == 768)
    }

    @Test("export writes the version; import migrates an older file and refuses a newer one")
    func exportAndImport() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = InMemoryStore()
        let prefs = VersionedEditorPrefs(key: "Export", store: store)
        prefs.fontSize = 20
        let exported = URL(fileURLWithPath: directory.path + "/export.plist")
        try prefs.export(to: exported)
        let file = try PropertyListSerialization.propertyList(from: Data(contentsOf: exported), format: nil) as? [String: Any]
        #expect(file?[Self.stamp] as? Int == 3 && file?["Editor Font Size"] as? Int == 20)
        try prefs.import(from: exported)
        #expect(prefs.fontSize == 20 && prefs.lastError == nil)

        let old = URL(fileURLWithPath: directory.path + "/old.plist")
        try PropertyListSerialization.data(fromPropertyList: ["Font Size": 9, "Dark Mode": true], format: .xml, options: 0).write(to: old)
        try prefs.import(from: old)
        #expect(prefs.fontSize == 9 && prefs.theme == "dark")
        #expect(try Self.stored(store, "Export")[Self.stamp] as? Int == 3)

        let newer = URL(fileURLWithPath: directory.path + "/newer.plist")
        try PropertyListSerialization.data(fromPropertyList: ["Editor Font Size": 1, Self.stamp: 4], format: .xml, options: 0).write(to: newer)
        #expect(throws: PersistentPrefs.PrefsError.newerSchemaVersion(root: "Export", stored: 4, supported: 3)) {
            try prefs.import(from: newer)
        }
        #expect(prefs.fontSize == 9)
    }

    @Test("the version rides along in durable stores, and a root holding no set is still repaired")
    func durableStores() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(Self.version0, root: "editor")
        let prefs = VersionedEditorPrefs(key: "editor", store: store)
        #expect(prefs.lastError == nil && prefs.fontSize == 14)
        #expect(try store.load(root: "editor")?[Self.stamp] as? Int == 3)

        let suite = TestSuite()
        defer { suite.remove() }
        suite.store.userDefaults.set("not a set", forKey: "Odd")
        _ = suite.store.userDefaults.synchronize()
        let odd = VersionedEditorPrefs(key: "Odd", store: suite.store)
        odd.values = ["Width": 3]
        #expect(odd.lastError == nil)
        #expect(try suite.store.load(root: "Odd")?[Self.stamp] as? Int == 3)
    }
}

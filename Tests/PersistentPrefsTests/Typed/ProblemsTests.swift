import Foundation
import PersistentPrefs
import Testing

/// Two @Pref properties on one key with different types.
final class ConflictingPrefs: PersistentPrefs {
    @Pref("Size") var size = 1
    @Pref("Size") var sizeName = "small"
    @Pref("Other") var other = 0
}

final class CheckedPrefs: PersistentPrefs {
    @Pref("Count") var counted = 0
    @Pref("Volume", in: 0...11) var volume = 5
    @Pref("Name") var name = "x"
    override var keys: [String] { ["Count", "Volume", "Name", "Level"] }
    override var validators: [String: PrefsValidator] { ["Level": .range(1...3)] }
}

@Suite("lastError and problems")
struct ProblemsTests {
    @Test("@Pref properties sharing a key with different types are reported when an instance is made, and in problems")
    func conflicts() {
        let prefs = ConflictingPrefs(key: "Conflict", store: InMemoryStore())
        let conflict = PersistentPrefs.PrefsError.conflictingDeclarations(key: "Size", types: ["Int", "String"])
        #expect(prefs.lastError == conflict)
        #expect(prefs.problems == [conflict])
        _ = prefs.other
        #expect(prefs.lastError == conflict)  // a @Pref read leaves it alone
        _ = prefs["Other"]
        #expect(prefs.lastError == nil)  // RVS's rule for its API: a successful read clears it
        #expect(prefs.problems == [conflict])  // the record that stays
    }

    @Test("problems lists every stored value a read would report, until the key is written; lastError keeps RVS's rule")
    func problemsStay() throws {
        let store = InMemoryStore()
        try store.save(["Count": "many", "Volume": 40, "Name": "ok", "Level": 9], root: "Checked")
        let prefs = CheckedPrefs(key: "Checked", store: store)
        #expect(prefs.problems == [
            .typeMismatch(key: "Count", expected: "Int", found: "a String (\"many\")"),
            .invalidValue(key: "Volume", reason: "40 is outside the range 0...11"),
            .invalidValue(key: "Level", reason: "9 is outside the range 1...3"),
        ])
        // print(p.a, p.b, p.c): the mismatch one read reports is gone after the next read...
        _ = prefs.counted
        #expect(prefs.lastError == .typeMismatch(key: "Count", expected: "Int", found: "a String (\"many\")"))
        _ = prefs.name
        #expect(prefs.lastError == .typeMismatch(key: "Count", expected: "Int", found: "a String (\"many\")"), "a @Pref read leaves it alone")
        _ = prefs["Name"]
        #expect(prefs.lastError == nil)
        // ...while problems still has it, until the key is written.
        #expect(prefs.problems.count == 3)
        prefs.counted = 2
        prefs.volume = 3
        prefs["Level"] = 2
        #expect(prefs.problems.isEmpty)
        #expect(prefs.lastError == nil)
    }

    @Test("problems reports a newer stored version and a damaged store, and leaves lastError alone")
    func otherProblems() throws {
        let store = InMemoryStore()
        try store.save(["Count": 1, PersistentPrefs.schemaVersionKey: 2], root: "Newer")
        let prefs = CheckedPrefs(key: "Newer", store: store)
        #expect(prefs.problems == [.newerSchemaVersion(root: "Newer", stored: 2, supported: 0)])

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let files = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try Data("garbage".utf8).write(to: try files.fileURL(forRoot: "damaged"))
        let damaged = CheckedPrefs(key: "damaged", store: files)
        guard case .corruptStore? = damaged.problems.first else {
            Issue.record("got \(damaged.problems)")
            return
        }
        damaged.lastError = nil
        _ = damaged.problems
        #expect(damaged.lastError == nil)
        damaged.acknowledgeDamage()
        #expect(damaged.problems.isEmpty)
    }
}

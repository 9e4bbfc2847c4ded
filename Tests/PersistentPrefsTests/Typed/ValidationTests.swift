import Foundation
import PersistentPrefs
import Testing

/// A set whose values have rules: two `@Pref` rules and one for a key without `@Pref`.
final class RuledPrefs: PersistentPrefs {
    struct Blank: Error, CustomStringConvertible {
        var description: String { "a name cannot be blank" }
    }

    @Pref("Volume", in: 0...11) var volume = 5
    @Pref("Name", validate: { !$0.isEmpty }) var name = "x"
    @Pref("Title", validate: { title in
        guard !title.trimmingCharacters(in: .whitespaces).isEmpty else { throw Blank() }
        return true
    }) var title = "Untitled"
    @Pref("Free") var free = 0

    override var keys: [String] { ["Volume", "Name", "Title", "Free", "Level"] }
    override var validators: [String: PrefsValidator] { ["Level": .range(1...3)] }
}

@Suite("Validation on write")
struct ValidationTests {
    static let outside = PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: "12 is outside the range 0...11")

    @Test("a @Pref range refuses a value through every setter, naming the key and the reason")
    func rangeEverywhere() throws {
        let store = InMemoryStore()
        let prefs = RuledPrefs(key: "Range", store: store)
        prefs.volume = 7
        prefs.volume = 12
        #expect(prefs.lastError == Self.outside)
        #expect(prefs.volume == 7)
        prefs["Volume"] = 12
        #expect(prefs.lastError == Self.outside)
        prefs.values = ["Volume": 12, "Free": 1]
        #expect(prefs.lastError == Self.outside)
        #expect(throws: Self.outside) { try prefs.set(12, forKey: "Volume") }
        #expect(throws: Self.outside) { try prefs.addMissingValues(["Volume": 12]) }
        #expect(throws: Self.outside) { try prefs.update { $0["Volume"] = 12 } }
        #expect(throws: Self.outside) { try prefs.update(\.volume) { $0 += 5 } }
        prefs.batch { prefs in
            prefs.free = 3
            prefs.volume = 12
        }
        #expect(prefs.lastError == Self.outside)
        #expect(prefs.volume == 7)
        #expect(prefs.free == 0)
        #expect(try store.load(root: "Range")?["Volume"] as? Int == 7)
        prefs.volume = 11
        #expect(prefs.lastError == nil)
        #expect(prefs.volume == 11)
    }

    @Test("validate: closures refuse by returning false or by throwing a reason")
    func closures() throws {
        let prefs = RuledPrefs(key: "Closures", store: InMemoryStore())
        prefs.name = ""
        guard case .invalidValue(let key, let reason)? = prefs.lastError else {
            Issue.record("lastError is \(String(describing: prefs.lastError))")
            return
        }
        #expect(key == "Name")
        #expect(reason.contains("refused by the rule of \"Name\""))
        #expect(prefs.name == "x")
        prefs.title = "   "
        #expect(prefs.lastError == .invalidValue(key: "Title", reason: "a name cannot be blank"))
        prefs.title = "Report"
        #expect(prefs.lastError == nil)
        #expect(prefs.title == "Report")
    }

    @Test("validators cover keys without @Pref")
    func validatorsOverride() throws {
        let prefs = RuledPrefs(key: "Level", store: InMemoryStore())
        prefs["Level"] = 2
        #expect(prefs.lastError == nil)
        prefs["Level"] = 9
        #expect(prefs.lastError == .invalidValue(key: "Level", reason: "9 is outside the range 1...3"))
        prefs["Level"] = "two"
        #expect(prefs.lastError == .invalidValue(key: "Level", reason: "\"two\" cannot be read as Int"))
        #expect(prefs["Level"] as? Int == 2)
    }

    @Test("a stored value that breaks its rule reads as the default, is reported, and stays stored")
    func storedInvalid() throws {
        let store = InMemoryStore()
        try store.save(["Volume": 99, "Name": ""], root: "Old")
        let prefs = RuledPrefs(key: "Old", store: store)
        #expect(prefs.volume == 5)
        #expect(prefs.lastError == .invalidValue(key: "Volume", reason: "99 is outside the range 0...11"))
        #expect(prefs.name == "x")
        #expect(prefs.lastError?.description.contains("\"Name\"") == true)
        #expect(prefs["Volume"] as? Int == 99)  // untyped reads hand back what is stored
        #expect(try store.load(root: "Old")?["Volume"] as? Int == 99)
        prefs.volume = 3
        #expect(prefs.volume == 3)
        #expect(prefs.lastError == nil)
    }
}

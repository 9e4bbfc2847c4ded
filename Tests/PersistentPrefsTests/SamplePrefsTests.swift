import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

@Suite("SamplePrefs: the typed sample subclass")
struct SamplePrefsTests {
    @Test("an empty root key gets the defaults on first use")
    func defaultsOnFirstUse() throws {
        let store = InMemoryStore()
        let before = Date()
        let prefs = SamplePrefs(key: "Fresh", store: store)
        #expect(prefs.lastError == nil)
        #expect(prefs.keys == ["Integer Value", "String Value", "Array Value", "Dictionary Value", "Date Value"])
        #expect(prefs.int == 12345)
        #expect(prefs.string == "Any String")
        #expect(prefs.array == ["One", "Two", "Three", "Four", "Five"])
        #expect(prefs.dictionary == ["One": "1", "Two": "2", "Three": "3", "Four": "4", "Five": "5"])
        #expect(prefs.date >= before.addingTimeInterval(-1))
        #expect(try store.roots() == ["Fresh"])
    }

    @Test("the default root key is SamplePrefs")
    func defaultRoot() {
        #expect(SamplePrefs(store: InMemoryStore()).key == "SamplePrefs")
    }

    @Test("typed accessors write, and other instances of the root key see the change")
    func accessors() {
        let store = InMemoryStore()
        let prefs = SamplePrefs(key: "A", store: store)
        let date = Date(timeIntervalSince1970: 1_000_000)
        prefs.int = 7
        prefs.string = "seven"
        prefs.array = ["x"]
        prefs.dictionary = ["k": "v"]
        prefs.date = date
        let other = SamplePrefs(key: "A", store: store)
        #expect(other.int == 7)
        #expect(other.string == "seven")
        #expect(other.array == ["x"])
        #expect(other.dictionary == ["k": "v"])
        #expect(other.date == date)
        #expect(SamplePrefs(key: "B", store: store).int == 12345)
    }

    @Test("existing values are not overwritten by the defaults")
    func keepsExisting() {
        let store = InMemoryStore()
        SamplePrefs(key: "A", store: store).int = 1
        #expect(SamplePrefs(key: "A", store: store).int == 1)
    }

    @Test("reset puts the defaults back")
    func reset() {
        let prefs = SamplePrefs(key: "A", store: InMemoryStore())
        prefs.int = 1
        prefs.string = "changed"
        prefs.reset()
        #expect(prefs.lastError == nil)
        #expect(prefs.int == 12345)
        #expect(prefs.string == "Any String")
    }

    @Test("a value of the wrong type reads as the default and is reported, without crashing")
    func wrongType() throws {
        let store = InMemoryStore()
        try store.save(["Integer Value": "not a number", "Array Value": 5], root: "A")  // written by another program
        let prefs = SamplePrefs(key: "A", store: store)
        #expect(prefs.int == 12345)
        #expect(prefs.lastError == .typeMismatch(key: "Integer Value", expected: "Int", found: "a String (\"not a number\")"))
        #expect(prefs.array == ["One", "Two", "Three", "Four", "Five"])
        #expect(prefs["Array Value"] as? Int == 5)
        // The set itself refuses to store what its declarations cannot read back.
        prefs["Integer Value"] = "not a number"
        #expect(prefs.lastError == .invalidValue(key: "Integer Value", reason: "\"not a number\" is a string, not an integer"))
    }

    @Test("declaredDefaults are the @Pref defaults in stored form")
    func declaredDefaults() {
        let defaults = SamplePrefs(key: "A", store: InMemoryStore()).declaredDefaults
        #expect(defaults.keys.sorted() == ["Array Value", "Date Value", "Dictionary Value", "Integer Value", "String Value"])
        #expect(defaults["Integer Value"] as? Int == 12345)
    }
}

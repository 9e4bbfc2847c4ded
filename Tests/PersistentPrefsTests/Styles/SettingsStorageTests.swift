import Foundation
import PersistentPrefs
import Testing

@Suite("SettingsStorage")
struct SettingsStorageTests {
    @Test("defaults, optionals, enums, URLs and OptionSets")
    func values() {
        let suite = TestSuite()
        defer { suite.remove() }
        let settings = WrappedUserSettings(suite.store.userDefaults)
        #expect(settings.age == nil)
        #expect(settings.planet == .earth)
        #expect(settings.volume == 0.5)
        settings.age = 30
        settings.name = "Bo"
        settings.planet = .venus
        settings.homepage = URL(string: "https://example.org/a?q=1")
        settings.volume = 0.75
        settings.level = [.b]
        let again = WrappedUserSettings(suite.store.userDefaults)
        #expect(again.age == 30)
        #expect(again.name == "Bo")
        #expect(again.planet == .venus)
        #expect(again.homepage == URL(string: "https://example.org/a?q=1"))
        #expect(again.volume == 0.75)
        #expect(again.level == [.b])
        #expect(suite.store.userDefaults.string(forKey: "homepage") == "https://example.org/a?q=1")
        settings.age = nil
        #expect(suite.store.userDefaults.object(forKey: "age") == nil)
    }

    @Test("a value no property list holds is refused by name, and nothing is written")
    func refusal() {
        let suite = TestSuite()
        defer { suite.remove() }
        @SettingsStorage("when", store: suite.store.userDefaults) var when: Date?
        when = Date(timeIntervalSince1970: 0)
        #expect($when.lastError == nil)
        when = Date(timeIntervalSinceReferenceDate: 1e13)  // the year 318,857
        #expect($when.lastError == .valuesNotPlistCompatible(invalidElements: ["when"]))
        #expect(when == Date(timeIntervalSince1970: 0))
        #expect($when.lastError == nil)
    }

    @Test("a stored value of another type reads as the default and is reported")
    func mismatch() {
        let suite = TestSuite()
        defer { suite.remove() }
        suite.store.userDefaults.set("pluto", forKey: "planet")
        suite.store.userDefaults.set("old", forKey: "volume")
        _ = suite.store.userDefaults.synchronize()
        let settings = WrappedUserSettings(suite.store.userDefaults)
        #expect(settings.planet == .earth)
        #expect(settings.volume == 0.5)
        #expect(settings.$volume.lastError == .typeMismatch(key: "volume", expected: "Double", found: "a String (\"old\")"))
        #expect(suite.store.userDefaults.string(forKey: "volume") == "old")
    }
}

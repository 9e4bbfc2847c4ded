import Foundation
import PersistentPrefs
import Testing

@Suite("UserDefaultsContainer", waitLimit)
struct UserDefaultsContainerTests {
    @Test("the article's UserSettings: optional, defaulted and enum values")
    func userSettings() {
        let suite = TestSuite()
        defer { suite.remove() }
        var settings = UserSettings(userDefaults: suite.store.userDefaults)
        #expect(settings.age == nil)
        #expect(settings.planet == .earth)
        settings.age = 20
        settings.name = "Ann"
        settings.planet = .mars
        let again = UserSettings(userDefaults: suite.store.userDefaults)
        #expect(again.age == 20)
        #expect(again.name == "Ann")
        #expect(again.planet == .mars)
        #expect(suite.store.userDefaults.string(forKey: "planet") == "mars")
        settings.age = nil
        #expect(suite.store.userDefaults.object(forKey: "age") == nil)
    }

    @Test("OptionSets are stored as raw values; unstorable values are refused without a crash")
    func optionSetsAndRefusals() {
        let suite = TestSuite()
        defer { suite.remove() }
        let container = UserDefaultsContainer(keyedBy: AnyKey.self, userDefaults: suite.store.userDefaults)
        container[.flags] = Flags([.a, .b])
        #expect(container.lastError == nil)
        #expect(container[.flags] == Flags([.a, .b]))
        #expect(suite.store.userDefaults.integer(forKey: "flags") == 5)

        container[.text] = "kept"
        container[.point] = NotStorable()
        #expect(container.lastError == .valuesNotPlistCompatible(invalidElements: ["point"]))
        #expect(suite.store.userDefaults.object(forKey: "point") == nil)
        let text: String? = container[.text]
        #expect(text == "kept")
        #expect(container.lastError == nil)
        let mismatch: Int? = container[.text]
        #expect(mismatch == nil)
        #expect(container.lastError == .typeMismatch(key: "text", expected: "Int", found: "a String (\"kept\")"))
    }

    @Test("writes are durable: a fresh process reads them", .linuxSuiteFiles)
    func durable() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let write = try child.run("prefs-test-helper", ["container-write", "styles", "-"])
        #expect(write.status == 0, "\(write.stderr)")
        let read = try child.run("prefs-test-helper", ["container-read", "styles", "-"])
        #expect(read.stdout == "age=20 name=Ann planet=mars\n", "\(read.stderr)")
    }
}

/// The article's property-wrapper `UserSettings`, on a suite of the test's own.
final class WrappedUserSettings {
    @SettingsStorage var age: Int?
    @SettingsStorage var name: String?
    @SettingsStorage var planet: Planet
    @SettingsStorage var homepage: URL?
    @SettingsStorage var volume: Double
    @SettingsStorage var level: Flags

    init(_ defaults: UserDefaults) {
        _age = SettingsStorage("age", store: defaults)
        _name = SettingsStorage("name", store: defaults)
        _planet = SettingsStorage(wrappedValue: .earth, "planet", store: defaults)
        _homepage = SettingsStorage("homepage", store: defaults)
        _volume = SettingsStorage(wrappedValue: 0.5, "volume", store: defaults)
        _level = SettingsStorage(wrappedValue: [], "level", store: defaults)
    }
}

import Foundation
import PersistentPrefs
import Testing

enum Planet: String { case mercury, venus, earth, mars }

struct Flags: OptionSet {
    let rawValue: Int
    static let a = Flags(rawValue: 1)
    static let b = Flags(rawValue: 4)
}

/// The article's `UserSettings`, on a suite of the test's own instead of `.standard`.
struct UserSettings {
    private enum SettingsKey: CodingKey {
        case age
        case name
        case planet
    }

    private let storage: UserDefaultsContainer<SettingsKey>

    init(userDefaults: UserDefaults) {
        storage = UserDefaultsContainer(keyedBy: SettingsKey.self, userDefaults: userDefaults)
    }

    var age: Int? {
        get { storage[.age] }
        set { storage[.age] = newValue }
    }

    var name: String? {
        get { storage[.name] }
        set { storage[.name] = newValue }
    }

    var planet: Planet {
        get { storage[.planet] ?? .earth }
        set { storage[.planet] = newValue }
    }
}

private enum AnyKey: String, CodingKey {
    case flags, point, nothing, text, url
}

private struct NotStorable { let x = 1 }

@Suite("UserDefaultsContainer")
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

    @Test("writes are durable: a fresh process reads them")
    func durable() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let write = try child.run("prefs-test-helper", ["container-write", "seeds", "-"])
        #expect(write.status == 0, "\(write.stderr)")
        let read = try child.run("prefs-test-helper", ["container-read", "seeds", "-"])
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

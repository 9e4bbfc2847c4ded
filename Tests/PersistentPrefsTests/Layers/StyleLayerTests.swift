import Foundation
import PersistentPrefs
import Testing

/// Keys of a suite with system layers.
private enum LayeredKey: CodingKey {
    case volume
    case name
    case mode
    case Player
}

/// A suite of its own with a vendor layer file (``vendorRoot``/`<suite>.plist`, root keys at the
/// top level) and a user's file written as given, locked keys and all.
private struct LayeredSuite {
    let suite = TestSuite()

    var vendorFile: URL { vendorRoot.appendingPathComponent(suite.name + ".plist") }
    var userFile: URL { URL(fileURLWithPath: suite.path) }

    init(vendor: [String: Any], user: [String: Any]) throws {
        try Self.write(vendor, to: vendorFile)
        try Self.write(user, to: userFile)
    }

    private static func write(_ top: [String: Any], to file: URL) throws {
        try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0).write(to: file, options: .atomic)
    }

    func remove() {
        suite.remove()
        try? FileManager.default.removeItem(at: vendorFile)
    }
}

/// A site's layer: `volume` locked at the top level, `level` locked inside the set `Player`,
/// `mode` given but not locked.
private var siteLayer: [String: Any] {
    [
        "volume": 9, "mode": "site", "PersistentPrefs.locked": ["volume"],
        "Player": ["level": 3, "PersistentPrefs.locked": ["level"]] as [String: Any],
    ]
}

@Suite("Styles through layers: a suite's locked keys hold for the container and the property wrapper", .linuxSuiteFiles, waitLimit)
struct StyleLayerTests {
    @Test("UserDefaultsContainer reads the layers and refuses a locked key, leaving the file byte for byte")
    func container() throws {
        let fixture = try LayeredSuite(vendor: siteLayer, user: ["volume": 1, "name": "mine", "Player": ["level": 1, "team": "red"]])
        defer { fixture.remove() }
        let container = UserDefaultsContainer(keyedBy: LayeredKey.self, userDefaults: fixture.suite.store.userDefaults)
        let volume: Int? = container[.volume]
        let name: String? = container[.name]
        let mode: String? = container[.mode]
        let player: [String: Any]? = container[.Player]
        #expect(volume == 9, "a locked key reads the layer's value")
        #expect(name == "mine" && mode == "site")
        #expect(player?["level"] as? Int == 3 && player?["team"] as? String == "red")

        let before = try Data(contentsOf: fixture.userFile)
        container[.volume] = 5
        #expect(container.lastError == .keyLocked(key: "volume"))
        #expect(throws: PersistentPrefs.PrefsError.keyLocked(key: "volume")) {
            try container.update(.volume, as: Int.self) { $0 = ($0 ?? 0) + 1 }
        }
        container[.Player] = ["level": 5, "team": "blue"] as [String: Any]
        #expect(container.lastError == .keyLocked(key: "level"), "a whole set changing a locked key is refused")
        container[.volume] = Int?.none
        #expect(container.lastError == .keyLocked(key: "volume"))
        #expect(try Data(contentsOf: fixture.userFile) == before)

        // An update sees what readers see, and one that leaves a locked key alone is no change.
        try container.update(.mode, as: String.self) { $0 = ($0 ?? "") + "+mine" }
        try container.update(.volume, as: Int.self) { #expect($0 == 9) }
        let updated: String? = container[.mode]
        #expect(updated == "site+mine" && container.lastError == nil)
        // A set replaced with its locked key as stored is no change of that key.
        container[.Player] = ["level": 1, "team": "blue"] as [String: Any]
        #expect(container.lastError == nil)
        let team: [String: Any]? = container[.Player]
        #expect(team?["team"] as? String == "blue" && team?["level"] as? Int == 3)

        // A set read, edited and written back carries its locked key's value without changing it;
        // a value written as it reads copies nothing of the layers into the user's file.
        var edited = try #require(team)
        edited["team"] = "green"
        container[.Player] = edited
        #expect(container.lastError == nil)
        let stored = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: fixture.userFile), format: nil) as? [String: Any])
        let storedPlayer = try #require(stored["Player"] as? [String: Any])
        #expect(storedPlayer["level"] as? Int == 1 && storedPlayer["team"] as? String == "green", "only the edited key is written")
        let untouched = try Data(contentsOf: fixture.userFile)
        let reread: String? = container[.mode]
        container[.mode] = reread
        let afterMode = try Data(contentsOf: fixture.userFile)
        #expect(container.lastError == nil && afterMode == untouched, "the layer's value is not copied")
    }

    @Test("@SettingsStorage reads the layers and refuses a locked key, leaving the file byte for byte")
    func propertyWrapper() throws {
        let fixture = try LayeredSuite(vendor: siteLayer, user: ["volume": 1])
        defer { fixture.remove() }
        let defaults = fixture.suite.store.userDefaults
        let volume = SettingsStorage(wrappedValue: 5, "volume", store: defaults)
        let mode = SettingsStorage<String?>("mode", store: defaults)
        #expect(volume.wrappedValue == 9 && mode.wrappedValue == "site")
        let before = try Data(contentsOf: fixture.userFile)
        volume.wrappedValue = 4
        #expect(volume.projectedValue.lastError == .keyLocked(key: "volume"))
        #expect(volume.wrappedValue == 9)
        #expect(try Data(contentsOf: fixture.userFile) == before)
        mode.wrappedValue = "mine"
        #expect(mode.projectedValue.lastError == nil && mode.wrappedValue == "mine")
    }
}

import Foundation
import PersistentPrefs
import Testing

/// The folder of this file's settings types, shared with the ``PlistFileStore`` sets they must
/// stay apart from; removed when the test process exits.
private let settingsFolders = TemporaryDirectory()

private let sharedFolder: URL = {
    atexit { settingsFolders.remove() }
    return URL(fileURLWithPath: settingsFolders.path, isDirectory: true)
}()

/// Settings whose type name is a root key of a set in the same folder.
private struct Clash: Codable, SettingsManageable {
    static var settingsDirectory: URL { sharedFolder.appendingPathComponent("clash") }
    var level = 1
}

/// The same, with a name a root key's file has exactly (no upper case).
private struct lowclash: Codable, SettingsManageable {
    static var settingsDirectory: URL { sharedFolder.appendingPathComponent("clash") }
    var level = 1
}

/// Settings whose file an earlier version named `<Type>.plist`.
private struct Legacy: Codable, SettingsManageable {
    static var settingsDirectory: URL { sharedFolder.appendingPathComponent("legacy") }
    var level = 1
}

/// Settings beside a file of the earlier name that is not theirs.
private struct Other: Codable, SettingsManageable {
    static var settingsDirectory: URL { sharedFolder.appendingPathComponent("other") }
    var level = 1
}

/// Settings whose earlier file a store of a root key of the same name must leave alone.
private struct Mine: Codable, SettingsManageable {
    static var settingsDirectory: URL { sharedFolder.appendingPathComponent("other") }
    var level = 1
}

@Suite("SettingsManageable file names", .serialized, waitLimit)
struct SettingsFileNameTests {
    @Test("a settings type named as a root key and a set in the same folder keep their own files")
    func apartFromSets() throws {
        let store = PlistFileStore(directory: Clash.settingsDirectory)
        _ = try store.apply(.replace(["level": 40]), root: "lowclash")
        var upper = Clash()
        upper.level = 2
        try upper.updateThrowing()
        var lower = lowclash()
        lower.level = 3
        try lower.updateThrowing()
        #expect(try store.load(root: "Clash") == nil, "the set took the settings' file")
        _ = try store.apply(.replace(["level": 50]), root: "Clash")
        #expect(try store.load(root: "lowclash")?["level"] as? Int == 40)
        #expect(try store.load(root: "Clash")?["level"] as? Int == 50)
        var again = Clash()
        try again.loadThrowing()
        var lowAgain = lowclash()
        try lowAgain.loadThrowing()
        #expect(again.level == 2 && lowAgain.level == 3)
    }

    @Test("a file under the earlier name that is not the type's (no initial copy, does not decode) stays; a store never sweeps the type's file into a set")
    func earlierNameNotTheTypes() throws {
        let folder = Other.settingsDirectory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let old = folder.appendingPathComponent("Other.plist")
        let setFile = try PropertyListSerialization.data(fromPropertyList: ["level": "not a number"], format: .xml, options: 0)
        try setFile.write(to: old)
        var settings = Other()
        try settings.loadThrowing()
        let after = try Data(contentsOf: old)
        #expect(settings.level == 1 && after == setFile, "left where it is, byte for byte")

        // The type's own file under the earlier name, and a store whose root key is the type's name.
        let mine = folder.appendingPathComponent("Mine.plist")
        try PropertyListSerialization.data(fromPropertyList: ["level": 8], format: .xml, options: 0).write(to: mine)
        let store = PlistFileStore(directory: folder)
        #expect(try store.load(root: "Mine") == nil)
        #expect(FileManager.default.fileExists(atPath: mine.path), "an XML file is no set file an earlier version wrote")
        var loaded = Mine()
        try loaded.loadThrowing()
        #expect(loaded.level == 8)
    }

    @Test("a settings file under the earlier name is found and moved, its initial copy with it")
    func earlierName() throws {
        let folder = Legacy.settingsDirectory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let old = folder.appendingPathComponent("Legacy.plist")
        try PropertyListSerialization.data(fromPropertyList: ["level": 7], format: .xml, options: 0).write(to: old)
        try PropertyListSerialization.data(fromPropertyList: ["level": 4], format: .xml, options: 0)
            .write(to: folder.appendingPathComponent("Legacy.plist.init"))
        var settings = Legacy()
        try settings.loadThrowing()
        #expect(settings.level == 7)
        #expect(settings.settingsURL() != old && FileManager.default.fileExists(atPath: settings.settingsURL().path))
        #expect(!FileManager.default.fileExists(atPath: old.path))
        try settings.resetThrowing()
        #expect(settings.level == 4, "the initial copy moved with the file")
    }
}

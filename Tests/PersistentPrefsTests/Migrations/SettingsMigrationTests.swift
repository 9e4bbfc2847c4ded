import Foundation
import PersistentPrefs
import Testing

/// Version 2 of a settings type: 1 renamed "team" to "teamName", 2 multiplied "power" by 10.
struct VersionedPlayer: Codable, SettingsManageable, Equatable {
    var teamName = "none"
    var power = 1
    static var schemaVersion: Int { 2 }
    static var migrations: [PrefsMigration] {
        [.renameKey("team", to: "teamName"), .transform("power") { (($0 as? Int) ?? 0) * 10 }]
    }
}

struct BrokenStep: Error, CustomStringConvertible {
    var description: String { "no power to convert" }
}

/// A step that throws, and one whose result does not decode.
struct FailingSettings: Codable, SettingsManageable, Equatable {
    var size = 1
    static var schemaVersion: Int { 1 }
    static var migrations: [PrefsMigration] { [PrefsMigration("convert power") { _ in throw BrokenStep() }] }
}

struct UndecodableResult: Codable, SettingsManageable, Equatable {
    var size = 1
    static var schemaVersion: Int { 1 }
    static var migrations: [PrefsMigration] { [.transform("size") { _ in "big" }] }
}

// In the SettingsManageable suite, which runs one test at a time: they share the settings folder.
extension SettingsManageableTests {
    static func writeOld(_ set: [String: Any], to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: set, format: .xml, options: 0).write(to: url)
    }

    static func stored(_ url: URL) throws -> [String: Any] {
        try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil) as? [String: Any] ?? [:]
    }

    @Test("SettingsManageable: an old file is migrated once on load, stamped, and written back")
    func settingsMigration() throws {
        try withSettingsDirectory { directory in
            var player = VersionedPlayer()
            let url = player.settingsURL()
            try Self.writeOld(["team": "red", "power": 3], to: url)
            let playerResult = player.load()
            #expect(playerResult)
            #expect(player == VersionedPlayer(teamName: "red", power: 30))
            let raw = try Self.stored(url)
            #expect(raw[PersistentPrefs.schemaVersionKey] as? Int == 2 && raw["team"] == nil && raw["power"] as? Int == 30)
            var again = VersionedPlayer()
            let againResult = again.load()
            #expect(againResult)
            #expect(again.power == 30)  // not migrated twice
            #expect(player.toDictionary()?[PersistentPrefs.schemaVersionKey] == nil)

            // From version 1: only the second step runs; update migrates first, under the lock.
            try Self.writeOld(["teamName": "blue", "power": 4, PersistentPrefs.schemaVersionKey: 1], to: url)
            try player.update { $0.teamName += "!" }
            #expect(player == VersionedPlayer(teamName: "blue!", power: 40))
            #expect(try Self.stored(url)[PersistentPrefs.schemaVersionKey] as? Int == 2)

            // A new file is stamped with the current version.
            try FileManager.default.removeItem(at: url)
            var fresh = VersionedPlayer()
            let freshResult = fresh.load()
            #expect(freshResult)
            #expect(try Self.stored(url)[PersistentPrefs.schemaVersionKey] as? Int == 2)
        }
    }

    @Test("SettingsManageable: a failing step or an undecodable result leaves the file byte for byte")
    func settingsMigrationFailures() throws {
        try withSettingsDirectory { _ in
            var failing = FailingSettings()
            let url = failing.settingsURL()
            try Self.writeOld(["size": 3], to: url)
            let before = try Data(contentsOf: url)
            let failingResult = failing.load()
            #expect(!failingResult)
            let failure = PersistentPrefs.PrefsError.migrationFailed(root: url.path, step: 1, name: "convert power", reason: "no power to convert")
            #expect(FailingSettings.lastSettingsError == failure)
            #expect(throws: failure) { try failing.update { $0.size = 9 } }
            // Writing the whole value would replace what the step failed to carry over: refused too.
            failing.size = 9
            #expect(throws: failure) { try failing.updateThrowing() }
            let updated = failing.update()
            #expect(!updated)
            #expect(FailingSettings.lastSettingsError == failure)
            #expect(try Data(contentsOf: url) == before)

            var undecodable = UndecodableResult()
            let other = undecodable.settingsURL()
            try Self.writeOld(["size": 3], to: other)
            let original = try Data(contentsOf: other)
            let undecodableResult = undecodable.load()
            #expect(!undecodableResult)
            guard case .migrationFailed(_, 1, "transform \"size\"", let reason)? = UndecodableResult.lastSettingsError else {
                Issue.record("got \(String(describing: UndecodableResult.lastSettingsError))")
                return
            }
            #expect(reason.contains("does not decode as UndecodableResult"))
            #expect(try Data(contentsOf: other) == original)
        }
    }

    @Test("SettingsManageable: a file of a newer version loads, and is never overwritten")
    func settingsNewerVersion() throws {
        try withSettingsDirectory { _ in
            var player = VersionedPlayer()
            let url = player.settingsURL()
            try Self.writeOld(["teamName": "green", "power": 7, PersistentPrefs.schemaVersionKey: 5], to: url)
            let before = try Data(contentsOf: url)
            let playerResult = player.load()
            #expect(playerResult)
            #expect(player == VersionedPlayer(teamName: "green", power: 7))
            player.power = 8
            let updated = player.update()
            #expect(!updated)
            #expect(VersionedPlayer.lastSettingsError == .newerSchemaVersion(root: url.path, stored: 5, supported: 2))
            do {
                try player.update { $0.power = 9 }
                Issue.record("update of a newer file succeeded")
            } catch {
                #expect(error as? PersistentPrefs.PrefsError == .newerSchemaVersion(root: url.path, stored: 5, supported: 2))
            }
            #expect(try Data(contentsOf: url) == before)
        }
    }
}

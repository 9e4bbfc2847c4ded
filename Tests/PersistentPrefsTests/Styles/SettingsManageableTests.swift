import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// The article's `AppSettings`, written exactly as the article does (a `static var` shared
/// instance, no `adopt`): `load()` replaces the reference held by `shared`.
class ArticleAppSettings: Codable, SettingsManageable {
    nonisolated(unsafe) static var shared = ArticleAppSettings()
    var playSFX = true
    var themeIndex = 1
    var fontName = "AvenirNext-Regular"
    var fontSize: CGFloat = 17.0
    private init() {}
}

/// A struct with no bundled defaults.
struct Plain: Codable, SettingsManageable, Equatable {
    var volume = 5
    var name = "plain"
}

/// A settings type holding a date.
struct Stamped: Codable, SettingsManageable, Equatable {
    var when = Date(timeIntervalSinceReferenceDate: 0)
}

/// Runs `body` with every settings file in a temporary folder of its own.
func withSettingsDirectory(_ body: (URL) throws -> Void) rethrows {
    let directory = TemporaryDirectory()
    let url = URL(fileURLWithPath: directory.path + "/settings")
    SettingsLocation.directory = url
    defer {
        SettingsLocation.directory = nil
        directory.remove()
    }
    try body(url)
}

/// These tests share ``SettingsLocation/directory`` and `AppSettings.shared`, so they run one
/// at a time.
@Suite("SettingsManageable", .serialized, waitLimit)
struct SettingsManageableTests {
    @Test("AppSettings, as in the article: load creates the file and its initial copy; update; reset")
    func appSettings() throws {
        try withSettingsDirectory { directory in
            let settings = AppSettings.shared
            #expect(AppSettings.shared.load())
            #expect(FileManager.default.fileExists(atPath: directory.path + "/AppSettings.settings.plist"))
            #expect(FileManager.default.fileExists(atPath: directory.path + "/AppSettings.settings.plist.init"))
            AppSettings.shared.fontSize = 21.0
            AppSettings.shared.playSFX = false
            #expect(AppSettings.shared.update())
            let updated = try #require(AppSettings.shared.toDictionary()?.compactMapValues { $0 })
            #expect(updated["fontSize"] as? Double == 21)
            #expect(updated["playSFX"] as? Bool == false)
            #expect(AppSettings.shared.reset())
            let reset = try #require(AppSettings.shared.toDictionary()?.compactMapValues { $0 })
            #expect(reset["fontSize"] as? Double == 17)
            #expect(reset["playSFX"] as? Bool == true)
            #expect(settings.fontSize == 17)  // the object everyone holds was updated in place
            #expect(settings.playSFX == true)
            #expect(AppSettings.lastSettingsError == nil)
        }
    }

    @Test("a class written exactly as in the article: load and reset replace the shared reference")
    func articleClass() {
        withSettingsDirectory { _ in
            _ = ArticleAppSettings.shared.load()
            ArticleAppSettings.shared.fontSize = 30
            #expect(ArticleAppSettings.shared.update())
            let before = ArticleAppSettings.shared
            let result1 = ArticleAppSettings.shared.reset()
            #expect(result1)
            #expect(ArticleAppSettings.shared.fontSize == 17)
            #expect(ArticleAppSettings.shared !== before)
            ArticleAppSettings.shared.fontSize = 40
            _ = ArticleAppSettings.shared.update()
            let result2 = ArticleAppSettings.shared.load()
            #expect(result2)
            #expect(ArticleAppSettings.shared.fontSize == 40)
        }
    }

    @Test("PlayerSettings, as in the article: defaults from the bundled file, update, reset")
    func playerSettings() throws {
        try withSettingsDirectory { directory in
            var player = PlayerSettings()
            let result3 = player.loadUsingSettingsFile()
            #expect(result3)
            #expect(player.team == "Cowboys")
            #expect(player.isMale == true)
            #expect(player.gunType == 2)
            #expect(player.powerLevels == [2, 3, 4, 0, 1])
            player.isMale = false
            player.gunType = 1
            player.powerLevels?[0] = 1
            #expect(player.update())
            var again = PlayerSettings()
            let result4 = again.loadUsingSettingsFile()
            #expect(result4)  // the file exists: the bundled one is not copied again
            #expect(again == player)
            let dictionary = try #require(again.toDictionary()?.compactMapValues { $0 })
            #expect(dictionary["gunType"] as? Int == 1)
            let result5 = again.reset()
            #expect(result5)
            #expect(again.gunType == 2)
            #expect(again.isMale == true)
            #expect(FileManager.default.fileExists(atPath: directory.path + "/PlayerSettings.settings.plist"))
        }
    }

    @Test("failures say why, and never destroy a file")
    func failures() throws {
        try withSettingsDirectory { directory in
            var plain = Plain()
            #expect(!plain.delete())
            #expect(Plain.lastSettingsError == .noSettingsFile(path: directory.path + "/Plain.settings.plist"))
            let result6 = plain.reset()
            #expect(!result6)
            #expect(Plain.lastSettingsError == .nothingToResetTo(type: "Plain"))
            let result7 = plain.loadUsingSettingsFile()
            #expect(!result7)
            #expect(Plain.lastSettingsError == .noBundledSettings(type: "Plain"))
            #expect(throws: PersistentPrefs.PrefsError.noBundledSettings(type: "Plain")) {
                var copy = plain
                try copy.loadUsingSettingsFileThrowing()
            }

            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("Plain.settings.plist")
            try Data("not a plist".utf8).write(to: file)
            let result8 = plain.load()
            #expect(!result8)
            guard case .decodingFailed(let path, _)? = Plain.lastSettingsError else {
                Issue.record("expected decodingFailed, got \(String(describing: Plain.lastSettingsError))")
                return
            }
            #expect(path == file.path)
            #expect(try Data(contentsOf: file) == Data("not a plist".utf8))
            #expect(plain.toDictionary() == nil)

            try Data("<plist><dict><key>volume</key><string>loud</string></dict></plist>".utf8).write(to: file)
            let error = #expect(throws: PersistentPrefs.PrefsError.self) { try plain.loadThrowing() }
            guard case .decodingFailed(file.path, _)? = error else {
                Issue.record("a file whose volume is a string: expected decodingFailed, got \(String(describing: error))")
                return
            }
            #expect(plain == Plain())
        }
    }

    @Test("a settings file holding characters XML cannot carry is written so that every reader reads it back")
    func awkwardCharacters() throws {
        try withSettingsDirectory { directory in
            for name in ["colour \u{1B}[31mred", "\u{FEFF}leading mark", "plain text", "\u{0}\u{B}\u{FFFF}"] {
                var plain = Plain(volume: 1, name: name)
                let loaded = plain.load()
                plain.name = name
                let updated = plain.update()
                #expect(loaded && updated)
                var fresh = Plain()
                let freshLoaded = fresh.load()
                #expect(freshLoaded)
                #expect(fresh == plain, "\(name.unicodeScalars.map { String($0.value, radix: 16) })")
                let file = directory.path + "/Plain.settings.plist"
                try PortableFileTests.checkReadable(file, holds: ["volume": 1, "name": name], root: nil)
            }
        }
    }

    @Test("a settings file keeps a date's fraction of a second: binary while it holds one, XML otherwise")
    func fractionalDate() throws {
        try withSettingsDirectory { directory in
            let file = directory.path + "/Stamped.settings.plist"
            for (when, isXML) in [(786_000_000.25, false), (786_000_000, true)] {
                var stamped = Stamped(when: Date(timeIntervalSinceReferenceDate: when))
                let loaded = stamped.load()
                stamped.when = Date(timeIntervalSinceReferenceDate: when)
                let updated = stamped.update()
                #expect(loaded && updated)
                var fresh = Stamped()
                let freshLoaded = fresh.load()
                #expect(freshLoaded && fresh == stamped)
                let data = try #require(FileManager.default.contents(atPath: file))
                #expect(data.starts(with: Array("<?xml".utf8)) == isXML)
            }
        }
    }

    @Test("the Codable style's earlier error names still make the one error type's cases")
    func earlierErrorNames() {
        func made<Names: MakesEarlierErrors>(by names: Names.Type) -> [PersistentPrefs.PrefsError] {
            names.made(path: "/tmp/P.settings.plist")
        }
        let made = made(by: EarlierErrorNames.self)
        #expect(made == [
            .ioError(path: "/tmp/P.settings.plist", reason: "disk full"),
            .migrationFailed(root: "/tmp/P.settings.plist", step: 2, name: "split", reason: "no"),
            .newerSchemaVersion(root: "/tmp/P.settings.plist", stored: 3, supported: 2),
            .noSettingsFile(path: "/tmp/P.settings.plist"),
        ])
        #expect(made.allSatisfy { $0.description.contains("/tmp/P.settings.plist") })
    }

    @Test("files are written atomically, mode 0600, with no temporary files left behind (the lock file stays)")
    func atomicFiles() throws {
        try withSettingsDirectory { directory in
            var plain = Plain(volume: 9, name: "x")
            let result9 = plain.load()
            #expect(result9)
            plain.volume = 10
            for _ in 0..<5 { #expect(plain.update()) }
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            #expect(names == ["Plain.settings.plist", "Plain.settings.plist.init", "Plain.settings.plist.lock"])
            let mode = try FileManager.default.attributesOfItem(atPath: directory.path + "/Plain.settings.plist")[.posixPermissions] as? Int
            #expect(mode == 0o600)
            var fresh = Plain()
            let result10 = fresh.load()
            #expect(result10)
            #expect(fresh == Plain(volume: 10, name: "x"))
            let result11 = fresh.reset()
            #expect(result11)
            #expect(fresh == Plain(volume: 9, name: "x"))
        }
    }

    @Test("the default folder is per user and per program, not a cache")
    func defaultDirectory() {
        let path = SettingsLocation.defaultDirectory.path
        #expect(path.hasSuffix("/" + (Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName)))
        #expect(!path.lowercased().contains("cache"))
    }

    @Test("a fresh process reads what another wrote")
    func freshProcess() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let write = try child.run("prefs-test-helper", ["settings-write", "unused", directory.path + "/s"])
        #expect(write.status == 0, "\(write.stderr)")
        let read = try child.run("prefs-test-helper", ["settings-read", "unused", directory.path + "/s"])
        #expect(read.stdout == "fontSize=21.0 playSFX=false gunType=1 team=Cowboys\n", "\(read.stderr)")
    }
}

/// Makes errors through the names of the Codable style's earlier `SettingsError`; reached through
/// a protocol, so that compiling the deprecated names here warns nobody.
private protocol MakesEarlierErrors {
    static func made(path: String) -> [PersistentPrefs.PrefsError]
}

private enum EarlierErrorNames: MakesEarlierErrors {
    @available(*, deprecated, message: "uses the earlier names on purpose")
    static func made(path: String) -> [PersistentPrefs.PrefsError] {
        let earlier: [SettingsError] = [
            .ioFailed(path: path, reason: "disk full"),
            .migrationFailed(path: path, step: 2, name: "split", reason: "no"),
            .newerSchemaVersion(path: path, stored: 3, supported: 2),
            SettingsError.noSettingsFile(path: path),
        ]
        return earlier
    }
}

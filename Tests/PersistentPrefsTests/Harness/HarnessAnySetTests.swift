import Foundation
@testable import PersistentPrefs
@testable import PrefsHarnessKit
import PersistentPrefsSample
import Testing

/// A program's set, as an app declares one: a ranged integer, a string, an enum, a boolean and
/// a date, and a locked ranged integer.
final class HarnessAppPrefs: PersistentPrefs {
    enum Theme: String, CaseIterable, Sendable {
        case light, dark, system
    }

    @Pref("Volume", in: 0...11, summary: "Output volume") var volume = 5
    @Pref("Name") var name = "player"
    @Pref("Theme") var theme = Theme.system
    @Pref("Muted") var muted = false
    @Pref("Since") var since = Date(timeIntervalSince1970: 1_700_000_000)
    @Pref("Level", in: 0...3) var level = 1
    @Pref("Nickname") var nickname: String?
    @Pref("Accent") var accent: Theme?
}

/// The app's set "Main" in a folder whose vendor layer sets Theme and locks Muted and Level; its
/// schema file written by the app's own first write.
private struct AppFixture {
    let folder = TemporaryDirectory()
    let layerName = "anyset-\(UUID().uuidString)"
    var store: PlistFileStore { PlistFileStore(directory: URL(fileURLWithPath: folder.path), layerName: layerName) }
    let vendorFile: URL

    init() throws {
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder.path), layerName: layerName)
        vendorFile = vendorRoot.appendingPathComponent(layerName).appendingPathComponent(try store.fileURL(forRoot: "Main").lastPathComponent)
            .standardizedFileURL
        try FileManager.default.createDirectory(at: vendorFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        let vendor: [String: Any] = ["Theme": "dark", "Muted": true, "Level": 2, "PersistentPrefs.locked": ["Muted", "Level"]]
        try PropertyListSerialization.data(fromPropertyList: vendor, format: .xml, options: 0).write(to: vendorFile, options: .atomic)
        let app = HarnessAppPrefs(key: "Main", store: store)
        app.volume = 7
        app.flush()
    }

    var schemaFile: URL { store.schemaFileURL(forRoot: "Main") }

    func run(_ words: String..., input: [String] = []) -> (Int32, RecordingConsole) {
        HarnessCommandTests.run(words, HarnessSession(rootKey: "Main", store: store), input: input)
    }

    func stored() throws -> [String: Any] { try store.load(root: "Main") ?? [:] }

    func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) }

    func remove() {
        folder.remove()
        try? FileManager.default.removeItem(at: vendorFile.deletingLastPathComponent())
    }
}

/// Whether `object` holds a JSON boolean (not a number 0 or 1) under `key`.
private func isJSONBool(_ object: [String: Any]?, _ key: String) -> Bool {
    guard let number = object?[key] as? NSNumber else { return false }
    return PrefsSchema.kind(of: number) == "boolean"
}

@Suite("Harness: a program's set, as first-class as the sample's", waitLimit)
struct HarnessAnySetTests {
    @Test("get reads a program's key as the program does, with its source on stderr; --json has source, file, locked")
    func get() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        #expect(FileManager.default.fileExists(atPath: fixture.schemaFile.path))
        let (status, volume) = fixture.run("get", "Volume")
        #expect(status == 0 && volume.out == "7\n" && volume.err.isEmpty, "\(volume.err)")
        let theme = fixture.run("get", "Theme").1
        #expect(theme.out == "dark\n" && theme.err.contains("vendor defaults file \(fixture.vendorFile.path)"), "\(theme.err)")
        let name = fixture.run("get", "Name").1
        #expect(name.out == "player\n" && name.err.contains("the default declared in code"), "\(name.err)")
        let muted = try #require(try fixture.json(fixture.run("get", "Muted", "--json").1.out) as? [String: Any])
        #expect(isJSONBool(muted, "value") && muted["value"] as? Bool == true && isJSONBool(muted, "locked") && muted["locked"] as? Bool == true)
        #expect(muted["source"] as? String == "vendor" && muted["file"] as? String == fixture.vendorFile.path)
        let since = try #require(try fixture.json(fixture.run("get", "Since", "--json").1.out) as? [String: Any])
        #expect(since["value"] as? String == "2023-11-14T22:13:20Z" && since["source"] as? String == "default" && since["file"] is NSNull)
        let unknown = fixture.run("get", "int")
        #expect(unknown.0 == 2 && unknown.1.err.contains("unknown key 'int'") && unknown.1.err.contains("Volume"), "the sample's aliases are the sample's only")
        let described = fixture.run("describe", "int")
        #expect(described.0 == 2 && described.1.err == unknown.1.err, "one message and exit code for an unknown key: \(described.1.err)")
    }

    @Test("list shows the schema file, the schema's keys with types, values as read, source and lock; --json as an array of rows")
    func list() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let text = fixture.run("list").1.out
        #expect(text.hasPrefix("Schema file: \(fixture.schemaFile.path)\n"), "\(text)")
        #expect(!text.contains("Integer Value") && !text.contains("not a sample key"))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("Volume") && $0.contains("Int") && $0.contains("7") && $0.hasSuffix("user") })
        #expect(lines.contains { $0.contains("Muted") && $0.contains("Bool") && $0.contains("true") && $0.hasSuffix("vendor \(fixture.vendorFile.path), locked") })
        #expect(lines.contains { $0.contains("Theme") && $0.contains("dark") && $0.hasSuffix("vendor \(fixture.vendorFile.path)") })
        #expect(lines.contains { $0.contains("Name") && $0.contains("player") && $0.hasSuffix("default") })
        let rows = try #require(try fixture.json(fixture.run("list", "--json").1.out) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["key"] as? String }) == ["Volume", "Name", "Theme", "Muted", "Since", "Level", "Nickname", "Accent"] && rows.count == 8)
        let muted = try #require(rows.first { $0["key"] as? String == "Muted" })
        #expect(isJSONBool(muted, "value") && isJSONBool(muted, "locked") && muted["source"] as? String == "vendor")
        #expect(rows.allSatisfy { isJSONBool($0, "locked") && $0["source"] is String && $0["type"] is String })
    }

    @Test("set, batch and incr write a program's keys by its schema; refusals are the library's sentences, a lock before a range")
    func writes() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        #expect(fixture.run("set", "Theme", "light").1.out == "Theme = light\n")
        let range = fixture.run("set", "Volume", "20")
        let volumeKey = try #require(HarnessAppPrefs(key: "x", store: InMemoryStore()).schema["Volume"])
        let problem = try #require(volumeKey.problem(with: 20))
        #expect(range.0 == 1 && range.1.err == PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: problem).description, "\(range.1.err)")
        let locked = fixture.run("set", "Level", "20")
        #expect(locked.0 == 1 && locked.1.err == PersistentPrefs.PrefsError.keyLocked(key: "Level").description, "\(locked.1.err)")
        let choice = fixture.run("set", "Theme", "purple")
        #expect(choice.0 == 1 && choice.1.err.hasPrefix(PersistentPrefs.PrefsError.invalidValue(key: "Theme", reason: "").description.prefix(20)))
        #expect(fixture.run("set", "Volume", "seven").0 == 2, "a value that does not parse is a usage error")
        // batch: lines parsed for the schema's types, written together.
        let (batched, out) = fixture.run("batch", input: ["Volume 3", "Name Ann Lee", "Since 2024-05-01T12:00:00Z", "# note", ""])
        #expect(batched == 0 && out.out == "Wrote 3 changes to \"Main\" in one batch.\n", "\(out.err)")
        let app = HarnessAppPrefs(key: "Main", store: fixture.store)
        #expect(app.volume == 3 && app.name == "Ann Lee" && app.since == Date(timeIntervalSince1970: 1_714_564_800) && app.theme == .light)
        let before = try fixture.stored()
        let refused = fixture.run("batch", input: ["Volume 4", "Level 3"])
        #expect(refused.0 == 1 && refused.1.err == PersistentPrefs.PrefsError.keyLocked(key: "Level").description)
        let bad = fixture.run("batch", input: ["Volume 4", "Volume 12"])
        #expect(bad.0 == 1 && bad.1.err.contains("not allowed"))
        #expect(NSDictionary(dictionary: try fixture.stored()).isEqual(to: before), "a refused batch writes nothing")
        // incr: the schema's integer keys, within their range.
        #expect(fixture.run("incr", "Volume", "2").1.out == "Volume = 5\n")
        #expect(fixture.run("incr", "Volume", "2", "--json").1.out == "{\"key\":\"Volume\",\"value\":7}\n")
        #expect(fixture.run("incr", "Volume", "5").1.err.contains("not allowed"))
        #expect(fixture.run("incr", "Level").1.err == PersistentPrefs.PrefsError.keyLocked(key: "Level").description)
        #expect(fixture.run("incr", "Name").0 == 2)
        #expect(HarnessAppPrefs(key: "Main", store: fixture.store).volume == 7)
    }

    @Test("reset removes the user's values of a program's set, so it reads its defaults; locked keys stay")
    func reset() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        _ = fixture.run("set", "Theme", "light")
        let (status, out) = fixture.run("reset", "--json")
        #expect(status == 0, "\(out.err)")
        let rows = try #require(try fixture.json(out.out) as? [[String: Any]])
        let theme = rows.first { $0["key"] as? String == "Theme" }
        #expect(theme?["value"] as? String == "dark" && theme?["source"] as? String == "vendor")
        #expect(rows.first { $0["key"] as? String == "Volume" }?["value"] as? Int == 5)
        #expect(try fixture.stored()["Volume"] == nil && fixture.stored()["Theme"] == nil)
        #expect(HarnessAppPrefs(key: "Main", store: fixture.store).volume == 5)
        let set = try HarnessSet.of(HarnessSession(rootKey: "Main", store: fixture.store))
        #expect(Set(Interactive.completionNames(set)) == ["Volume", "Name", "Theme", "Muted", "Since", "Level", "Nickname", "Accent"])
        #expect(Interactive.completionNames(try HarnessSet.of(HarnessSession(rootKey: "Main", store: InMemoryStore()))).contains("int"))
    }

    @Test("migrate runs the sample's steps on the sample's set only; a program's set is refused, unchanged")
    func migrate() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let before = try fixture.stored()
        for words in [["migrate"], ["migrate", "--dry-run"]] {
            let (status, out) = HarnessCommandTests.run(words, HarnessSession(rootKey: "Main", store: fixture.store))
            #expect(status == 1 && out.err.contains("only its program knows its migration steps"), "\(out.err)")
        }
        #expect(NSDictionary(dictionary: try fixture.stored()).isEqual(to: before))
    }

    @Test("watch NAME resolves names in the program's schema")
    func watch() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let session = HarnessSession(rootKey: "Main", store: fixture.store)
        let lines = Locked<[String]>([])
        let console = Console(out: { text in lines.withLock { $0.append(text) } }, err: { _ in })
        try WatchCommand.run(names: ["Volume"], json: true, session: session, console: console) {
            let app = HarnessAppPrefs(key: "Main", store: fixture.store)
            app.volume = 9
            app.name = "not watched"
            let end = Date().addingTimeInterval(5)
            while lines.withLock({ $0.isEmpty }), Date() < end { usleep(10_000) }
        }
        let printed = lines.withLock { $0 }
        #expect(printed.count == 1 && printed.first?.hasPrefix("{\"key\":\"Volume\",\"root\":\"Main\",") == true && printed.first?.contains(",\"value\":9}") == true, "\(printed)")
        #expect(throws: HarnessError.self) {
            try WatchCommand.run(names: ["int"], json: false, session: session, console: console, until: {})
        }
    }

    @Test("every command with output takes --json and prints JSON; booleans as true and false")
    func json() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        for words in [
            ["get", "Muted"], ["list"], ["list-keys"], ["describe", "Volume"], ["range", "Volume"], ["range", "Theme"],
            ["writable", "Muted"], ["schema-file"], ["set", "Name", "x"], ["incr", "Volume"], ["roots"], ["dump"], ["reset"],
        ] {
            let (status, out) = HarnessCommandTests.run(words + ["--json"], HarnessSession(rootKey: "Main", store: fixture.store))
            #expect(status == 0, "\(words): \(out.err)")
            #expect((try? fixture.json(out.out)) != nil, "\(words): \(out.out)")
        }
        let describe = try fixture.json(fixture.run("describe", "Volume", "--json").1.out) as? [String: Any]
        #expect(describe?["summary"] as? String == "Output volume")
        let range = try fixture.json(fixture.run("range", "Volume", "--json").1.out) as? [String: Any]
        #expect(range?["min"] as? Int == 0 && range?["max"] as? Int == 11 && range?["type"] as? String == "x")
        let writable = try fixture.json(fixture.run("writable", "Muted", "--json").1.out) as? [String: Any]
        #expect(isJSONBool(writable, "writable") && writable?["writable"] as? Bool == false)
        let file = try fixture.json(fixture.run("schema-file", "--json").1.out) as? [String: Any]
        #expect(file?["path"] as? String == fixture.schemaFile.path && isJSONBool(file, "exists") && file?["root"] as? String == "Main")
        #expect(fixture.run("schema-file").1.out == fixture.schemaFile.path + "\n")
        let jsonLines = ["schema-file", "list", "get Volume", "list-keys", "range Volume"].map {
            HarnessCommandTests.run(($0 + " --json").split(separator: " ").map(String.init), HarnessSession(rootKey: "Main", store: fixture.store)).1.out
        }
        for out in jsonLines {
            #expect(!out.contains("\\/") && out.hasSuffix("\n") && out.dropLast().split(separator: "\n").count == 1, "one JSON style, one line, slashes as they are: \(out)")
        }
        let huge = fixture.run("set", "Volume", "99999999999999999999")
        #expect(huge.0 == 2 && huge.1.err.contains("99999999999999999999 is outside the range of an integer (-9223372036854775808 to 9223372036854775807) for Volume"), "\(huge.1.err)")
        #expect(ValueFormatter.jsonText(["b": NSNumber(value: true)]) == "{\"b\":true}")
        #expect(ValueFormatter.text(NSNumber(value: false)) == "false")
    }

    @Test("the interactive screen shows a program's set: its schema file, keys, values and sources; the prompt takes its keys")
    func interactive() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let recorder = RecordingConsole(input: ["set Volume 3", "get Theme", "incr Volume 2", "quit"], terminal: true)
        let status = Interactive(session: HarnessSession(rootKey: "Main", store: fixture.store), console: recorder.console).run()
        #expect(status == 0, "\(recorder.err)")
        #expect(recorder.out.contains("schema file: \(fixture.schemaFile.path)") && !recorder.out.contains("Integer Value"))
        #expect(recorder.out.contains("Volume = 3") && recorder.out.contains("Volume = 5") && recorder.out.contains("dark"))
        #expect(recorder.out.contains("vendor \(fixture.vendorFile.path), locked"))
        #expect(HarnessAppPrefs(key: "Main", store: fixture.store).volume == 5)
    }

    @Test("a program's set whose file was damaged: reads say where the copy is and exit 1; a write says so, starts afresh and exits 0")
    func damagedFile() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let file = try fixture.store.fileURL(forRoot: "Main")
        let damaged = Data("<?xml version=\"1.0\"?><plist><dict><key>Vol".utf8)
        try damaged.write(to: file)
        // This process already holds the set (the fixture wrote it): read it again now rather than
        // when the watcher hears of the change.
        PersistentPrefs(key: "Main", store: fixture.store).flush()
        for words in [["get", "Volume"], ["list"], ["dump"], ["delete"]] {
            let (status, recorder) = HarnessCommandTests.run(words, HarnessSession(rootKey: "Main", store: fixture.store))
            #expect(status == 1 && recorder.out.isEmpty, "\(words): \(recorder.out)")
            #expect(recorder.err.contains("moved aside to \(file.path).corrupt-") && recorder.err.contains("starts it afresh"), "\(words): \(recorder.err)")
        }
        let copies = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).filter { $0.contains(".corrupt-") }
        #expect(copies.count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.folder.path + "/" + copies[0])) == damaged, "the copy is the file as it was")
        let (status, recorder) = fixture.run("set", "Volume", "3")
        #expect(status == 0 && recorder.out == "Volume = 3\n", "\(recorder.err)")
        #expect(recorder.err.hasPrefix("prefs-harness: warning: ") && recorder.err.contains(copies[0]) && recorder.err.contains("starts the set \"Main\" afresh"), "\(recorder.err)")
        let after = fixture.run("get", "Volume")
        #expect(after.0 == 0 && after.1.out == "3\n" && after.1.err.isEmpty, "written again: no more word of it")
    }

    @Test("optional keys are published with their kind and checked like any other; null makes them nil in set, batch and at the prompt")
    func optionalKeys() throws {
        let fixture = try AppFixture()
        defer { fixture.remove() }
        let schema = try #require(try PrefsSchema.load(from: fixture.schemaFile))
        let nickname = try #require(schema["Nickname"])
        #expect(nickname.kind == "string" && nickname.isOptional && nickname.type == "String?")
        let accent = try #require(schema["Accent"])
        #expect(accent.kind == "string" && accent.isOptional && accent.type == "Theme?" && accent.choices?.count == 3)
        #expect(schema["Volume"]?.isOptional == false)
        #expect(fixture.run("set", "Nickname", "Ann").0 == 0)
        #expect(HarnessAppPrefs(key: "Main", store: fixture.store).nickname == "Ann")
        let number = fixture.run("set", "Accent", "blue")
        #expect(number.0 == 1 && number.1.err.contains("\"Accent\" is not allowed"), "checked against its choices: \(number.1.err)")
        let removed = fixture.run("set", "Nickname", "null")
        #expect(removed.0 == 0 && removed.1.out == "Nickname = nil (removed)\n", "\(removed.1.err)")
        #expect(try fixture.stored()["Nickname"] == nil && HarnessAppPrefs(key: "Main", store: fixture.store).nickname == nil)
        let none = fixture.run("get", "Nickname")
        #expect(none.0 == 0 && none.1.out.isEmpty && none.1.err.contains("the program reads nil"), "\(none.1.err)")
        let noneJSON = try #require(try fixture.json(fixture.run("get", "Nickname", "--json").1.out) as? [String: Any])
        #expect(noneJSON["value"] is NSNull && noneJSON["key"] as? String == "Nickname")
        #expect(fixture.run("set", "Nickname", "'null'").0 == 0 && HarnessAppPrefs(key: "Main", store: fixture.store).nickname == "null", "quoted, it is the string")
        #expect(fixture.run("set", "Name", "null").0 == 0 && HarnessAppPrefs(key: "Main", store: fixture.store).name == "null", "a key that is not optional takes it as a value")
        let batch = fixture.run("batch", input: ["Accent dark", "Nickname null"])
        #expect(batch.0 == 0, "\(batch.1.err)")
        let app = HarnessAppPrefs(key: "Main", store: fixture.store)
        #expect(app.accent == .dark && app.nickname == nil)
        let bare = fixture.run("batch", input: ["Nickname"])
        #expect(bare.0 == 1 && bare.1.err.contains("Nickname has no value (write '' for an empty string, null to make it nil)"), "\(bare.1.err)")
        #expect(try fixture.stored()["Nickname"] == nil, "a refused batch writes nothing")
        let recorder = RecordingConsole(input: ["set Accent null"])
        #expect(Interactive(session: HarnessSession(rootKey: "Main", store: fixture.store), console: recorder.console).run() == 0)
        #expect(HarnessAppPrefs(key: "Main", store: fixture.store).accent == nil && recorder.out.contains("Accent = nil (removed)"))
    }

    @Test("the sample's set keeps its aliases and defaults, with sources")
    func sample() throws {
        let session = HarnessSession(rootKey: "Main", store: InMemoryStore())
        let got = HarnessCommandTests.run(["get", "int"], session)
        #expect(got.1.out == "12345\n" && got.1.err.contains("the default declared in code"))
        _ = HarnessCommandTests.run(["set", "int", "7"], session)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(HarnessCommandTests.run(["list", "--json"], session).1.out.utf8)) as? [[String: Any]])
        #expect(rows.first?["key"] as? String == "Integer Value" && rows.first?["value"] as? Int == 7 && rows.first?["source"] as? String == "user")
        #expect(!HarnessCommandTests.run(["list"], session).1.out.contains("Schema file"))
    }
}

/// The shape of the sample's `AudioPrefs` (what `prefs-test-helper audio-set` writes).
private enum AudioPrefsShape {
    static var schema: PrefsSchema { AudioPrefs(key: "AppPrefs", store: InMemoryStore()).schema }
}

/// The same app's set in a suite, with a site file over `XDG_CONFIG_DIRS` that sets one key and
/// locks another, driven through the built `prefs-harness`.
@Suite("Harness from outside: a program's set in a suite, with a site layer", .linuxSuiteFiles, waitLimit)
struct HarnessAnySetProcessTests {
    @Test("get, list, set, incr, batch, reset and defaults write on AudioPrefs in a suite; locks before ranges")
    func suite() throws {
        let home = TemporaryDirectory()
        let site = TemporaryDirectory()
        defer {
            home.remove()
            site.remove()
        }
        var child = ChildProcess(configHome: home.path)
        child.environment = ["XDG_CONFIG_DIRS": site.path]
        #expect(try child.run("prefs-test-helper", ["audio-set", "MyApp", "AppPrefs", "volume", "7"]).stdout.contains("ok"))
        let layer: [String: Any] = ["AppPrefs": ["Theme": "dark", "Volume": 4, "Muted": true, "PersistentPrefs.locked": ["Muted"]]]
        let siteFile = site.path + "/MyApp.plist"
        try PropertyListSerialization.data(fromPropertyList: layer, format: .xml, options: 0).write(to: URL(fileURLWithPath: siteFile))
        func run(_ arguments: String..., input: String? = nil) throws -> ChildProcess.Output {
            try child.run("prefs-harness", ["--suite", "MyApp", "--key", "AppPrefs"] + arguments, input: input)
        }
        let volume = try run("get", "Volume")
        #expect(volume.status == 0 && volume.stdout == "7\n", "\(volume)")
        let theme = try run("get", "Theme")
        #expect(theme.stdout == "dark\n" && theme.stderr.contains("site defaults file \(siteFile)"), "\(theme)")
        let muted = try #require(try JSONSerialization.jsonObject(with: Data(try run("get", "Muted", "--json").stdout.utf8)) as? [String: Any])
        #expect(muted["value"] as? Bool == true && muted["locked"] as? Bool == true && muted["source"] as? String == "site" && muted["file"] as? String == siteFile)
        let list = try run("list")
        #expect(list.stdout.hasPrefix("Schema file: \(home.path)/MyApp.schemas/AppPrefs~") && list.stdout.contains("site \(siteFile), locked"), "\(list)")
        let path = try run("schema-file").stdout
        #expect(path.hasPrefix(home.path + "/MyApp.schemas/AppPrefs~") && path.hasSuffix(".json\n"))
        let locked = try run("set", "Muted", "false")
        #expect(locked.status == 1 && locked.stderr == "prefs-harness: \(PersistentPrefs.PrefsError.keyLocked(key: "Muted").description)\n", "\(locked)")
        #expect(try run("incr", "Volume", "2").stdout == "Volume = 9\n")
        #expect(try run("batch", input: "Volume 1\nTheme light\n").status == 0)
        #expect(try run("get", "Theme").stdout == "light\n")
        let type = try child.run("prefs-harness", ["defaults", "read-type", "MyApp", "AppPrefs", "--json"])
        let typeObject = try JSONSerialization.jsonObject(with: Data(type.stdout.utf8)) as? [String: Any]
        #expect(typeObject?["type"] as? String == "dictionary", "\(type)")
        #expect(try run("reset").status == 0)
        let after = try run("get", "Volume")
        #expect(after.stdout == "4\n" && after.stderr.contains("site"), "reset reveals the site default: \(after)")
        // defaults write: a locked key is reported as locked, even with a value outside the schema.
        for value in ["20", "1"] {
            let write = try child.run("prefs-harness", ["defaults", "write", "MyApp", "AppPrefs", "-dict-add", "Muted", "-int", value])
            #expect(write.status == 1 && write.stderr.contains(PersistentPrefs.PrefsError.keyLocked(key: "Muted").description), "\(write)")
        }
        let ranged = try child.run("prefs-harness", ["defaults", "write", "MyApp", "AppPrefs", "-dict-add", "Volume", "-int", "20"])
        let volumeKey = try #require(AudioPrefsShape.schema["Volume"])
        let problem = try #require(volumeKey.problem(with: 20))
        #expect(ranged.status == 1 && ranged.stderr.contains(PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: problem).description), "\(ranged)")
    }

    @Test("a mistyped suite or root key is never the sample's set: reads say what is there and exit 1, writes change nothing")
    func mistypedNames() throws {
        let home = TemporaryDirectory()
        defer { home.remove() }
        let child = ChildProcess(configHome: home.path)
        #expect(try child.run("prefs-test-helper", ["audio-set", "MyApp", "AppPrefs", "volume", "7"]).stdout.contains("ok"))
        let before = try FileManager.default.contentsOfDirectory(atPath: home.path).sorted()
        let suiteBytes = try Data(contentsOf: URL(fileURLWithPath: home.path + "/MyApp.plist"))

        let wrongSuite = try child.run("prefs-harness", ["--suite", "myapp", "--key", "AppPrefs", "list"])
        #expect(wrongSuite.status == 1 && wrongSuite.stdout.isEmpty, "\(wrongSuite)")
        #expect(wrongSuite.stderr.contains("No schema file for the root key \"AppPrefs\" in the UserDefaults suite \"myapp\": looked for \(home.path)/myapp.schemas/AppPrefs~"), "\(wrongSuite)")
        #expect(wrongSuite.stderr.contains("holds no sets (did you mean --suite MyApp?)"), "\(wrongSuite)")

        let wrongKey = try child.run("prefs-harness", ["--suite", "MyApp", "--key", "Appprefs", "get", "Volume"])
        #expect(wrongKey.status == 1 && wrongKey.stdout.isEmpty, "\(wrongKey)")
        #expect(wrongKey.stderr.contains("It holds the set \"AppPrefs\" (did you mean --key AppPrefs?)"), "\(wrongKey)")
        #expect(wrongKey.stderr.contains("--sample"), "\(wrongKey)")

        for arguments in [["--suite", "myapp", "--key", "AppPrefs", "set", "int", "5"], ["--suite", "MyApp", "--key", "Appprefs", "set", "int", "5"]] {
            let write = try child.run("prefs-harness", arguments)
            #expect(write.status == 1 && write.stderr.contains("No schema file"), "\(write)")
        }
        let piped = try child.run("prefs-harness", ["--suite", "MyApp", "--key", "AppPrefs"], input: "key Appprefs\nget Volume\n")
        #expect(piped.status == 1 && piped.stdout == "7\n", "the refused key leaves the session on its set: \(piped)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).sorted() == before, "no suite file or schema folder made")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.path + "/MyApp.plist")) == suiteBytes)

        // A root key that holds a set but has no schema file is named as such.
        #expect(try child.run("prefs-harness", ["defaults", "write", "MyApp", "Old", "-dict", "Int Value", "-int", "7"]).status == 0)
        let old = try child.run("prefs-harness", ["--suite", "MyApp", "--key", "Old", "list"])
        #expect(old.status == 1 && old.stderr.contains("A set is stored under \"Old\", but no program has written a schema file for it; the other sets there are \"AppPrefs\""), "\(old)")
        let folder = try child.run("prefs-harness", ["--store-dir", home.path + "/nowhere", "--key", "X", "get", "int"])
        #expect(folder.status == 1 && folder.stderr.contains("The folder \(home.path)/nowhere does not exist."), "\(folder)")

        // The sample's own root key, named, and --sample for any other.
        #expect(try child.run("prefs-harness", ["--suite", "MyApp", "--key", "SamplePrefs", "get", "int"]).stdout == "12345\n")
        let chosen = try child.run("prefs-harness", ["--suite", "MyApp", "--key", "Scratch", "--sample", "set", "int", "5"])
        #expect(chosen.status == 0, "\(chosen)")
        #expect(try child.run("prefs-harness", ["--suite", "MyApp", "--key", "Scratch", "get", "int"]).stdout == "5\n", "its schema file now says it is the sample's")
    }

    @Test("a forgotten --key on a suite that holds other sets is refused by every command, naming the sets, as a mistyped root key is")
    func forgottenKey() throws {
        let home = TemporaryDirectory()
        defer { home.remove() }
        let child = ChildProcess(configHome: home.path)
        #expect(try child.run("prefs-test-helper", ["audio-set", "MyApp", "AppPrefs", "volume", "7"]).stdout.contains("ok"))
        let suiteBytes = try Data(contentsOf: URL(fileURLWithPath: home.path + "/MyApp.plist"))
        let commands = [
            ["list"], ["get", "Volume"], ["get", "int"], ["set", "int", "5"], ["set", "Volume", "3"], ["reset"], ["incr", "int"], ["delete"], ["dump"],
            ["list-keys"], ["describe", "Volume"], ["range", "Volume"], ["writable", "Volume"], ["schema-file"], ["migrate"],
        ]
        for words in commands {
            let result = try child.run("prefs-harness", ["--suite", "MyApp"] + words)
            #expect(result.status == 1 && result.stdout.isEmpty, "\(words): \(result)")
            #expect(result.stderr.contains("No --key was given, so the sample's set \"SamplePrefs\" was taken, and it is not there."), "\(words): \(result.stderr)")
            #expect(result.stderr.contains("The UserDefaults suite \"MyApp\" holds the set \"AppPrefs\" (did you mean --key AppPrefs?)."), "\(words): \(result.stderr)")
        }
        let batch = try child.run("prefs-harness", ["--suite", "MyApp", "batch"], input: "int 4\n")
        #expect(batch.status == 1 && batch.stderr.contains("did you mean --key AppPrefs?"), "\(batch)")
        let piped = try child.run("prefs-harness", ["--suite", "MyApp"], input: "list\nget Volume\n")
        #expect(piped.status == 1 && piped.stdout.isEmpty && piped.stderr.contains("did you mean --key AppPrefs?"), "the screen's commands too: \(piped)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.path + "/MyApp.plist")) == suiteBytes, "nothing was written")
        // The store-wide commands need no root key.
        #expect(try child.run("prefs-harness", ["--suite", "MyApp", "roots"]).stdout == "AppPrefs\n")
        // Named, the sample's set is used as ever; so is the sample's own suite, and an empty one.
        #expect(try child.run("prefs-harness", ["--suite", "MyApp", "--sample", "set", "int", "5"]).status == 0)
        #expect(try child.run("prefs-harness", ["--suite", "MyApp", "get", "int"]).stdout == "5\n", "once the sample's set is there, it is taken")
        #expect(try child.run("prefs-harness", ["--suite", "Fresh", "get", "int"]).stdout == "12345\n")
    }
}

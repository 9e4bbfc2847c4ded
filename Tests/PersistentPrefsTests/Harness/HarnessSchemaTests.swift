import Foundation
import PersistentPrefs
import PrefsHarnessKit
import Testing

/// A `--store-dir` folder holding the set "Player" and a schema file for it, driven through the
/// harness in this process; and the same set in a suite file named by path, whose schemas live in
/// its `<suite>.schemas` folder.
private struct SchemaFixture {
    let directory = TemporaryDirectory()
    var store: PlistFileStore { PlistFileStore(directory: URL(fileURLWithPath: directory.path)) }
    var schemaFile: URL { store.schemaFileURL(forRoot: "Player") }
    var setFile: URL { (try? store.fileURL(forRoot: "Player")) ?? URL(fileURLWithPath: "/nonexistent") }
    /// The suite file named by path, with the set "Player" in it.
    var suiteFile: String { directory.path + "/suite/player.plist" }
    var suiteSchemaFile: URL { PreferencesFile(url: URL(fileURLWithPath: suiteFile)).schemaFileURL(forRoot: "Player") }

    /// A schema file for "Player" whose key Volume is described by `volume` (a JSON object's text).
    static func schema(volume: String = #"{"kind": "integer", "range": {"min": 0, "max": 11}}"#, version: String? = "0", className: String = "Player") -> Data {
        let versionField = version.map { "\"schemaVersion\": \($0), " } ?? ""
        return Data(
            """
            { "format": 1, "root": "Player", "class": "\(className)", \(versionField)"keys": {
              "Volume": \(volume),
              "Theme": { "kind": "string", "choices": ["light", "dark", "system"] },
              "Muted": { "kind": "boolean" } } }
            """.utf8)
    }

    /// Stores `values` as the set, and `schema` as its schema file, in the folder and in the suite.
    func write(set values: [String: Any] = ["Volume": 5, "Theme": "light"], schema: Data) throws {
        try store.save(values, root: "Player")
        try FileManager.default.createDirectory(atPath: directory.path + "/suite", withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: ["Player": values], format: .xml, options: 0).write(to: URL(fileURLWithPath: suiteFile))
        for file in [schemaFile, suiteSchemaFile] {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: file)
            try schema.write(to: file)
        }
    }

    /// Runs a harness command on the set "Player" of the folder.
    func run(_ words: String...) -> (Int32, RecordingConsole) {
        HarnessCommandTests.run(words, HarnessSession(rootKey: "Player", store: store))
    }

    /// Runs `defaults WORDS…` with the folder as the store (`--store-dir`).
    func defaults(_ words: String...) -> (Int32, RecordingConsole) {
        DefaultsCommandTests.run(words, storeDir: directory.path)
    }

    func stored() throws -> [String: Any]? { try store.load(root: "Player") }
}

@Suite("Harness: schemas fail closed")
struct HarnessSchemaTests {
    /// Schema files no tool can check a value against.
    static let damaged: [(String, Data)] = [
        ("not JSON", Data("{ \"format\": 1, ".utf8)),
        ("an array", Data("[1, 2, 3]".utf8)),
        ("keys of the wrong type", Data(#"{"format": 1, "root": "Player", "keys": {"Volume": "integer"}}"#.utf8)),
        ("keys not an object", Data(#"{"format": 1, "root": "Player", "keys": ["Volume"]}"#.utf8)),
        ("format 2", Data(#"{"format": 2, "root": "Player", "keys": {}}"#.utf8)),
        ("format missing", Data(#"{"root": "Player", "keys": {}}"#.utf8)),
        ("format a string", Data(#"{"format": "1", "root": "Player", "keys": {}}"#.utf8)),
        ("20 MB", Data(count: 20 << 20)),
        ("5,000 deep", Data((String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)).utf8)),
        ("100,000 deep", Data((String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)).utf8)),
        ("NaN", Data(#"{"format": 1, "root": "Player", "keys": {"Volume": {"kind": "integer", "range": {"min": NaN}}}}"#.utf8)),
        ("schemaVersion a string", SchemaFixture.schema(version: "\"1\"")),
    ]

    /// Key descriptions whose rule cannot be understood: each makes the whole file unusable.
    static let malformed: [(String, String)] = [
        ("range as strings", #"{"kind": "integer", "range": {"min": "0", "max": "11"}}"#),
        ("range as a number", #"{"kind": "integer", "range": 11}"#),
        ("choices as a string", #"{"kind": "integer", "choices": "0, 1, 2"}"#),
        ("an unknown kind", #"{"kind": "quux", "range": {"min": 0, "max": 11}}"#),
        ("a kind of the wrong type", #"{"kind": 5, "range": {"min": 0, "max": 11}}"#),
        ("an integer minimum past Int64", #"{"kind": "integer", "range": {"min": 9.3e18, "max": 9.4e18}}"#),
        ("integer bounds of ±1e300", #"{"kind": "integer", "range": {"min": -1e300, "max": 1e300}}"#),
        ("a fractional integer bound", #"{"kind": "integer", "range": {"min": 0.5}}"#),
        ("a range on a boolean", #"{"kind": "boolean", "range": {"min": 0}}"#),
        ("a choice of another kind", #"{"kind": "integer", "choices": [1, "two"]}"#),
    ]

    @Test("a damaged schema file refuses set and defaults write, naming the file; the set and the suite stay byte-identical", arguments: damaged)
    func damagedSchema(_ label: String, _ contents: Data) throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        try fixture.write(schema: contents)
        try expectRefused(fixture, naming: nil, label)
    }

    @Test("a rule the harness cannot understand refuses the write, naming the schema file and the key", arguments: malformed)
    func malformedRule(_ label: String, _ volume: String) throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        try fixture.write(schema: SchemaFixture.schema(volume: volume))
        try expectRefused(fixture, naming: "\"Volume\"", label)
        #expect(throws: PersistentPrefs.PrefsError.self, "\(label)") { try PrefsSchema(jsonData: SchemaFixture.schema(volume: volume)) }
    }

    @Test("a schema file that is a FIFO, /dev/zero, or a link to nothing is refused at once, never read")
    func specialFiles() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        try fixture.write(schema: SchemaFixture.schema())
        for file in [fixture.schemaFile, fixture.suiteSchemaFile] {
            try FileManager.default.removeItem(at: file)
            #expect(mkfifo(file.path, 0o600) == 0)
        }
        try expectRefused(fixture, naming: "not a regular file", "FIFO")
        for file in [fixture.schemaFile, fixture.suiteSchemaFile] {
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: "/dev/zero")
        }
        try expectRefused(fixture, naming: "not a regular file", "/dev/zero")
        for file in [fixture.schemaFile, fixture.suiteSchemaFile] {
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: fixture.directory.path + "/nothing")
        }
        try expectRefused(fixture, naming: "a link to nothing", "a link to nothing")
    }

    /// Every write road refuses: `set` of a valid and an invalid value, `defaults write` of a
    /// known key (valid, out of range, of another type), of a choice, and of an unknown key; the
    /// message names the schema file (and `detail`); nothing changes.
    private func expectRefused(_ fixture: SchemaFixture, naming detail: String?, _ label: String) throws {
        let setBefore = try Data(contentsOf: fixture.setFile)
        let suiteBefore = try Data(contentsOf: URL(fileURLWithPath: fixture.suiteFile))
        func check(_ result: (Int32, RecordingConsole), schema: URL, _ what: String) {
            let (status, console) = result
            #expect(status == 1, "\(label), \(what): \(console.out) \(console.err)")
            #expect(console.err.contains("The schema file \(schema.path) cannot be used"), "\(label), \(what): \(console.err)")
            if let detail { #expect(console.err.contains(detail), "\(label), \(what): \(console.err)") }
            #expect(!console.err.contains("preferences store") && !console.err.contains("-quux"), "\(label), \(what): \(console.err)")
        }
        for (key, value) in [("Volume", "7"), ("Volume", "99"), ("Volume", "abc"), ("Theme", "purple"), ("Nope", "1")] {
            check(fixture.run("set", key, value), schema: fixture.schemaFile, "set \(key) \(value)")
        }
        let writes: [[String]] = [["Volume", "-int", "99"], ["Volume", "-int", "7"], ["Volume", "-string", "abc"], ["Theme", "purple"], ["Nope", "1"]]
        for write in writes {
            check(DefaultsCommandTests.run(["write", "Player"] + write, storeDir: fixture.directory.path), schema: fixture.schemaFile, "defaults write \(write)")
            let suiteWrite = ["write", fixture.suiteFile, "Player", "-dict-add"] + write
            check(DefaultsCommandTests.run(suiteWrite), schema: fixture.suiteSchemaFile, "defaults \(suiteWrite)")
        }
        #expect(try Data(contentsOf: fixture.setFile) == setBefore, "\(label): the set changed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.suiteFile)) == suiteBefore, "\(label): the suite changed")
    }

    @Test("without a kind, a range and choices still refuse what is outside them, and a value of another type")
    func rulesWithoutKind() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        let schema = Data(
            #"{"format": 1, "root": "Player", "keys": {"Volume": {"range": {"min": 0, "max": 11}}, "Theme": {"choices": ["light", "dark"]}}}"#.utf8)
        try fixture.write(schema: schema)
        for (key, value, reason) in [("Volume", "99", "99 is outside the range 0...11"), ("Volume", "abc", "cannot be compared with the minimum, 0"), ("Theme", "purple", "not one of")] {
            let (status, console) = fixture.run("set", key, value)
            #expect(status == 1 && console.err.contains(reason), "\(key) \(value): \(console.err)")
        }
        let (status, console) = fixture.defaults("write", "Player", "Volume", "-string", "abc")
        #expect(status == 1 && console.err.contains("cannot be compared"), "\(console.err)")
        #expect(fixture.run("set", "Volume", "7").0 == 0)
        #expect(fixture.run("set", "Theme", "dark").0 == 0)
        #expect(try fixture.stored()?["Volume"] as? Int == 7)
    }

    @Test("bounds past Int64 compare exactly: never wrapped, never misreported")
    func wideBounds() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        // Integer bounds in UInt64 (the library writes a UInt64 range so), real bounds of ±1e300.
        try fixture.write(schema: SchemaFixture.schema(volume: #"{"kind": "integer", "range": {"min": 9223372036854775808, "max": 18446744073709551615}}"#))
        let (status, console) = fixture.run("set", "Volume", "99")
        #expect(status == 1 && console.err.contains("99 is outside the range 9223372036854775808...18446744073709551615"), "\(console.err)")
        try fixture.write(schema: SchemaFixture.schema(volume: #"{"kind": "integer", "range": {"min": -9223372036854775808, "max": 9223372036854775807}}"#))
        #expect(fixture.run("set", "Volume", "-9223372036854775808").0 == 0)
        try fixture.write(schema: SchemaFixture.schema(volume: #"{"kind": "real", "range": {"min": -1e300, "max": 1e300}}"#))
        #expect(fixture.run("set", "Volume", "7").0 == 0)
        let above = fixture.run("set", "Volume", "1e301")
        #expect(above.0 == 1 && above.1.err.contains("1e+301 is outside the range -1e+300...1e+300"), "\(above.1.err)")
    }

    @Test("empty choices refuse every value with a sentence that says so")
    func emptyChoices() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        try fixture.write(schema: SchemaFixture.schema(volume: #"{"kind": "integer", "choices": []}"#))
        let (status, console) = fixture.run("set", "Volume", "5")
        #expect(status == 1 && console.err.contains("the schema lists no value that Volume may hold (its choices are empty)"), "\(console.err)")
        #expect(!console.err.contains("is not one of )"))
    }

    @Test("set writes a versioned set at its schema's version; a schema without a version leaves the stamp as it is")
    func versionedSets() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        let stamp = PersistentPrefs.schemaVersionKey
        // The library's own schema file records the version.
        let written = PrefsSchema(root: "Player", className: "Player", schemaVersion: 3, keys: [PrefsSchema.Key(name: "Theme", type: "String", kind: "string")])
        #expect((try JSONSerialization.jsonObject(with: written.jsonData) as? [String: Any])?["schemaVersion"] as? Int == 3)
        #expect(try PrefsSchema(jsonData: written.jsonData).recordsSchemaVersion)

        try fixture.write(set: ["Theme": "light", stamp: 1], schema: SchemaFixture.schema(version: "1"))
        let same = fixture.run("set", "Theme", "dark")
        #expect(same.0 == 0 && same.1.out == "Theme = dark\n", "\(same.1.err)")
        #expect(try fixture.stored()?["Theme"] as? String == "dark" && fixture.stored()?[stamp] as? Int == 1)

        try fixture.write(set: ["Theme": "light", stamp: 4], schema: SchemaFixture.schema(version: nil))
        #expect(try !PrefsSchema(jsonData: SchemaFixture.schema(version: nil)).recordsSchemaVersion)
        #expect(fixture.run("set", "Theme", "dark").0 == 0, "a schema without a version refuses no version")
        #expect(try fixture.stored()?["Theme"] as? String == "dark" && fixture.stored()?[stamp] as? Int == 4)

        try fixture.write(set: ["Theme": "light", stamp: 2], schema: SchemaFixture.schema(version: "1"))
        let newer = fixture.run("set", "Theme", "dark")
        #expect(newer.0 == 1 && newer.1.err.contains("stored at schema version 2, newer than the version its schema file"), "\(newer.1.err)")
        try fixture.write(set: ["Theme": "light", stamp: 1], schema: SchemaFixture.schema(version: "2"))
        let older = fixture.run("set", "Theme", "dark")
        #expect(older.0 == 1 && older.1.err.contains("stored at schema version 1, older than the version its schema file"), "\(older.1.err)")
        #expect(try fixture.stored()?["Theme"] as? String == "light" && fixture.stored()?[stamp] as? Int == 1)

        // A set not stored yet is stamped with the schema's version, as its program would stamp it.
        try fixture.store.remove(root: "Player")
        #expect(fixture.run("set", "Theme", "dark").0 == 0)
        #expect(try fixture.stored()?[stamp] as? Int == 2)
    }

    @Test("a program's schema that names the class SamplePrefs is checked as the program's; the sample's own set stays the sample's")
    func sampleNotMistaken() throws {
        let fixture = SchemaFixture()
        defer { fixture.directory.remove() }
        try fixture.write(schema: SchemaFixture.schema(className: "SamplePrefs"))
        let (status, console) = fixture.run("set", "Volume", "99")
        let problem = try #require(PrefsSchema.load(from: fixture.schemaFile)?["Volume"]?.problem(with: 99))
        #expect(status == 1 && console.err == PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: problem).description, "\(console.err)")
        #expect(fixture.run("set", "int", "5").1.err.contains("unknown key 'int'"), "the sample's aliases are the sample's only")
        #expect(try fixture.stored()?["Volume"] as? Int == 5)

        // The sample's own set: its first write leaves the sample's schema file, and later writes
        // still take the sample's road (its aliases and value syntax).
        let session = HarnessSession(rootKey: "SamplePrefs", store: fixture.store)
        #expect(HarnessCommandTests.run(["set", "int", "5"], session).0 == 0)
        #expect(FileManager.default.fileExists(atPath: fixture.store.schemaFileURL(forRoot: "SamplePrefs").path))
        let array = HarnessCommandTests.run(["set", "array", "a, b"], session)
        #expect(array.0 == 0 && array.1.out == "Array Value = a, b\n", "\(array.1.err)")
    }

    @Test("across processes, on a suite by name: set writes a versioned set; defaults write refuses a damaged schema", .linuxSuiteFiles, waitLimit)
    func suiteProcesses() throws {
        let (child, home) = ChildProcess.inTemporaryConfigHome()
        defer { home.remove() }
        let suite = URL(fileURLWithPath: home.path + "/player.plist")
        let schemaFile = PreferencesFile(url: suite).schemaFileURL(forRoot: "Player")
        let set: [String: Any] = ["Volume": 5, "Theme": "light", PersistentPrefs.schemaVersionKey: 1]
        try PropertyListSerialization.data(fromPropertyList: ["Player": set], format: .xml, options: 0).write(to: suite)
        try FileManager.default.createDirectory(at: schemaFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try SchemaFixture.schema(version: "1").write(to: schemaFile)

        let written = try child.run("prefs-harness", ["--suite", "player", "--key", "Player", "set", "Theme", "dark"])
        #expect(written.status == 0 && written.stdout == "Theme = dark\n", "\(written)")
        let read = try child.run("prefs-harness", ["defaults", "read", "player", "Player"])
        #expect(read.stdout.contains("Theme = dark;") && read.stdout.contains("\"PersistentPrefs.schemaVersion\" = 1;"), "\(read)")

        try Data(#"{"format": 1, "root": "Player", "keys": {"Volume": {"kind": "integer", "range": {"min": "0"}}}}"#.utf8).write(to: schemaFile)
        let before = try Data(contentsOf: suite)
        for write in [["-int", "99"], ["-string", "abc"]] {
            let refused = try child.run("prefs-harness", ["defaults", "write", "player", "Player", "-dict-add", "Volume"] + write)
            #expect(refused.status == 1 && refused.stderr.contains("The schema file \(schemaFile.path) cannot be used"), "\(refused)")
        }
        #expect(try Data(contentsOf: suite) == before)
    }
}

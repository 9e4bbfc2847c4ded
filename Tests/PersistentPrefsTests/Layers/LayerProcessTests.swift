import Foundation
import PersistentPrefs
import Testing

/// Site layers over `$XDG_CONFIG_DIRS`, and the harness's schema verbs, driven as an
/// administrator and a user would: files in folders, and processes reading and writing.
private struct SiteFixture {
    let home: TemporaryDirectory
    let site1: TemporaryDirectory
    let site2: TemporaryDirectory
    let child: ChildProcess

    init() {
        home = TemporaryDirectory()
        site1 = TemporaryDirectory()
        site2 = TemporaryDirectory()
        var child = ChildProcess(configHome: home.path)
        child.environment = ["XDG_CONFIG_DIRS": "\(site1.path):\(site2.path)"]
        self.child = child
    }

    /// Writes `top` as the suite's file in a site folder.
    func write(_ top: [String: Any], suite: String, in site: TemporaryDirectory) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0)
        try data.write(to: URL(fileURLWithPath: "\(site.path)/\(suite).plist"), options: .atomic)
    }

    func harness(_ arguments: [String]) throws -> ChildProcess.Output {
        try child.run("prefs-harness", arguments)
    }

    func remove() {
        home.remove()
        site1.remove()
        site2.remove()
    }
}

@Suite("Layers from outside: site files over XDG_CONFIG_DIRS, locks in every tool", waitLimit)
struct LayerProcessTests {
    @Test("the first folder of XDG_CONFIG_DIRS wins, a lock in a later one wins over it, and the user's value over both unless locked", .linuxSuiteFiles)
    func siteOrder() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        try fixture.write(["AudioPrefs": ["Volume": 2, "Device": "site1"]], suite: "audio", in: fixture.site1)
        try fixture.write(["AudioPrefs": ["Volume": 9, "Device": "site2", "Theme": "dark", "PersistentPrefs.locked": ["Volume"]]], suite: "audio", in: fixture.site2)
        let read = try fixture.child.run("prefs-test-helper", ["audio-read", "audio", "AudioPrefs"])
        #expect(read.stdout.contains("volume=9 theme=dark muted=false device=site1 locked=[\"Volume\"] forced=false problems=0"), "\(read)")
        let written = try fixture.child.run("prefs-test-helper", ["audio-set", "audio", "AudioPrefs", "device", "mine"])
        #expect(written.stdout.contains("ok"))
        let refused = try fixture.child.run("prefs-test-helper", ["audio-set", "audio", "AudioPrefs", "volume", "3"])
        #expect(refused.stdout.contains("is locked by the system administrator"), "\(refused)")
        let after = try fixture.child.run("prefs-test-helper", ["audio-read", "audio", "AudioPrefs"])
        #expect(after.stdout.contains("volume=9 theme=dark muted=false device=mine"), "\(after)")
    }

    @Test("prefs-harness set, reset and defaults write, delete and import refuse a locked key; nothing changes", .linuxSuiteFiles)
    func harnessRefusals() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        try fixture.write(
            ["SamplePrefs": ["Integer Value": 42, "PersistentPrefs.locked": ["Integer Value"]], "PersistentPrefs.locked": ["Kiosk"]],
            suite: "s", in: fixture.site1)
        let set = try fixture.harness(["--suite", "s", "set", "int", "5"])
        #expect(set.status == 1 && set.stderr.contains("\"Integer Value\" is locked"), "\(set)")
        let get = try fixture.harness(["--suite", "s", "get", "int"])
        #expect(get.stdout == "42\n" && get.stderr.contains("locked"), "\(get)")
        let list = try fixture.harness(["--suite", "s", "list"])
        #expect(list.stdout.contains("42  ") && list.stdout.contains("site \(fixture.site1.path)/s.plist, locked"), "\(list)")
        #expect(try fixture.harness(["--suite", "s", "writable", "int"]).stdout == "false\n")
        #expect(try fixture.harness(["--suite", "s", "writable", "string"]).stdout == "true\n")
        #expect(try fixture.harness(["--suite", "s", "set", "string", "free"]).status == 0)
        #expect(try fixture.harness(["--suite", "s", "reset"]).status == 0, "reset leaves the locked key alone")
        let before = try Data(contentsOf: URL(fileURLWithPath: fixture.home.path + "/s.plist"))
        for arguments in [
            ["defaults", "write", "s", "Kiosk", "-int", "1"],
            ["defaults", "write", "s", "SamplePrefs", "-dict-add", "Integer Value", "-int", "7"],
        ] {
            let output = try fixture.harness(arguments)
            #expect(output.status == 1 && output.stderr.contains("is locked by the system administrator"), "\(arguments): \(output)")
        }
        let imported = fixture.home.path + "/import.plist"
        try PropertyListSerialization.data(fromPropertyList: ["SamplePrefs": ["Integer Value": 7]], format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: imported))
        let importing = try fixture.harness(["defaults", "import", "s", imported])
        #expect(importing.status == 1 && importing.stderr.contains("is locked"), "\(importing)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.home.path + "/s.plist")) == before, "a refused write changed the file")
        #expect(try fixture.harness(["defaults", "write", "s", "Other", "-int", "1"]).status == 0)
    }

    @Test("a value stored before the lock stays: deleting the set or the suite that holds it is refused", .linuxSuiteFiles)
    func deleteRefused() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        #expect(try fixture.harness(["--suite", "d", "set", "int", "1"]).status == 0)
        try fixture.write(["SamplePrefs": ["PersistentPrefs.locked": ["Integer Value"]]], suite: "d", in: fixture.site2)
        let file = URL(fileURLWithPath: fixture.home.path + "/d.plist")
        let before = try Data(contentsOf: file)
        for arguments in [["--suite", "d", "delete"], ["defaults", "delete", "d"], ["defaults", "delete", "d", "SamplePrefs"]] {
            let output = try fixture.harness(arguments)
            #expect(output.status == 1 && output.stderr.contains("\"Integer Value\" is locked"), "\(arguments): \(output)")
        }
        #expect(try Data(contentsOf: file) == before)
        let get = try fixture.harness(["--suite", "d", "get", "int"])
        #expect(get.stdout == "12345\n" && get.stderr.contains("locked"), "the lock gives no value: the declared default is read (\(get))")
    }

    @Test("the harness's schema verbs answer as gsettings does for the same schema")
    func schemaVerbs() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        let store = fixture.home.path + "/store"
        #expect(try fixture.child.run("prefs-test-helper", ["audio-set", store, "Audio", "volume", "7"]).stdout.contains("ok"))
        func run(_ arguments: String...) throws -> ChildProcess.Output {
            try fixture.harness(["--store-dir", store, "--key", "Audio"] + arguments)
        }
        #expect(try run("list-keys").stdout == "Device\nMuted\nTheme\nVolume\n")
        #expect(try run("describe", "Volume").stdout == "Output volume, 0 to 11\n")
        // The type as list shows it; gsettings' exact form with --gsettings.
        #expect(try run("range", "Volume").stdout == "range Int 0 11\n")
        #expect(try run("range", "Volume", "--gsettings").stdout == "range x 0 11\n")
        #expect(try run("range", "Theme").stdout == "enum\n'light'\n'dark'\n'system'\n")
        #expect(try run("range", "Device").stdout == "type String\n")
        #expect(try run("range", "Device", "--gsettings").stdout == "type s\n")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(try run("range", "Volume", "--json").stdout.utf8)) as? [String: Any])
        #expect(json["type"] as? String == "x" && json["typeName"] as? String == "Int" && json["kind"] as? String == "integer")
        #expect(try run("writable", "Volume").stdout == "true\n")
        let unknown = try run("describe", "Nope")
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown key 'Nope'; the keys of \"Audio\""), "\(unknown)")
        let outside = try run("set", "Volume", "12")
        #expect(outside.status == 1 && outside.stderr.contains("\"Volume\" is not allowed"), "\(outside)")
        let choice = try run("set", "Theme", "blue")
        #expect(choice.status == 1 && choice.stderr.contains("\"Theme\" is not allowed"))
        #expect(try run("set", "Theme", "'dark'").stdout == "Theme = dark\n")
        #expect(try run("set", "Volume", "9").status == 0)
        #expect(try run("set", "Muted", "true").stdout == "Muted = true\n")
        #expect(try run("set", "Muted", "false", "--json").stdout == "{\"key\":\"Muted\",\"value\":false}\n")
        let read = try fixture.child.run("prefs-test-helper", ["audio-read", store, "Audio"])
        #expect(read.stdout.contains("volume=9 theme=dark"), "\(read)")
        // defaults write on the same set is checked against the schema too.
        let typed = try fixture.harness(["--store-dir", store, "defaults", "write", "Audio", "Volume", "20"])
        #expect(typed.status == 1 && typed.stderr.contains("\"Volume\" is not allowed") && typed.stderr.contains("-int"), "\(typed)")
        let ranged = try fixture.harness(["--store-dir", store, "defaults", "write", "Audio", "Volume", "-int", "20"])
        #expect(ranged.status == 1 && ranged.stderr.contains("\"Volume\" is not allowed"), "\(ranged)")
        #expect(try fixture.harness(["--store-dir", store, "defaults", "write", "Audio", "Volume", "-int", "3"]).status == 0)
        // The same number of another kind is a change (as the library tells observers), checked
        // like any other: 3.0 where the schema has an integer is refused.
        let kind = try fixture.harness(["--store-dir", store, "defaults", "write", "Audio", "Volume", "-float", "3"])
        #expect(kind.status == 1 && kind.stderr.contains("\"Volume\" is not allowed") && kind.stderr.contains("-int"), "\(kind)")
        #expect(try fixture.harness(["--store-dir", store, "defaults", "read-type", "Audio", "Volume"]).stdout == "Type is integer\n")
    }

    @Test("defaults write on a suite checks the sets whose schema is in the suite's schema folder; a suite without one is written as given", .linuxSuiteFiles)
    func suiteWritesCheckedBySchema() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        #expect(try fixture.child.run("prefs-test-helper", ["audio-set", "suite", "AudioPrefs", "volume", "7"]).stdout.contains("ok"))
        let ranged = try fixture.harness(["defaults", "write", "suite", "AudioPrefs", "-dict", "Volume", "-int", "20"])
        #expect(ranged.status == 1 && ranged.stderr.contains("\"Volume\" is not allowed"), "\(ranged)")
        let unknown = try fixture.harness(["defaults", "write", "suite", "AudioPrefs", "-dict-add", "Nope", "1"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown key 'Nope'; the keys of \"AudioPrefs\" are ") && unknown.stderr.contains("defaults have not been changed"), "\(unknown)")
        #expect(!unknown.stderr.contains("\u{201C}"), "straight quotes only")
        #expect(try fixture.harness(["defaults", "read", "suite", "AudioPrefs"]).stdout.contains("Volume = 7;"))
        #expect(try fixture.harness(["defaults", "write", "suite", "AudioPrefs", "-dict-add", "Volume", "-int", "9"]).status == 0)
        #expect(try fixture.harness(["defaults", "write", "suite", "Other", "-int", "3"]).status == 0)  // no schema: not checked
        // The same set in a suite with no schema folder: written as given.
        #expect(try fixture.harness(["defaults", "write", "plain", "AudioPrefs", "-dict", "Volume", "-int", "20", "Nope", "1"]).status == 0)
        let plain = try fixture.harness(["defaults", "read", "plain", "AudioPrefs"])
        #expect(plain.stdout.contains("Volume = 20;") && plain.stdout.contains("Nope = 1;"), "\(plain)")
        #expect(try fixture.harness(["defaults", "read", "suite", "AudioPrefs"]).stdout.contains("Volume = 9;"))
    }

    @Test("schema files are plain JSON a program without the library can read", .linuxSuiteFiles)
    func schemaFileFromOutside() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        #expect(try fixture.child.run("prefs-test-helper", ["audio-set", "suite", "AudioPrefs", "muted", "true"]).stdout.contains("ok"))
        let folder = fixture.home.path + "/suite.schemas"
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(files.count == 1 && files[0].hasPrefix("AudioPrefs~") && files[0].hasSuffix(".json"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/" + files[0]))) as? [String: Any]
        let keys = object?["keys"] as? [String: [String: Any]]
        #expect(keys?["Muted"]?["kind"] as? String == "boolean" && keys?["Muted"]?["default"] as? Bool == false)
        #expect(keys?["Theme"]?["choices"] as? [String] == ["light", "dark", "system"])
    }

    @Test("an administrator's edit of a site file reaches a running observer in another process", .linuxSuiteFiles)
    func liveSiteEdit() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        #expect(try fixture.harness(["--suite", "live", "--key", "SamplePrefs", "set", "string", "mine"]).status == 0)
        let (watch, output) = try fixture.child.start("prefs-harness", ["--suite", "live", "--key", "SamplePrefs", "watch", "--json"])
        defer {
            watch.terminate()
            watch.waitUntilExit()
        }
        var seen = ""
        for attempt in 0..<200 where !seen.contains("\"value\":77") {
            if attempt % 40 == 10 {  // again now and then: the watch may not have started the first time
                // The sample stored its defaults on first use: a site value shows through a lock only.
                let site: [String: Any] = ["Integer Value": 77, "String Value": "hidden \(attempt)", "PersistentPrefs.locked": ["Integer Value"]]
                try fixture.write(["SamplePrefs": site], suite: "live", in: fixture.site1)
            }
            usleep(25_000)
            seen += String(decoding: availableDataNonBlocking(output), as: UTF8.self)
        }
        #expect(seen.contains("{\"key\":\"Integer Value\",\"root\":\"SamplePrefs\",") && seen.contains(",\"value\":77}"), "\(seen)")
        // The marker: the watch reports this change after anything the hidden site value causes.
        #expect(try fixture.harness(["--suite", "live", "--key", "SamplePrefs", "set", "string", "marker"]).status == 0)
        for _ in 0..<400 where !seen.contains("marker") {
            usleep(25_000)
            seen += String(decoding: availableDataNonBlocking(output), as: UTF8.self)
        }
        #expect(seen.contains("marker"), "\(seen)")
        #expect(!seen.contains("hidden"), "the user's String Value hides the site's: \(seen)")
    }

    @Test("watch without a root key follows every set of a suite, naming each root key", .linuxSuiteFiles)
    func watchWholeSuite() throws {
        let fixture = SiteFixture()
        defer { fixture.remove() }
        #expect(try fixture.harness(["--suite", "w", "--key", "A", "--sample", "set", "int", "1"]).status == 0)
        let (watch, output) = try fixture.child.start("prefs-harness", ["--suite", "w", "watch", "--json"])
        defer {
            watch.terminate()
            watch.waitUntilExit()
        }
        var seen = ""
        // Until what is checked below is seen: a write made before the watch read the store (it
        // is not waited for) is not a change to it, so the writes are repeated every second.
        let integerOfA = "{\"key\":\"Integer Value\",\"root\":\"A\",\"time\":"
        for attempt in 0..<100 where !(seen.contains("\"root\":\"B\"") && seen.contains(integerOfA)) {
            if attempt % 20 == 0 {
                _ = try fixture.harness(["--suite", "w", "--key", "A", "--sample", "set", "int", "\(attempt + 2)"])
                _ = try fixture.harness(["--suite", "w", "--key", "B", "--sample", "set", "string", "b\(attempt)"])
            }
            usleep(50_000)
            seen += String(decoding: availableDataNonBlocking(output), as: UTF8.self)
        }
        #expect(seen.contains(integerOfA), "one JSON style, keys sorted: \(seen)")
        #expect(seen.contains("\"root\":\"B\""), "\(seen)")
    }
}

/// What can be read from `handle` now, without blocking.
private func availableDataNonBlocking(_ handle: FileHandle) -> Data {
    let descriptor = handle.fileDescriptor
    let flags = fcntl(descriptor, F_GETFL)
    _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    defer { _ = fcntl(descriptor, F_SETFL, flags) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { break }
        data.append(contentsOf: buffer[0..<count])
    }
    return data
}

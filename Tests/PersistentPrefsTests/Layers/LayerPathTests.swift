import Foundation
import PersistentPrefs
import Testing

/// A user's configuration folder and one site folder, for a harness run as a user would.
private struct PathFixture {
    let home: TemporaryDirectory
    let site: TemporaryDirectory
    let child: ChildProcess

    init() {
        home = TemporaryDirectory()
        site = TemporaryDirectory()
        var child = ChildProcess(configHome: home.path)
        child.environment = ["XDG_CONFIG_DIRS": site.path]
        self.child = child
    }

    /// Writes `top` as a property list at `path` inside the site folder, making its folders.
    func writeSite(_ top: [String: Any], at path: String) throws {
        let url = URL(fileURLWithPath: site.path + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0).write(to: url, options: .atomic)
    }

    func harness(_ arguments: [String]) throws -> ChildProcess.Output {
        try child.run("prefs-harness", arguments)
    }

    func bytes(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: home.path + "/" + path))
    }

    func remove() {
        home.remove()
        site.remove()
    }
}

@Suite("Layers by path: a file or folder named by path gets the layers of the suite or set it is", waitLimit)
struct LayerPathTests {
    @Test("defaults write, -dict-add, delete and import on a suite's file named by path refuse a locked key; the file is unchanged", .linuxSuiteFiles)
    func suiteFileByPath() throws {
        let fixture = PathFixture()
        defer { fixture.remove() }
        #expect(try fixture.harness(["defaults", "write", "app", "Volume", "-int", "1"]).status == 0)
        try fixture.writeSite(
            ["PersistentPrefs.locked": ["Volume"], "SamplePrefs": ["PersistentPrefs.locked": ["Integer Value"]]], at: "app.plist")
        let path = fixture.home.path + "/app.plist"
        let imported = fixture.home.path + "/import.plist"
        try PropertyListSerialization.data(fromPropertyList: ["Volume": 3], format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: imported))
        let before = try fixture.bytes("app.plist")
        let named = try fixture.harness(["defaults", "write", "app", "Volume", "-int", "9"])
        #expect(named.status == 1 && named.stderr.contains("\"Volume\" is locked by the system administrator"), "\(named)")
        for arguments in [
            ["defaults", "write", path, "Volume", "-int", "9"],
            ["defaults", "write", path, "SamplePrefs", "-dict-add", "Integer Value", "-int", "7"],
            ["defaults", "delete", path, "Volume"],
            ["defaults", "delete", path],
            ["defaults", "import", path, imported],
        ] {
            let output = try fixture.harness(arguments)
            #expect(output.status == 1 && output.stderr.contains("is locked by the system administrator"), "\(arguments): \(output)")
        }
        #expect(try fixture.bytes("app.plist") == before, "a refused write changed the file")
        #expect(try fixture.harness(["defaults", "write", path, "Other", "-int", "1"]).status == 0, "an unlocked key is still written")
    }

    @Test("defaults write on a PlistFileStore's set file or a new suite file named by path (PreferencesFile(url:)) refuses a locked key", .linuxSuiteFiles)
    func preferencesFileByPath() throws {
        let fixture = PathFixture()
        defer { fixture.remove() }
        try fixture.writeSite(["PersistentPrefs.locked": ["Volume"]], at: "app.plist")
        try fixture.writeSite(["Volume": 9, "PersistentPrefs.locked": ["Volume"]], at: "tool/prefs/main.plist")
        // The set file, written by its store first: a `defaults write` on its path is the other road.
        #expect(try fixture.harness(["--store-dir", fixture.home.path + "/tool/prefs", "defaults", "write", "main", "Other", "-int", "1"]).status == 0)
        let setPath = fixture.home.path + "/tool/prefs/main.plist"
        let before = try fixture.bytes("tool/prefs/main.plist")
        let viaPath = try fixture.harness(["defaults", "write", setPath, "Volume", "-int", "3"])
        #expect(viaPath.status == 1 && viaPath.stderr.contains("\"Volume\" is locked by the system administrator"), "\(viaPath)")
        #expect(try fixture.bytes("tool/prefs/main.plist") == before, "a refused write changed the file")
        #expect(try fixture.harness(["defaults", "write", setPath, "Other", "-int", "2"]).status == 0, "an unlocked key is still written")
        // The suite's file through the library's own type, as the harness uses it.
        let suiteFile = fixture.home.path + "/app.plist"
        let suite = try fixture.harness(["defaults", "write", suiteFile, "Volume", "-int", "4"])
        #expect(suite.status == 1 && suite.stderr.contains("\"Volume\" is locked by the system administrator"), "\(suite)")
        #expect(!FileManager.default.fileExists(atPath: suiteFile), "nothing is written")
    }

    @Test("--store-dir through a symbolic link, with a trailing slash or with .. gets the folder's layers", arguments: ["link", "tool/prefs/", "tool/x/../prefs"])
    func storeDirSpellings(spelling: String) throws {
        let fixture = PathFixture()
        defer { fixture.remove() }
        try fixture.writeSite(["Volume": 9, "PersistentPrefs.locked": ["Volume"]], at: "tool/prefs/main.plist")
        let folder = fixture.home.path + "/tool/prefs"
        try FileManager.default.createDirectory(atPath: fixture.home.path + "/tool/x", withIntermediateDirectories: true)
        #expect(try fixture.harness(["--store-dir", folder, "defaults", "write", "main", "Other", "-int", "1"]).status == 0)
        try FileManager.default.createSymbolicLink(atPath: fixture.home.path + "/link", withDestinationPath: folder)
        let before = try fixture.bytes("tool/prefs/main.plist")
        let spelled = fixture.home.path + "/" + spelling
        let output = try fixture.harness(["--store-dir", spelled, "defaults", "write", "main", "Volume", "-int", "3"])
        #expect(output.status == 1 && output.stderr.contains("\"Volume\" is locked by the system administrator"), "\(output)")
        #expect(try fixture.bytes("tool/prefs/main.plist") == before)
        let read = try fixture.harness(["--store-dir", spelled, "defaults", "read", "main", "Volume"])
        let readDirect = try fixture.harness(["--store-dir", folder, "defaults", "read", "main", "Volume"])
        #expect(read.stdout == readDirect.stdout, "two spellings of one folder read one value")
    }

    // Only where suites are the library's files: on Apple platforms `cfprefsd` owns that folder,
    // nothing is refused there, and the test would write into the user's own preferences.
    @Test("a PlistFileStore on the suites' folder (any spelling) is refused at first use, naming the folder; nothing is written", .linuxSuiteFiles)
    func storeOnSuiteFolder() throws {
        let links = TemporaryDirectory()
        defer { links.remove() }
        let suites = PreferencesFile.preferencesDirectory
        try FileManager.default.createDirectory(at: suites, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: links.path + "/suites", withDestinationPath: suites.path)
        let root = "pathtest-\(UUID().uuidString.lowercased())"
        for folder in [suites.path, suites.path + "/", links.path + "/suites"] {
            let store = PlistFileStore(directory: URL(fileURLWithPath: folder))
            #expect(throws: PersistentPrefs.PrefsError.self) { try store.save(["Volume": 1], root: root) }
            #expect(throws: PersistentPrefs.PrefsError.self) { _ = try store.load(root: root) }
            do {
                _ = try store.apply(.replace(["Volume": 1]), root: root)
                Issue.record("a store on the suites' folder wrote a set")
            } catch let error as PersistentPrefs.PrefsError {
                guard case .ioError(let path, let reason) = error else { Issue.record("\(error)"); continue }
                #expect(path == folder || path == suites.path || path + "/" == folder, "\(error)")
                #expect(reason.contains("suites"), "\(error)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: suites.path + "/" + root + ".plist"), "nothing is written")
        try? FileManager.default.removeItem(atPath: suites.path + "/" + root + ".plist")
    }
}

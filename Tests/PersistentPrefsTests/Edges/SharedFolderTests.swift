import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Stores in a folder other users can write (mode 1777, like `/tmp`): links planted where the
/// library's files go are never followed, lock files that are not the user's own are refused,
/// and no file keeps values readable by others. In a private folder, a link the user made is
/// still written through.
@Suite("Edges: shared folders", waitLimit)
struct SharedFolderTests {
    /// A 1777 folder and, beside it, a folder of victim files that must never change.
    struct Setup {
        let root = TemporaryDirectory()
        var shared: String { root.path + "/shared" }
        var victims: String { root.path + "/victims" }

        init() throws {
            try FileManager.default.createDirectory(atPath: root.path + "/shared", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root.path + "/victims", withIntermediateDirectories: true)
            #expect(chmod(root.path + "/shared", 0o1777) == 0)
        }

        /// A victim file with known contents (a property list, like the victim's own
        /// preferences, so a read through a link finds a set); returns its path.
        func victim(_ name: String) throws -> String {
            let path = victims + "/" + name
            let plist = try PropertyListSerialization.data(fromPropertyList: ["precious": name], format: .xml, options: 0)
            try plist.write(to: URL(fileURLWithPath: path))
            return path
        }

        /// Every victim's contents and modification time, to compare before and after.
        func victimState() throws -> [String: String] {
            var state: [String: String] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: victims) {
                let path = victims + "/" + name
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                let data = FileManager.default.contents(atPath: path) ?? Data()
                state[name] = "\(String(decoding: data, as: UTF8.self))|\(attributes[.modificationDate] ?? "")"
            }
            return state
        }

        func link(_ name: String, to target: String) {
            #expect(symlink(target, shared + "/" + name) == 0)
        }

        func remove() { root.remove() }
    }

    enum Planted: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case setFile, lockFile, dangling, longRootSidecar, folder
        var testDescription: String { rawValue }
    }

    @Test("PlistFileStore: a planted link is refused, never written through, and no victim changes or appears", arguments: Planted.allCases)
    func plantedLinks(planted: Planted) throws {
        let setup = try Setup()
        defer { setup.remove() }
        var directory = setup.shared
        var root = "r"
        switch planted {
        case .setFile: setup.link("r.plist", to: try setup.victim("a"))
        case .lockFile: setup.link("r.plist.lock", to: try setup.victim("b"))
        case .dangling: setup.link("r.plist", to: setup.victims + "/created")
        case .longRootSidecar:
            root = String(repeating: "x", count: 250)
            let store = PlistFileStore(directory: URL(fileURLWithPath: setup.shared))
            setup.link(try store.fileURL(forRoot: root).lastPathComponent + ".root", to: try setup.victim("c"))
        case .folder:
            setup.link("prefs", to: setup.victims)
            directory = setup.shared + "/prefs"
        }
        let before = try setup.victimState()
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory))
        let prefs = SamplePrefs(key: root, store: store)
        prefs.int = 7
        let error = try #require(prefs.lastError, "the write went through")
        #expect(error.description.contains("symbolic link"), "\(error)")
        #expect(try setup.victimState() == before)
    }

    @Test("a planted damage note is not written through when a damaged file is moved aside")
    func plantedDamageNote() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: setup.shared))
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: setup.shared + "/r.plist"))
        setup.link("r.plist.damaged", to: try setup.victim("d"))
        let before = try setup.victimState()
        #expect(throws: PersistentPrefs.PrefsError.self) { try store.load(root: "r") }
        #expect(try setup.victimState() == before)
    }

    @Test("a FIFO planted where a set file, its damage note or its root-name file goes blocks no read, write or listing",
          arguments: ["set", "note", "rootName"])
    func plantedFIFO(place: String) throws {
        let setup = try Setup()
        defer { setup.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: setup.shared))
        let root = place == "rootName" ? String(repeating: "x", count: 250) : "r"
        let file = try store.fileURL(forRoot: root).path
        if place == "note" { try Data("garbage".utf8).write(to: URL(fileURLWithPath: file)) }  // a read writes the note
        let fifo = file + ["set": "", "note": ".damaged", "rootName": ".root"][place]!
        #expect(mkfifo(fifo, 0o666) == 0)
        let outcome = finishing(within: 20) { () -> [String] in
            let prefs = SamplePrefs(key: root, store: store)
            prefs.int = 3
            return [(try? store.roots())?.description ?? "roots failed", String(describing: prefs.lastError)]
        }
        #expect(outcome != nil, "blocked on the FIFO at \(fifo)")
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
    }

    @Test("the suite-file road (UserDefaultsStore, defaults): planted links at the suite file and its lock file are refused", .linuxSuiteFiles,
          arguments: ["suite.plist", "suite.plist.lock"])
    func suiteLinks(name: String) throws {
        let setup = try Setup()
        defer { setup.remove() }
        setup.link(name, to: try setup.victim("e"))
        let before = try setup.victimState()
        let file = PreferencesFile(url: URL(fileURLWithPath: setup.shared + "/suite.plist"))
        #expect(throws: PersistentPrefs.PrefsError.self) { try file.update { $0["k"] = "v" } }
        // The default store in a program whose config folder is shared.
        let output = try ChildProcess(configHome: setup.shared).run("prefs-test-helper", ["put-int", "suite", "R", "1"])
        #expect(output.status != 0 && output.stderr.contains("symbolic link"), "\(output.stderr)")
        #expect(try setup.victimState() == before)
    }

    @Test("a lock file of another user is refused, and nothing is written into it or beside it",
          .enabled(if: geteuid() == 0, "needs root, to make a file another user owns"))
    func foreignLockFile() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let lock = setup.shared + "/r.plist.lock"
        #expect(FileManager.default.createFile(atPath: lock, contents: Data()))
        #expect(chown(lock, 65534, 65534) == 0 && chmod(lock, 0o666) == 0)
        let prefs = SamplePrefs(key: "r", store: PlistFileStore(directory: URL(fileURLWithPath: setup.shared)))
        prefs.int = 7
        let error = try #require(prefs.lastError)
        #expect(error.description.contains("belongs to user 65534"), "\(error)")
        #expect(FileManager.default.contents(atPath: lock) == Data(), "the lock file was written")
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.shared) == ["r.plist.lock"])
    }

    @Test("lock files are this user's, mode 0600, with one name: a looser one is tightened, a hard-linked one refused")
    func lockFileModes() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: setup.shared))
        let lock = setup.shared + "/r.plist.lock"
        #expect(FileManager.default.createFile(atPath: lock, contents: Data(), attributes: [.posixPermissions: 0o644]))
        let prefs = SamplePrefs(key: "r", store: store)
        prefs.int = 1
        #expect(prefs.lastError == nil)
        var info = stat()
        #expect(stat(lock, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_uid == geteuid())
        #expect(stat(setup.shared + "/r.plist", &info) == 0 && info.st_mode & 0o777 == 0o600)

        let other = setup.shared + "/q.plist.lock"
        #expect(link(try setup.victim("f"), other) == 0)
        let before = try setup.victimState()
        let linked = SamplePrefs(key: "q", store: store)
        linked.int = 1
        #expect(linked.lastError?.description.contains("hard links") == true, "\(String(describing: linked.lastError))")
        #expect(try setup.victimState() == before)
    }

    @Test("in a private folder (0700) a link the user made is written through, as documented, and stays a link")
    func privateFolderLink() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let folder = directory.path + "/private"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: directory.path + "/elsewhere", withIntermediateDirectories: true)
        let target = directory.path + "/elsewhere/r.plist"
        #expect(symlink(target, folder + "/r.plist") == 0)
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder))
        let prefs = SamplePrefs(key: "r", store: store)
        prefs.int = 9
        #expect(prefs.lastError == nil)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/r.plist") == target)
        let written = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: target)), format: nil)
        #expect((written as? [String: Any])?[SamplePrefs.Key.int.rawValue] as? Int == 9)
    }
}

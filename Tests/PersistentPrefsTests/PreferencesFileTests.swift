import Foundation
import PersistentPrefs
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("PreferencesFile")
struct PreferencesFileTests {
    @Test("several keys change in one write; values are vetted; remove deletes the file")
    func updateContentsRemove() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = PreferencesFile(url: URL(fileURLWithPath: directory.path + "/suite.plist"))
        #expect(try file.contents() == nil)
        try file.update { keys in
            keys["Count"] = 1
            keys["Name"] = "x"
            keys["List"] = ["a", "b"]
        }
        try file.update { keys in
            keys["Count"] = (keys["Count"] as? Int ?? 0) + 1
            keys["Name"] = nil
        }
        let contents = try #require(try file.contents())
        #expect(contents.count == 2 && contents["Count"] as? Int == 2 && contents["List"] as? [String] == ["a", "b"])
        // Plain UserDefaults reads the same XML file.
        let plain = try PropertyListSerialization.propertyList(from: Data(contentsOf: file.url), format: nil) as? [String: Any]
        #expect(plain?["Count"] as? Int == 2)

        let before = try Data(contentsOf: file.url)
        #expect(throws: PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: ["Bad"])) {
            try file.update { keys in
                keys["Count"] = 3
                keys["Bad"] = NSObject()
            }
        }
        struct Refusal: Error {}
        #expect(throws: Refusal.self) { try file.update { _ in throw Refusal() } }
        #expect(try Data(contentsOf: file.url) == before)

        #expect(try file.remove())
        #expect(!FileManager.default.fileExists(atPath: file.url.path))
        #expect(try file.remove() == false)
    }

    @Test("a suite name with / or .. is refused")
    func names() {
        #expect(throws: PersistentPrefs.PrefsError.self) { try PreferencesFile(suiteName: "../x") }
        #expect(throws: PersistentPrefs.PrefsError.self) { try PreferencesFile(suiteName: "a/b") }
        #expect(throws: PersistentPrefs.PrefsError.self) { try PreferencesFile(suiteName: "") }
        #expect((try? PreferencesFile(suiteName: "com.example.app"))?.url.lastPathComponent == "com.example.app.plist")
    }

    @Test("a damaged suite file is moved aside, reads as absent, and is reported until written", .linuxSuiteFiles)
    func damagedSuite() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let file = try PreferencesFile(suiteName: suite.name)
        try Data("not a plist".utf8).write(to: file.url)
        #expect(throws: PersistentPrefs.PrefsError.self) { try file.contents() }
        #expect(!FileManager.default.fileExists(atPath: file.url.path))
        #expect(try file.contents() == nil)
        guard case .corruptStore(let path, _)? = file.damageNotice else {
            Issue.record("no damage reported: \(String(describing: file.damageNotice))")
            return
        }
        #expect(path == file.url.path)
        try file.update { $0["k"] = "v" }
        #expect(file.damageNotice == nil)  // written again: whole
    }

    @Test("a file named by path that does not parse is reported, and left where it is with nothing made beside it")
    func damagedPath() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = PreferencesFile(url: URL(fileURLWithPath: directory.path + "/notes.txt"))
        let text = Data("not a plist".utf8)
        try text.write(to: file.url)
        #expect(throws: PersistentPrefs.PrefsError.self) { try file.contents() }
        #expect(throws: PersistentPrefs.PrefsError.self) { try file.update { $0["k"] = "v" } }
        #expect(throws: PersistentPrefs.PrefsError.self) { try file.remove() }
        #expect(FileManager.default.contents(atPath: file.url.path) == text)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["notes.txt"])
        #expect(file.damageNotice == nil)
    }

    @Test("a FIFO or a device is never read or replaced", arguments: ["fifo", "/dev/null"])
    func notRegular(kind: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var path = kind
        if kind == "fifo" {
            path = directory.path + "/pipe.plist"
            #expect(mkfifo(path, 0o600) == 0)
        }
        let file = PreferencesFile(url: URL(fileURLWithPath: path))
        for attempt in [{ _ = try file.contents() }, { try file.update { $0["k"] = "v" } }, { _ = try file.remove() }] {
            do {
                try attempt()
                Issue.record("\(path) was used as a property list")
            } catch let error as PersistentPrefs.PrefsError {
                #expect(error.description.contains("not a regular file"), "\(error)")
            }
        }
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == (kind == "fifo" ? S_IFIFO : S_IFCHR))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == (kind == "fifo" ? ["pipe.plist"] : []))
    }
}

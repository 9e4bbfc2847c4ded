import Foundation
import PersistentPrefs
import Testing

/// A store under test, with what it takes to clean up after it.
struct StoreFixture: CustomTestStringConvertible, Sendable {
    let name: String
    let make: @Sendable () -> (store: any PrefsStore, cleanUp: @Sendable () -> Void)
    var testDescription: String { name }

    static let all: [StoreFixture] = [
        StoreFixture(name: "InMemoryStore") { (InMemoryStore(), {}) },
        StoreFixture(name: "UserDefaultsStore") {
            let suite = TestSuite("conformance")
            return (suite.store, { suite.remove() })
        },
        // The road Apple platforms take (set, synchronize()), run here too.
        StoreFixture(name: "UserDefaultsStore (Apple path)") {
            let suite = TestSuite("conformanceApple", applePath: true)
            return (suite.store, { suite.remove() })
        },
        StoreFixture(name: "PlistFileStore") {
            let directory = TemporaryDirectory()
            return (PlistFileStore(directory: URL(fileURLWithPath: directory.path + "/prefs")), { directory.remove() })
        },
    ]

    /// The stores that keep sets on disk, as each platform uses them.
    static let durable = all.filter { $0.name == "UserDefaultsStore" || $0.name == "PlistFileStore" }
}

/// What every ``PrefsStore`` must do, run against each one.
@Suite("Store conformance", waitLimit)
struct StoreConformanceTests {
    final class KindsPrefs: PersistentPrefs {
        override var keys: [String] { ["Int", "Negative", "Big", "Double", "Float", "Bool", "String", "Date", "Data", "Array", "Dictionary", "Empty"] }
    }

    static var kinds: [String: Any] {
        [
            "Int": 42, "Negative": -7, "Big": Int64.max, "Double": 0.1, "Float": Float(12.3), "Bool": false,
            "String": "ünï\ncode 🎉", "Date": Date(timeIntervalSince1970: 1_700_000_000), "Data": Data([0, 255]),
            "Array": [1, "two", [3.5]] as [Any], "Dictionary": ["nested": ["deep": true]], "Empty": [String: Any](),
        ]
    }

    @Test("every kind of value round-trips through the store and a reload", arguments: StoreFixture.all)
    func roundTrip(fixture: StoreFixture) throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        let prefs = KindsPrefs(key: "kinds", values: Self.kinds, store: store)
        #expect(prefs.lastError == nil)
        let reloaded = try prefs.reload()
        #expect(reloaded["Int"] as? Int == 42)
        #expect(reloaded["Negative"] as? Int == -7)
        #expect(reloaded["Big"] as? Int64 == Int64.max)
        #expect(reloaded["Double"] as? Double == 0.1)
        #expect(reloaded["Float"] as? Float == Float(12.3))
        #expect(reloaded["Bool"] as? Bool == false)
        #expect(reloaded["String"] as? String == "ünï\ncode 🎉")
        #expect(reloaded["Date"] as? Date == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(reloaded["Data"] as? Data == Data([0, 255]))
        let array = reloaded["Array"] as? [Any]
        #expect(array?.count == 3)
        #expect(array?[1] as? String == "two")
        #expect((reloaded["Dictionary"] as? [String: [String: Bool]]) == ["nested": ["deep": true]])
        #expect((reloaded["Empty"] as? [String: Any])?.isEmpty == true)
    }

    @Test("removal and independent root keys", arguments: StoreFixture.all)
    func removalAndIndependence(fixture: StoreFixture) throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        let a = KindsPrefs(key: "a", values: ["Int": 1], store: store)
        let b = KindsPrefs(key: "b/../x", values: ["Int": 2], store: store)
        #expect(try store.roots().contains("a"))
        #expect(try store.roots().contains("b/../x"))
        a.clear()
        #expect(try store.load(root: "a") == nil)
        #expect(try !store.roots().contains("a"))
        #expect(try b.reload()["Int"] as? Int == 2)
        try store.remove(root: "never-written")
    }

    @Test("concurrent writers of distinct keys lose nothing", arguments: StoreFixture.all)
    func concurrentWriters(fixture: StoreFixture) async throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        try await ConcurrencyTests.hammer(store: store, writesPerTask: 10)
    }
}

@Suite("PlistFileStore")
struct PlistFileStoreTests {
    @Test(
        "root keys map to safe, reversible file names",
        arguments: ["plain", "", "../x", "/etc/passwd", "a/b", "..", ".", "nul\u{0}byte", "ünï 🎉", "%41", "-_-", "a~b"]
    )
    func fileNames(root: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let url = try store.fileURL(forRoot: root)
        #expect(url.deletingLastPathComponent().standardizedFileURL.path == URL(fileURLWithPath: directory.path).standardizedFileURL.path)
        #expect(!url.lastPathComponent.hasPrefix("."))
        try store.save(["k": "v"], root: root)
        #expect(try store.roots() == [root])
        #expect(try store.load(root: root)?["k"] as? String == "v")
    }

    @Test("root keys that differ only in case get names that differ on case-insensitive file systems")
    func caseProofNames() throws {
        let store = PlistFileStore(directory: URL(fileURLWithPath: "/tmp/x"))
        let names = try ["Main", "main", "MAIN", "mAin"].map { try store.fileURL(forRoot: $0).lastPathComponent.lowercased() }
        #expect(Set(names).count == 4)
    }

    @Test("a file named by an earlier version (upper case kept) is found, renamed once, and listed once")
    func legacyNames() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let legacy = directory.path + "/Main.plist"
        try PropertyListSerialization.data(fromPropertyList: ["k": "old"], format: .binary, options: 0).write(to: URL(fileURLWithPath: legacy))
        #expect(try store.roots() == ["Main"])
        #expect(try store.load(root: "Main")?["k"] as? String == "old")
        #expect(!FileManager.default.fileExists(atPath: legacy))
        #expect(FileManager.default.fileExists(atPath: try store.fileURL(forRoot: "Main").path))
        #expect(try store.fileURL(forRoot: "Main").lastPathComponent.hasPrefix("Main~"))
        try store.save(["k": "new"], root: "main")
        #expect(try store.roots() == ["Main", "main"])
        #expect(try store.load(root: "Main")?["k"] as? String == "old")
    }

    @Test("the directory is created 0700 and files are written 0600")
    func modes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/new/prefs"
        let store = PlistFileStore(directory: URL(fileURLWithPath: path))
        try store.save(["k": "v"], root: "r")
        let directoryMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: try store.fileURL(forRoot: "r").path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        #expect(fileMode == 0o600)
    }

    @Test("a corrupt file is moved aside and reported, never silently replaced")
    func corruptFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let url = try store.fileURL(forRoot: "r")
        try Data("garbage, not a plist".utf8).write(to: url)
        let error = #expect(throws: PersistentPrefs.PrefsError.self) { try store.load(root: "r") }
        guard case .corruptStore(let path, let reason)? = error else {
            Issue.record("expected corruptStore, got \(String(describing: error))")
            return
        }
        #expect(path == url.path)
        #expect(reason.contains("moved aside"))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let aside = try #require(names.first { $0.hasPrefix("r.plist.corrupt-") })
        #expect(FileManager.default.contents(atPath: directory.path + "/" + aside) == Data("garbage, not a plist".utf8))
        #expect(try store.load(root: "r") == nil)
    }

    @Test("root keys of 1,000 characters get a shortened file name and round-trip")
    func longRootKeys() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let long = String(repeating: "x", count: 1000)
        let unicode = String(repeating: "ü/", count: 500)
        for root in [long, unicode] {
            let url = try store.fileURL(forRoot: root)
            #expect(url.lastPathComponent.utf8.count < 200)
            try store.save(["k": "v"], root: root)
            #expect(try store.load(root: root)?["k"] as? String == "v")
        }
        #expect(try store.roots() == [long, unicode].sorted())
        try store.remove(root: long)
        #expect(try store.roots() == [unicode])
    }

    @Test("binary files keep sub-second dates and -0.0")
    func exactValues() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let date = Date(timeIntervalSince1970: 1_700_000_000.125)
        try store.save(["d": date, "z": NSNumber(value: -0.0)], root: "r")
        let loaded = try #require(try store.load(root: "r"))
        #expect(loaded["d"] as? Date == date)
        #expect((loaded["z"] as? Double)?.sign == .minus)
    }
}

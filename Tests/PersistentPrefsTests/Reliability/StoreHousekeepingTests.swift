import Foundation
import PersistentPrefs
import Testing

/// Limits, links, leftovers and read-only stores (issue #8).
@Suite("Store housekeeping", waitLimit)
struct StoreHousekeepingTests {
    final class BigPrefs: PersistentPrefs {
        override var keys: [String] { ["Big", "Small"] }
    }

    static func fileStore(_ directory: TemporaryDirectory) -> PlistFileStore {
        PlistFileStore(directory: URL(fileURLWithPath: directory.path))
    }

    /// The stores whose files the library writes itself: on Apple platforms a suite goes through
    /// `UserDefaults`, which has no such limit.
    static let sizeLimited = StoreFixture.durable.filter { suitesAreLibraryFiles || $0.name != "UserDefaultsStore" }

    @Test("a write that would make a file larger than 8 MB is refused, naming the size; nothing changes", arguments: sizeLimited)
    func sizeLimit(fixture: StoreFixture) throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        let prefs = BigPrefs(key: "big", store: store)
        prefs["Small"] = 1
        prefs["Big"] = String(repeating: "x", count: 9 << 20)
        guard case .ioError(_, let reason)? = prefs.lastError else {
            Issue.record("expected ioError, got \(String(describing: prefs.lastError))")
            return
        }
        #expect(reason.contains("over the limit of 8 MB"))
        #expect(try prefs.reload()["Big"] == nil)
        #expect(prefs["Small"] as? Int == 1)
    }

    @Test("a symbolic link to a set file is written through and stays a link")
    func symlinkedFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = Self.fileStore(directory)
        try store.save(["Small": 1], root: "R")
        let url = try store.fileURL(forRoot: "R")
        let target = directory.path + "/elsewhere.plist"
        try FileManager.default.moveItem(atPath: url.path, toPath: target)
        try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target)
        let prefs = BigPrefs(key: "R", store: store)
        prefs["Small"] = 2
        #expect(prefs.lastError == nil)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) == target)
        let written = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: target)), format: nil)
        #expect((written as? [String: Any])?["Small"] as? Int == 2)
    }

    /// The folder is listed with `readdir`, whose entries are as long as their names: 400 names
    /// of 1 to 200 characters put short entries at the ends of its buffers.
    @Test("temporary files left by a killed writer are removed by the next write, alone or among hundreds of files", arguments: [0, 400])
    func staleTemporary(crowd: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = Self.fileStore(directory)
        let url = try store.fileURL(forRoot: "stale")
        for index in 0..<crowd {
            let name = String(repeating: "n", count: 1 + index % 200) + "-\(index)"
            #expect(FileManager.default.createFile(atPath: directory.path + "/" + name, contents: nil))
        }
        let leftovers = (0..<3).map { directory.path + "/.\(url.lastPathComponent).000\($0)-killed.tmp" }
        for leftover in leftovers {
            #expect(FileManager.default.createFile(atPath: leftover, contents: Data(repeating: 1, count: 200_000)))
        }
        // Near misses stay: no writer's id between the name and `.tmp`, another file's name, not `.tmp`.
        let name = url.lastPathComponent
        let kept = [".\(name).tmp", "x.\(name).1.tmp", ".\(name).1.tmpx", ".\(name)x.1.tmp"].map { directory.path + "/" + $0 }
        for file in kept { #expect(FileManager.default.createFile(atPath: file, contents: nil)) }
        try store.save(["Small": 1], root: "stale")
        for leftover in leftovers { #expect(!FileManager.default.fileExists(atPath: leftover)) }
        for file in kept { #expect(FileManager.default.fileExists(atPath: file), "\(file) was removed") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count >= crowd + kept.count)
    }

    @Test("a store whose lock file cannot be opened for writing can still be read")
    func readOnlyLockFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = Self.fileStore(directory)
        try store.save(["Small": 1], root: "R")
        let lock = try store.fileURL(forRoot: "R").path + ".lock"
        // As root (CI), an immutable lock file; otherwise one without write permission.
        let immutable = getuid() == 0
        if immutable {
            guard Self.chattr("+i", lock) else { return }  // no chattr, or a file system without attributes
        } else {
            chmod(lock, 0o400)
        }
        defer { if immutable { _ = Self.chattr("-i", lock) } }
        #expect(try store.load(root: "R")?["Small"] as? Int == 1)
        #expect(BigPrefs(key: "R", store: store)["Small"] as? Int == 1)
    }

    /// Runs `chattr FLAG PATH`; whether it succeeded.
    static func chattr(_ flag: String, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test("UserDefaults() shares .standard's store: the same file, lock and shared set", .linuxSuiteFiles)
    func unnamedDefaultsObject() {
        #expect(UserDefaultsStore(userDefaults: UserDefaults()).identifier == UserDefaultsStore.standard.identifier)
    }
}

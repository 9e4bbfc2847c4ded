import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// Damaged files of every kind, in both durable stores: no crash, a clear error naming the
/// file, the damaged file kept (moved aside), and a usable store afterwards.
@Suite("Corrupt stores", waitLimit)
struct CorruptStoreTests {
    enum Damage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case garbage, empty, truncated, arrayRoot, directory
        var testDescription: String { rawValue }

        /// Damages `file` (whose valid contents are `valid`); returns what to find kept aside,
        /// or `nil` when the damage stays in place (a directory cannot be a file).
        func apply(to file: String, valid: Data) throws -> Data? {
            try? FileManager.default.removeItem(atPath: file)
            let bytes: Data
            switch self {
            case .garbage: bytes = Data("\u{1}\u{2}garbage<plist>nope".utf8)
            case .empty: bytes = Data()
            case .truncated: bytes = valid.prefix(valid.count / 2)
            case .arrayRoot: bytes = try PropertyListSerialization.data(fromPropertyList: [1, 2, 3], format: .xml, options: 0)
            case .directory:
                try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: true)
                return nil
            }
            try bytes.write(to: URL(fileURLWithPath: file))
            return bytes
        }
    }

    @Test("PlistFileStore", arguments: Damage.allCases)
    func plistFileStore(damage: Damage) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["Integer Value": NSNumber(value: 1)], root: "R")
        let file = try store.fileURL(forRoot: "R").path
        let valid = try Data(contentsOf: URL(fileURLWithPath: file))
        let kept = try damage.apply(to: file, valid: valid)
        let prefs = SamplePrefs(key: "R", store: store)
        let error = try #require(prefs.lastError)
        #expect(error.description.contains(file), "\(error)")
        if let kept {
            guard case .corruptStore = error else { Issue.record("expected corruptStore, got \(error)"); return }
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            let aside = try #require(names.first { $0.hasPrefix((file as NSString).lastPathComponent + ".corrupt-") })
            #expect(FileManager.default.contents(atPath: directory.path + "/" + aside) == kept)
            // Reported to every reader until the set is written again; then it works.
            let fresh = PersistentPrefs(key: "R", store: store)
            guard case .corruptStore(_, let reason)? = fresh.lastError else {
                Issue.record("expected the damage reported again, got \(String(describing: fresh.lastError))")
                return
            }
            #expect(reason.contains(aside))
            let writer = SamplePrefs(key: "R", store: store)
            writer.int = 5
            #expect(writer.lastError == nil)
            #expect(try store.load(root: "R")?["Integer Value"] as? Int == 5)
            #expect(PersistentPrefs(key: "R", store: store).lastError == nil)
        } else {
            guard case .ioError = error else { Issue.record("expected ioError, got \(error)"); return }
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) && isDirectory.boolValue)
        }
    }

    @Test("UserDefaultsStore suite file, read by a fresh process", .linuxSuiteFiles, arguments: Damage.allCases)
    func userDefaultsStore(damage: Damage) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", "damaged", "R", "1"])
        let file = directory.path + "/damaged.plist"
        let valid = try Data(contentsOf: URL(fileURLWithPath: file))
        let kept = try damage.apply(to: file, valid: valid)
        let start = Date()
        let read = try child.run("prefs-test-helper", ["get-int", "damaged", "R"])
        let elapsed = Date().timeIntervalSince(start)
        #expect(read.status == 2)
        #expect(read.stderr.contains(file), "\(read.stderr)")
        if let kept {
            #expect(read.stderr.contains("moved aside"))
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            let aside = try #require(names.first { $0.hasPrefix("damaged.plist.corrupt-") })
            #expect(FileManager.default.contents(atPath: directory.path + "/" + aside) == kept)
            // Another process learns it too, until the suite is written again.
            let again = try child.run("prefs-test-helper", ["get-int", "damaged", "R"])
            #expect(again.status == 2)
            #expect(again.stderr.contains(aside), "\(again.stderr)")
            _ = try child.run("prefs-test-helper", ["clear", "damaged", "Other"])
            let after = try child.run("prefs-test-helper", ["get-int", "damaged", "R"])
            #expect(after.status == 0)
            #expect(after.stdout == "nil\n")
        }
        print("[corrupt] UserDefaultsStore, \(damage.rawValue): reported in \(Int(elapsed * 1000)) ms")
    }

    @Test("a file that cannot be read is reported and left in place", .enabled(if: getuid() != 0, "root reads any file"))
    func unreadableFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["k": "v"], root: "R")
        let file = try store.fileURL(forRoot: "R").path
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: file)
        #expect(throws: PersistentPrefs.PrefsError.self) { try store.load(root: "R") }
        #expect(FileManager.default.fileExists(atPath: file))
    }
}

@Suite("Concurrency on durable stores", waitLimit)
struct DurableConcurrencyTests {
    @Test("16 threads × 500 mixed reads and writes (every 10th a write): nothing lost", arguments: DurableStore.allCases)
    func mixed(store kind: DurableStore) async throws {
        let directory = TemporaryDirectory()
        let suite = TestSuite("mixed", applePath: kind == .applePath)
        defer {
            directory.remove()
            suite.remove()
        }
        let store: any PrefsStore = kind == .plistFile ? PlistFileStore(directory: URL(fileURLWithPath: directory.path)) : suite.store
        final class Wide: PersistentPrefs {
            override var keys: [String] { (0..<16).map { "t\($0)" } }
        }
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<16 {
                group.addTask {
                    let prefs = Wide(key: "mixed", store: store)
                    var written = 0
                    for operation in 0..<500 {
                        if operation % 10 == 0 {
                            written += 1
                            prefs["t\(thread)"] = written
                        } else {
                            _ = prefs.value(forKey: "t\((thread + operation) % 16)", as: Int.self)
                        }
                    }
                }
            }
        }
        let reloaded = try Wide(key: "mixed", store: store).reload()
        let lost = (0..<16).filter { reloaded["t\($0)"] as? Int != 50 }.count
        print("[reliability] \(kind.rawValue): 16 threads × 500 mixed operations: \(lost) of 16 final writes lost")
        #expect(lost == 0)
    }
}

/// Every reader of a damaged store learns it, not only the one whose read moved it aside.
@Suite("Damage is reported to every reader", .linuxSuiteFiles, waitLimit)
struct DamageNoticeTests {
    final class Sets: PersistentPrefs {
        override var keys: [String] { ["Int"] }
    }

    /// A suite with two sets and a single key, then garbage over its file.
    static func damagedSuite() throws -> TestSuite {
        let suite = TestSuite("damage")
        _ = Sets(key: "A", values: ["Int": 1], store: suite.store)
        _ = Sets(key: "B", values: ["Int": 2], store: suite.store)
        try Data("garbage, not a plist".utf8).write(to: URL(fileURLWithPath: suite.path))
        return suite
    }

    static func isDamage(_ error: PersistentPrefs.PrefsError?, _ suite: TestSuite) -> Bool {
        guard case .corruptStore(let path, _)? = error else { return false }
        return path == suite.path
    }

    @Test("every root key and every style report it until the damage is acknowledged or the store written", arguments: ["acknowledged", "written"])
    func reportedUntilResolved(resolution: String) throws {
        let suite = try Self.damagedSuite()
        defer { suite.remove() }
        let first = Sets(key: "A", store: suite.store)
        #expect(Self.isDamage(first.lastError, suite))
        let other = Sets(key: "B", store: suite.store)
        #expect(other.values.isEmpty)
        #expect(Self.isDamage(other.lastError, suite))
        _ = other["Int"]
        #expect(Self.isDamage(other.lastError, suite), "a second read still reports it")
        let container = UserDefaultsContainer(keyedBy: AnyKey.self, userDefaults: suite.store.userDefaults)
        let value: Int? = container[.text]
        #expect(value == nil)
        #expect(Self.isDamage(container.lastError, suite))
        if resolution == "acknowledged" {
            other.acknowledgeDamage()
            #expect(other.lastError == nil)
        } else {
            first["Int"] = 5
            #expect(first.lastError == nil)
        }
        #expect(Sets(key: "A", store: suite.store).lastError == nil)
        #expect(Sets(key: "B", store: suite.store).lastError == nil)
        #expect(Sets(key: "B", store: suite.store).values.isEmpty)
        let again: Int? = container[.text]
        #expect(again == nil && container.lastError == nil)
    }
}

import Foundation
import PersistentPrefs
import Testing

/// Migrations across real processes (the built `prefs-test-helper`), for both durable stores, on
/// old sets written by hand as property-list files.
@Suite("Migrations across processes", waitLimit)
struct MigrationProcessTests {
    /// The file holding `root` for `store`: the suite file (the set under `root` inside it), or
    /// the set's own file in a `PlistFileStore` folder.
    static func file(_ store: DurableStore, _ directory: TemporaryDirectory, _ suite: String, root: String) throws -> URL {
        switch store {
        case .plistFile:
            return try PlistFileStore(directory: URL(fileURLWithPath: suite)).fileURL(forRoot: root)
        default:
            return URL(fileURLWithPath: directory.path + "/\(suite).plist")
        }
    }

    /// Writes `set` under `root` by hand, as an XML property list, the way an old program left it.
    static func writeOld(_ set: [String: Any], _ store: DurableStore, _ directory: TemporaryDirectory, _ suite: String, root: String) throws {
        let url = try file(store, directory, suite, root: root)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let top: [String: Any] = store == .plistFile ? set : [root: set]
        try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0).write(to: url)
    }

    /// The set under `root` as the file holds it now, read without the library.
    static func readRaw(_ store: DurableStore, _ directory: TemporaryDirectory, _ suite: String, root: String) throws -> [String: Any] {
        let data = try Data(contentsOf: try file(store, directory, suite, root: root))
        let top = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
        return store == .plistFile ? top : (top[root] as? [String: Any] ?? [:])
    }

    @Test("8 processes open an old set at the same moment: the steps run once in total, all see the migrated set",
          arguments: DurableStore.crashSafe)
    func eightAtOnce(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        for round in 1...3 {
            let root = "shared\(round)"
            try Self.writeOld(["Old": "hello", "Count": 21, "Other": true], store, directory, suite, root: root)
            let log = directory.path + "/steps-\(round).log"
            let start = String(Date().timeIntervalSince1970 + 1.5)
            let outputs = try TransactionProcessTests.together(child, (0..<8).map { _ in ["migrate-open", suite, root, log, start] })
            for output in outputs {
                #expect(output.status == 0, "\(output.stderr)")
                #expect(output.stdout == "New=hello Count=42 keys=[\"Count\", \"New\", \"Other\"] version=2\n", "\(output.stderr)")
            }
            let lines = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n") ?? []
            print("[migrations] \(store.rawValue) round \(round): 8 processes, steps ran: \(lines.map { $0.split(separator: " ")[0] })")
            #expect(lines.map { $0.split(separator: " ")[0] } == ["1", "2"])
            #expect(Set(lines.map { $0.split(separator: " ")[1] }).count == 1, "both steps in one process")
            let raw = try Self.readRaw(store, directory, suite, root: root)
            #expect(raw[PersistentPrefs.schemaVersionKey] as? Int == 2 && raw["Count"] as? Int == 42 && raw["Old"] == nil)
        }
    }

    @Test("SIGKILL during a migration: the set is as before or fully migrated, never in between, over 50 kills",
          arguments: DurableStore.crashSafe)
    func killDuringMigration(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        let old = Dictionary(uniqueKeysWithValues: (0..<300).map { ("k\($0)", $0) })
        try Self.writeOld(old, store, directory, suite, root: "wide")
        var generator = SystemRandomNumberGenerator()
        var (before, after, torn) = (0, 0, 0)
        for trial in 1...50 {
            let (process, output) = try child.start("prefs-test-helper", ["migrate-wide", suite, "wide"])
            _ = output.availableData  // "opening"
            Thread.sleep(forTimeInterval: Double.random(in: 0...0.015, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let raw = try Self.readRaw(store, directory, suite, root: "wide")
            let stamp = raw[PersistentPrefs.schemaVersionKey] as? Int
            let asBefore = stamp == nil && raw.count == 300 && (0..<300).allSatisfy { (n: Int) in raw["k\(n)"] as? Int == n }
            let asAfter = stamp == 1 && raw.count == 301 && (0..<300).allSatisfy { (n: Int) in raw["m\(n)"] as? Int == n }
            if asBefore {
                before += 1
            } else if asAfter {
                after += 1
                try Self.writeOld(old, store, directory, suite, root: "wide")  // old again for the next kill
            } else {
                torn += 1
                print("[migrations] \(store.rawValue) trial \(trial): \(raw.count) keys, version \(String(describing: stamp))")
                try Self.writeOld(old, store, directory, suite, root: "wide")
            }
        }
        print("[migrations] \(store.rawValue): 50 kills during migrations: \(before) as before, \(after) fully migrated, \(torn) in between")
        #expect(torn == 0)
        #expect(before + after == 50)
    }
}

import Foundation
import PersistentPrefs
import PersistentPrefsSample
import PrefsHarnessKit
import Testing

@Suite("Harness: migrate")
struct HarnessMigrateTests {
    static func run(_ line: [String], _ session: HarnessSession) -> (Int32, RecordingConsole) {
        HarnessCommandTests.run(line, session)
    }

    /// A version 0 sample set, as an old program (or a person) left it.
    static func oldSet(_ store: InMemoryStore, root: String = "Old") throws {
        try store.save(["Int Value": 42, "String Value": "kept"], root: root)
    }

    @Test("migrate --dry-run prints the steps and both sets, and writes nothing")
    func dryRun() throws {
        let store = InMemoryStore()
        try Self.oldSet(store)
        let session = HarnessSession(rootKey: "Old", store: store)
        let (status, console) = Self.run(["migrate", "--dry-run"], session)
        #expect(status == 0, "\(console.err)")
        let out = console.out
        #expect(out.hasPrefix("Would migrate \"Old\" from version 0 to 1:\n  version 1: rename \"Int Value\" to \"Integer Value\"\nBefore:\n"))
        #expect(out.contains("Int Value         (not a sample key)  42"))
        #expect(out.contains("After:\n"))
        #expect(out.hasSuffix("Nothing was written (dry run).\n"))
        let stored = try #require(try store.load(root: "Old"))
        #expect(stored.count == 2 && stored["Int Value"] as? Int == 42)

        let json = Self.run(["migrate", "--dry-run", "--json"], session).1.out
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["from"] as? Int == 0 && object["to"] as? Int == 1)
        #expect((object["after"] as? [String: Any])?["Integer Value"] as? Int == 42)
        #expect((object["before"] as? [String: Any])?["Int Value"] as? Int == 42)
        #expect(try store.load(root: "Old")?.count == 2)
    }

    @Test("migrate runs the steps once; again, it says there is nothing to do")
    func run() throws {
        let store = InMemoryStore()
        try Self.oldSet(store)
        let session = HarnessSession(rootKey: "Old", store: store)
        let (status, console) = Self.run(["migrate"], session)
        #expect(status == 0, "\(console.err)")
        #expect(console.out.hasPrefix("Migrated \"Old\" from version 0 to 1:\n"))
        #expect(console.out.hasSuffix("Written in one store write.\n"))
        let stored = try #require(try store.load(root: "Old"))
        #expect(stored["Integer Value"] as? Int == 42 && stored["Int Value"] == nil)
        #expect(stored[PersistentPrefs.schemaVersionKey] as? Int == 1)
        let again = Self.run(["migrate"], session)
        #expect(again.0 == 0)
        #expect(again.1.out == "The set \"Old\" is at version 1, the sample's version; there is nothing to migrate.\n")
        #expect(Self.run(["get", "int"], session).1.out == "42\n")
    }

    @Test("migrate refuses an empty root key and a newer set, writing nothing; a bad flag is a usage error")
    func refusals() throws {
        let store = InMemoryStore()
        let session = HarnessSession(rootKey: "Missing", store: store)
        let missing = Self.run(["migrate", "--dry-run"], session)
        #expect(missing.0 == 1)
        #expect(missing.1.err.contains("Nothing is stored under the root key \"Missing\""))
        #expect(try store.load(root: "Missing") == nil)

        try store.save(["Integer Value": 1, PersistentPrefs.schemaVersionKey: 4], root: "Newer")
        let newer = HarnessSession(rootKey: "Newer", store: store)
        let refused = Self.run(["migrate"], newer)
        #expect(refused.0 == 1)
        #expect(refused.1.err.contains("schema version 4; this code knows up to 1"))
        #expect(try store.load(root: "Newer")?[PersistentPrefs.schemaVersionKey] as? Int == 4)
        let set = Self.run(["set", "int", "5"], newer)
        #expect(set.0 == 1)
        #expect(try store.load(root: "Newer")?["Integer Value"] as? Int == 1)

        #expect(throws: HarnessError.self) { try CommandLineParser.parse(["migrate", "--dry"]) }
        #expect(throws: HarnessError.self) { try CommandLineParser.parse(["list", "--dry-run"]) }
    }

    @Test("SamplePrefs: a new set is stamped with version 1; an old one is migrated when opened")
    func sample() throws {
        let store = InMemoryStore()
        let fresh = SamplePrefs(key: "Fresh", store: store)
        #expect(fresh.lastError == nil && fresh.storedSchemaVersion == 1)
        #expect(try store.load(root: "Fresh")?[PersistentPrefs.schemaVersionKey] as? Int == 1)
        try Self.oldSet(store)
        let old = SamplePrefs(key: "Old", store: store)
        #expect(old.int == 42 && old.string == "kept" && old["Int Value"] == nil)
    }
}

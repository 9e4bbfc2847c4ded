import Foundation
import Testing

@testable import PersistentPrefs

/// What a suite's lock file holds (issue #37): its notes stay within what the ledger needs.
@Suite("Lock files: bounded notes", .serialized, waitLimit)
struct LockFileTests {
    /// The size of the file at `path` (0 when there is none).
    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// The names in `directory` that start with `prefix`.
    static func names(in directory: String, startingWith prefix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(prefix) }.sorted()
    }

    @Test("1,000 writes to a 500-byte suite keep the lock file within twice what the ledger needs, and the ledger still puts back a value a stale save undid")
    func lockFileStaysSmall() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "S", value: String(repeating: "x", count: 400)), root: "Name")
        var longest = 0
        var snapshot = Data()
        for n in 1...1_000 {
            _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n)), root: "K")
            longest = max(longest, Self.size(suite.path + ".lock"))
            if n == 600 { snapshot = try Data(contentsOf: URL(fileURLWithPath: suite.path)) }
        }
        let suiteSize = Self.size(suite.path)
        #expect(suiteSize > 400 && suiteSize < 1_000, "a suite of \(suiteSize) bytes")
        // What the ledger needs, per key written within the horizon: its latest value as XML
        // (its part of the suite file and a wrapper of under 256 bytes) and 8 bytes for each value
        // it replaced (at most 512). The journal holds at most twice that, or 8 KB, plus one
        // write's steps (under 512 bytes here) and the lock file's record (68 bytes).
        let needed = suiteSize + 2 * 256 + 8 * 512
        let bound = 68 + max(8 * 1024, 2 * needed) + 512
        #expect(longest <= bound, "the lock file grew to \(longest) bytes (bound \(bound)) beside a suite of \(suiteSize)")
        #expect(Self.size(suite.path + ".lock") <= bound)

        // A stale plain save puts back the value of 400 writes ago: the next library write (of
        // another set, as from another process) puts the latest back.
        try StaleSaveTests.staleSave(snapshot, to: suite)
        #expect(try suite.store.load(root: "K")?["Int"] as? Int == 1_000, "a read shows the suite as the next write leaves it")
        SuiteLedger.forgetViews()
        _ = try suite.store.apply(.set(key: "S", value: "y"), root: "Name")
        #expect(try suite.store.load(root: "K")?["Int"] as? Int == 1_000)
        let stored = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: suite.path)), format: nil) as? [String: Any])
        #expect((stored["K"] as? [String: Any])?["Int"] as? Int == 1_000, "the file holds the latest value again")
        #expect(stored["plain"] as? Int == 1, "and the plain save's own key")
    }

    @Test("a compacted journal leaves the lock file no larger than its notes")
    func compactionShrinksTheFile() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let big = String(repeating: "b", count: 6_000)
        for n in 0..<20 { _ = try suite.store.apply(.set(key: "S", value: "\(n)" + big), root: "R\(n)") }
        try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { lock in
            #expect(lock.fileSize > 60_000)
            SuiteLedger.clear(lock)
            #expect(lock.fileSize == Int(FileLock.notesOffset) + 4 + lock.notesLength, "the file is cut after the notes")
        }
    }
}

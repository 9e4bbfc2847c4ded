import Foundation
import Testing

@testable import PersistentPrefs

/// The suite ledger kept as a journal in the lock file (issue #22): a write reads and writes its
/// own steps, whatever the ledger remembers; every process arrives at the same entries.
@Suite("Ledger journal: a write's ledger cost does not grow with what it remembers", .linuxSuiteFiles, .serialized, waitLimit)
struct LedgerJournalTests {
    /// The lock file's device and inode.
    static func identity(of suite: TestSuite) throws -> FileLock.FileIdentity {
        var info = stat()
        try #require(stat(suite.path + ".lock", &info) == 0)
        return FileLock.FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The journal's bytes read and written by one write of `value` under `root`.
    static func cost(of suite: TestSuite, root: String, value: Int) throws -> SuiteLedger.Traffic {
        let identity = try identity(of: suite)
        let before = SuiteLedger.traffic.withLock { $0[identity] ?? .init() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: value)), root: root)
        let after = SuiteLedger.traffic.withLock { $0[identity] ?? .init() }
        return SuiteLedger.Traffic(
            read: after.read - before.read, written: after.written - before.written, replayed: after.replayed - before.replayed)
    }

    /// The ledger as a process that has never read the journal reads it whole.
    static func freshLoad(_ suite: TestSuite) throws -> [String: SuiteLedger.Entry] {
        SuiteLedger.forgetViews()
        return try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { SuiteLedger.load($0).entries }
    }

    @Test("a write reads the journal's header and writes its own step, the same with 30 keys × 40 writes remembered as with none")
    func costIndependentOfHistory() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 0)), root: "Probe")
        // Of two writes in a row at most one rewrites the journal: the other costs its own step.
        func probe(_ value: Int) throws -> SuiteLedger.Traffic {
            let (first, second) = (try Self.cost(of: suite, root: "Probe", value: value), try Self.cost(of: suite, root: "Probe", value: value + 1))
            return first.written <= second.written ? first : second
        }
        let empty = try probe(1)
        for round in 0..<40 {
            for key in 0..<30 { _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: round)), root: "R\(key)") }
        }
        let remembering = try Self.freshLoad(suite).count
        #expect(remembering == 31, "the ledger remembers every root key written")
        let full = try probe(3)
        #expect(full == empty, "ledger bytes per write: \(full) with history, \(empty) without")
        #expect(full.read == 24, "a write reads only the journal's header when no other process appended")
        #expect(full.written < 400, "one step of a small value: \(full.written) bytes")
    }

    @Test("a lock's head read with the journal's header, or without it, loads the same ledger")
    func headWithOrWithoutHeader() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        for key in 0..<5 { _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: key)), root: "R\(key)") }
        let (withHeader, without) = try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { lock in
            let full = lock.head(notes: SuiteLedger.headNotes)
            let bare = lock.head(notes: 0)
            #expect(full.notesLength == bare.notesLength && full.record.writtenDigest == bare.record.writtenDigest)
            #expect(full.notesStart.count == SuiteLedger.headNotes && bare.notesStart.isEmpty)
            SuiteLedger.forgetViews()
            let first = SuiteLedger.load(lock, head: full).entries
            SuiteLedger.forgetViews()
            return (first, SuiteLedger.load(lock, head: bare).entries)
        }
        #expect(withHeader.count == 5, "the ledger remembers the five root keys written")
        #expect(withHeader == without, "a head without the header reads it on its own, not as no journal")
    }

    @Test("a process's first write to a suite replays the journal once, then keeps its view, and records what a reader of it all would")
    func firstWriteOfAProcess() throws {
        let fresh = TestSuite()
        let reference = TestSuite()
        defer {
            fresh.remove()
            reference.remove()
        }
        let padding = String(repeating: "p", count: 300)
        for suite in [fresh, reference] {
            for n in 0..<250 { _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n)), root: "R\(n % 5)\(padding)") }
        }
        let length = try FileLock.withLock(for: URL(fileURLWithPath: fresh.path), label: "test") { $0.head(notes: 0).notesLength }
        #expect(length > 4 * 1024, "journal of \(length) bytes")
        SuiteLedger.forgetViews()  // as a new process
        let first = try Self.cost(of: fresh, root: "R0\(padding)", value: 1000)
        #expect(first.read == length && first.replayed == length - 24, "the first write of a process read \(first.read) bytes")
        _ = try reference.store.apply(.set(key: "Int", value: NSNumber(value: 1000)), root: "R0\(padding)")
        let second = try Self.cost(of: fresh, root: "R1\(padding)", value: 1001)
        #expect(second.read == 24, "a process writing again keeps its view")
        let third = try Self.cost(of: fresh, root: "R2\(padding)", value: 1002)
        #expect(third.read == 24, "then keeps its view")
        _ = try reference.store.apply(.set(key: "Int", value: NSNumber(value: 1001)), root: "R1\(padding)")
        _ = try reference.store.apply(.set(key: "Int", value: NSNumber(value: 1002)), root: "R2\(padding)")
        let (got, want) = (try Self.freshLoad(fresh), try Self.freshLoad(reference))
        #expect(got.keys.sorted() == want.keys.sorted())
        for (key, entry) in want {
            #expect(got[key]?.history == entry.history && got[key]?.latest == entry.latest, "\(key.prefix(2))")
        }
    }

    @Test("a process's first write to a suite with a small journal replays it once, and records what a reader of it all would")
    func firstWriteOfASmallJournal() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        for n in 0..<10 { _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n)), root: "R\(n % 3)") }
        let remembered = try Self.freshLoad(suite)
        let length = try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { $0.head(notes: 0).notesLength }
        SuiteLedger.forgetViews()  // as a new process
        let first = try Self.cost(of: suite, root: "R0", value: 100)
        #expect(first.replayed == length - 24 && first.read == length, "the first write read \(first.read) bytes, replayed \(first.replayed)")
        let second = try Self.cost(of: suite, root: "R1", value: 101)
        #expect(second.replayed == 0, "a process writing again keeps its view")
        let after = try Self.freshLoad(suite)
        #expect(after["R2"] == remembered["R2"], "an entry no write touched is as it was")
        #expect(after["R0"]?.latest == SuiteLedger.xml(["Int": NSNumber(value: 100)] as [String: Any]))
        #expect(after["R0"]?.history.contains(remembered["R0"]!.latestHash) == true, "the value it replaced is remembered")
    }

    @Test("a process that has not read the journal replays it to the same entries as the writer's own view")
    func replayMatchesView() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        for n in 0..<5 {
            _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n)), root: "A")
            _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n * 10)), root: "B")
        }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 2)), root: "A")  // back to a value it replaced
        let view = try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { SuiteLedger.load($0).entries }
        let replayed = try Self.freshLoad(suite)
        #expect(view == replayed)
        let a = try #require(replayed["A"])
        // Replaced: the absent value, 0, 1, 3 and 4; 2 left the history when it became the latest again.
        #expect(a.history.count == 5 && a.latest == SuiteLedger.xml(["Int": NSNumber(value: 2)] as [String: Any]))
        #expect(!a.history.contains(a.latestHash), "the latest value is not among the ones it replaced")
    }

    @Test("the journal is rewritten once it has grown to twice its size after its last rewrite, keeping what it amounts to")
    func rewriteBoundsTheJournal() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let big = String(repeating: "x", count: 8_000)
        var longest = 0
        for n in 0..<200 {
            _ = try suite.store.apply(.set(key: "S", value: "\(n)" + big), root: "Big")
            let length = try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { $0.head(notes: 0).notesLength }
            longest = max(longest, length)
        }
        // 200 steps of ~8 KB (1.6 MB) appended; rewrites keep it within twice what the ledger
        // needs (a header, the latest value with its XML wrapper, 8 bytes per replaced value)
        // plus a step.
        let needed = 24 + 8_300 + 8 * 200
        let step = 8_400
        #expect(longest < max(SuiteLedger.compactionFloor, SuiteLedger.compactionFactor * needed) + step, "journal grew to \(longest) bytes")
        let entry = try #require(try Self.freshLoad(suite)["Big"])
        #expect(entry.latest == SuiteLedger.xml(["S": "199" + big] as [String: Any]))
        #expect(entry.history.count == 200, "every replaced value survives the rewrites (the first write replaced the absent value)")
    }

    @Test("a failed write's steps are dropped: the journal is as it was")
    func restoreDropsSteps() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: "R")
        try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { lock in
            let original = SuiteLedger.load(lock)
            let length = lock.head(notes: 0).notesLength
            var ledger = original
            ledger.record("R", before: ["Int": NSNumber(value: 1)], after: ["Int": NSNumber(value: 2)], beforeIsLatest: true)
            ledger.save(to: lock)
            #expect(lock.head(notes: 0).notesLength > length)
            original.restore(lock)
            #expect(lock.head(notes: 0).notesLength == length)
            #expect(SuiteLedger.load(lock).entries == original.entries)
        }
        #expect(try Self.freshLoad(suite)["R"]?.latest == SuiteLedger.xml(["Int": NSNumber(value: 1)] as [String: Any]))
    }

    @Test("an older ledger form or a damaged journal is replaced by an empty one, and writes go on", arguments: ["old", "garbage", "cut"])
    func damagedJournal(kind: String) throws {
        let suite = TestSuite()
        defer { suite.remove() }
        for n in 0..<3 { _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: n)), root: "R") }
        try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { lock in
            switch kind {
            case "old":  // the whole-ledger form of earlier versions: a count, then entries
                lock.storeNotes(Data([1, 0, 0, 0, 0, 0, 0, 0]) + Data(repeating: 7, count: 40))
            case "garbage":
                lock.storeNotes(Data((0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37) }))
            default:  // a step cut short
                lock.setNotesLength(lock.head(notes: 0).notesLength - 3)
            }
        }
        SuiteLedger.forgetViews()
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 9)), root: "R")
        #expect(try suite.store.load(root: "R")?["Int"] as? Int == 9)
        let entry = try #require(try Self.freshLoad(suite)["R"])
        #expect(entry.latest == SuiteLedger.xml(["Int": NSNumber(value: 9)] as [String: Any]))
    }

    @Test("a stale plain save is put back by a process that did not make the write it undid")
    func staleSaveAcrossViews() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: "R")
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 2)), root: "R")
        try StaleSaveTests.staleSave(snapshot, to: suite)
        SuiteLedger.forgetViews()  // the next write comes as from another process
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 9)), root: "Q")
        #expect(try suite.store.load(root: "R")?["Int"] as? Int == 2)
    }
}

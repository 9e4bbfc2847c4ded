import Foundation
import Testing

@testable import PersistentPrefs

/// What a suite's lock file holds and when it goes (issue #37): its notes stay within what the
/// ledger needs, and removing a whole suite or set removes it, without ever letting two writers
/// hold the lock at once.
@Suite("Lock files: bounded notes, removed with the suite", .serialized, waitLimit)
struct LockFileTests {
    /// The size of the file at `path` (0 when there is none).
    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// The names in `directory` that start with `prefix`.
    static func names(in directory: String, startingWith prefix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(prefix) }.sorted()
    }

    @Test("1,000 writes to a 500-byte suite keep the lock file within twice what the ledger needs, and the ledger still puts back a value a stale save undid", .linuxSuiteFiles)
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

    @Test("a compacted journal leaves the lock file no larger than its notes", .linuxSuiteFiles)
    func compactionShrinksTheFile() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let big = String(repeating: "b", count: 6_000)
        for n in 0..<20 { _ = try suite.store.apply(.set(key: "S", value: "\(n)" + big), root: "R\(n)") }
        try FileLock.withLock(for: URL(fileURLWithPath: suite.path), label: "test") { lock in
            #expect(lock.fileSize > 60_000)
            SuiteLedger.clear(lock)
            #expect(lock.fileSize == Int(FileLock.notesOffset) + 4 + lock.head(notes: 0).notesLength, "the file is cut after the notes")
        }
    }

    @Test("a lock file cut short inside its record reads as having none, also after notes are written past it")
    func recordCutShort() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-lock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("suite.plist")
        let signature = try #require(FileSignature(fields: [7, 8, 9, 10, 11]))
        try FileLock.withLock(for: file, label: "test") { lock in
            lock.store(FileLock.Record(written: signature, foreignWriteSeen: 5, writtenDigest: 0x1122_3344_5566_7788))
            #expect(lock.head(notes: 0).record.writtenDigest == 0x1122_3344_5566_7788)
        }
        // Cut inside the digest, the record's last field, as a crash or a full disk may leave it.
        #expect(truncate(file.path + ".lock", 61) == 0)
        try FileLock.withLock(for: file, label: "test") { lock in
            let cut = lock.head(notes: 0).record
            #expect(cut.written == nil && cut.writtenDigest == 0, "a short record reads as none")
            lock.storeNotes(Data([1, 2, 3]))
            let record = lock.head(notes: 0).record
            #expect(record.written != signature, "the cut record's remains are not taken for a record")
            #expect(record.writtenDigest == 0 && record.foreignWriteSeen == 0)
            #expect(lock.head(notes: 0).notesLength == 3)
        }
    }

    @Test("removing a suite removes its lock file and damage note; its schemas and damaged copies stay")
    func removeSuite() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = PreferencesFile(url: URL(fileURLWithPath: directory.path + "/S.plist"))
        try file.update { $0["K"] = 1 }
        let schemas = directory.path + "/S.schemas"
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: schemas + "/Set.json"))
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: directory.path + "/S.plist.damaged"))
        try Data("old".utf8).write(to: URL(fileURLWithPath: directory.path + "/S.plist.corrupt-1-2"))
        #expect(try file.remove())
        #expect(Self.names(in: directory.path, startingWith: "S.") == ["S.plist.corrupt-1-2", "S.schemas"])
        #expect(FileManager.default.fileExists(atPath: schemas + "/Set.json"))
        #expect(try file.remove() == false, "removing no suite")
        #expect(Self.names(in: directory.path, startingWith: "S.plist") == ["S.plist.corrupt-1-2"], "leaves no lock file either")
        try file.update { $0["K"] = 2 }
        #expect(try file.contents()?["K"] as? Int == 2, "a suite written again after its removal")
    }

    @Test("removing a suite by name removes its lock file", .linuxSuiteFiles)
    func removeSuiteByName() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: "R")
        #expect(FileManager.default.fileExists(atPath: suite.path + ".lock"))
        #expect(try PreferencesFile(suiteName: suite.name).remove())
        #expect(!FileManager.default.fileExists(atPath: suite.path))
        #expect(!FileManager.default.fileExists(atPath: suite.path + ".lock"))
    }

    @Test("removing a set from a folder store removes its lock file and root-name note")
    func removeSet() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["a": 1], root: "Main")  // upper case: a shortened name with a `.root` note
        try store.save(["a": 1], root: "other")
        let before = Self.names(in: directory.path, startingWith: "")
        #expect(before.contains { $0.hasSuffix(".plist.root") }, "\(before)")
        try store.remove(root: "Main")
        _ = try store.apply(.replace([:]), root: "other")  // emptied: removed the same way
        let after = Self.names(in: directory.path, startingWith: "").filter { !$0.hasSuffix(".json") }
        #expect(after.isEmpty, "left: \(after)")
        #expect(try store.roots().isEmpty)
    }

    /// Runs `body(0)` … `body(count - 1)` on threads of their own, and waits for them all.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            Thread.detachNewThread {
                body(index)
                done.leave()
            }
        }
        done.wait()
    }

    @Test("writers and a remover of the whole suite racing: never two lock holders, no write lost, nothing left after the last removal")
    func writersRacingRemovals() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let url = URL(fileURLWithPath: directory.path + "/S.plist")
        let inside = Locked(0)
        let most = Locked(0)
        let lost = Locked<[String]>([])
        let failures = Locked<[String]>([])
        // Threads of their own (each lock holder opens the lock file itself, as processes do).
        Self.onThreads(5) { thread in
            if thread < 4 {
                let writer = thread
                let file = PreferencesFile(url: url)
                for n in 1...150 {
                        do {
                            try file.update { keys in
                                let holders = inside.withLock { count in
                                    count += 1
                                    return count
                                }
                                most.withLock { $0 = max($0, holders) }
                                // A read-modify-write: with two holders at once, one's count is lost.
                                let count = (keys["Count"] as? Int) ?? 0
                                usleep(100)
                                keys["Count"] = count + 1
                                keys["W\(writer)"] = n
                                inside.withLock { $0 -= 1 }
                            }
                            // Its key holds what it wrote, or a later write's, or is gone with a
                            // removal: never an earlier value (a write lost under a stale lock).
                            if let found = try file.contents()?["W\(writer)"] as? Int, found < n {
                                lost.withLock { $0.append("writer \(writer) wrote \(n), found \(found)") }
                            }
                        } catch {
                            failures.withLock { $0.append("writer \(writer): \(error)") }
                        }
                }
            } else {
                let file = PreferencesFile(url: url)
                for _ in 0..<150 {
                    do {
                        _ = try file.remove()
                    } catch {
                        failures.withLock { $0.append("remover: \(error)") }
                    }
                    usleep(200)
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(most.withLock { $0 } == 1, "\(most.withLock { $0 }) writers held the lock at once")
        #expect(lost.withLock { $0 }.isEmpty, "\(lost.withLock { $0 })")
        // Without removals in between, every increment counts.
        let file = PreferencesFile(url: url)
        try file.update { $0 = ["Count": 0] }
        Self.onThreads(3) { _ in
            for _ in 0..<50 { try? file.update { $0["Count"] = (($0["Count"] as? Int) ?? 0) + 1 } }
        }
        #expect(try file.contents()?["Count"] as? Int == 150)
        #expect(try file.remove())
        #expect(Self.names(in: directory.path, startingWith: "S.").isEmpty, "left: \(Self.names(in: directory.path, startingWith: "S."))")
    }
}

import Foundation
import PersistentPrefs
import Testing

/// The library beside plain `UserDefaults` code on the same suite, with real processes: the
/// default case on `.standard`. Each scenario runs `PREFS_COEXIST_ROUNDS` rounds (5 unless set)
/// of 300 library writes of distinct keys of one root key and 300 plain writes of top-level
/// keys, and prints its figures for the DocC article "Linux, reliability and what is measured".
@Suite("Coexistence with plain UserDefaults", .linuxSuiteFiles, waitLimit)
struct CoexistenceTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["PREFS_COEXIST_ROUNDS"] ?? "") ?? 5
    static let writes = 300

    /// What one scenario lost, over all rounds.
    struct Tally: CustomStringConvertible {
        var libraryLost = 0
        var libraryRefused = 0
        var plainLost = 0
        var movedAside = 0
        /// Library keys a plain reader found in the file before any library access.
        var libraryFoundInFile = 0
        var description: String {
            "library writes lost \(libraryLost) (refused with an error \(libraryRefused); \(libraryFoundInFile) found by a plain reader before any library access), plain writes lost \(plainLost), suites moved aside \(movedAside)"
        }
    }

    /// Runs the helper commands of one round at once, in their own processes; returns their outputs.
    static func runTogether(_ child: ChildProcess, _ commands: [[String]]) throws -> [String] {
        let processes = try commands.map { arguments -> (Process, Pipe) in
            let process = try child.process("prefs-test-helper", arguments)
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            return (process, output)
        }
        for (process, _) in processes { try process.run() }
        return processes.map { process, output in
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }
    }

    /// How many of `k0…k299` the library reads back right from ROOT, in a fresh process; first,
    /// how many a plain reader finds in the file as it is (before the library could put back
    /// what a stale plain save undid), is added to `tally`.
    static func libraryFound(_ child: ChildProcess, suite: String, root: String, tally: inout Tally) throws -> Int {
        let plain = try child.run("prefs-test-helper", ["plain-count-root", suite, root, "0", "\(writes)"])
        tally.libraryFoundInFile += Int(plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return try libraryFound(child, suite: suite, root: root)
    }

    /// How many of `k0…k299` the library reads back right from ROOT, in a fresh process.
    static func libraryFound(_ child: ChildProcess, suite: String, root: String) throws -> Int {
        let fields = try child.run("prefs-test-helper", ["count-keys", suite, root]).stdout.split(separator: " ")
        return fields.count == 2 ? Int(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 : 0
    }

    /// How many of `p0…p299` plain UserDefaults reads back, in a fresh process.
    static func plainFound(_ child: ChildProcess, suite: String) throws -> Int {
        let output = try child.run("prefs-test-helper", ["plain-count", suite, "-", "0", "\(writes)"])
        return Int(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Files moved aside as damaged under the config folder.
    static func movedAside(_ directory: TemporaryDirectory) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.contains(".corrupt-") }.count
    }

    static func refusals(_ output: String) -> Int {
        output.split(separator: "\n").filter { $0.hasPrefix("refused ") }.count
    }

    /// One round per call of `round`, each in a fresh config folder.
    static func tally(_ name: String, _ round: (ChildProcess, TemporaryDirectory, inout Tally) throws -> Void) throws -> Tally {
        var tally = Tally()
        for _ in 0..<rounds {
            let (child, directory) = ChildProcess.inTemporaryConfigHome()
            defer { directory.remove() }
            try round(child, directory, &tally)
            tally.movedAside += movedAside(directory)
        }
        print("[coexistence] \(name), \(rounds) rounds × (\(writes) library + \(writes) plain writes): \(tally)")
        return tally
    }

    @Test("two processes, library and plain set + synchronize(), on a named suite and on .standard", arguments: ["coexist", "standard"])
    func twoProcesses(suite: String) throws {
        let tally = try Self.tally("two processes, \(suite == "standard" ? ".standard" : "named suite")") { child, _, tally in
            let outputs = try Self.runTogether(child, [
                ["write-keys", suite, "R", "0", "\(Self.writes)"],
                ["plain-write-keys", suite, "sync", "0", "\(Self.writes)"],
            ])
            let refused = Self.refusals(outputs[0])
            tally.libraryRefused += refused
            tally.libraryLost += Self.writes - refused - (try Self.libraryFound(child, suite: suite, root: "R", tally: &tally))
            tally.plainLost += Self.writes - (try Self.plainFound(child, suite: suite))
        }
        #expect(tally.libraryLost == 0)
        #expect(tally.movedAside == 0)
    }

    @Test("one process, a library thread and a plain set + synchronize() thread", arguments: ["coexist", "standard"])
    func oneProcessTwoThreads(suite: String) throws {
        let tally = try Self.tally("one process, two threads, \(suite == "standard" ? ".standard" : "named suite")") { child, _, tally in
            let output = try child.run("prefs-test-helper", ["mixed-threads", suite, "R", "0", "\(Self.writes)"]).stdout
            let refused = Int(output.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? Self.writes
            tally.libraryRefused += refused
            tally.libraryLost += Self.writes - refused - (try Self.libraryFound(child, suite: suite, root: "R", tally: &tally))
            tally.plainLost += Self.writes - (try Self.plainFound(child, suite: suite))
        }
        #expect(tally.libraryLost == 0)
        #expect(tally.plainLost == 0)
        #expect(tally.movedAside == 0)
    }

    /// `store`: how process A's library opens the suite: through `groupID` (an object made for it), or by name (no
    /// object of the library's before its first write: the write makes one to save plain code's keys).
    @Test("process A: plain set without synchronize() then a library write to P; process B: library writes to Q",
          arguments: ["groupID", "named"])
    func unsavedPlainKeys(store: String) throws {
        var otherLost = 0
        let tally = try Self.tally("unsaved plain keys beside a second library process, A's store by \(store)") { child, _, tally in
            let outputs = try Self.runTogether(child, [
                ["unsaved-then-library", "coexist", "P", "0", "\(Self.writes)"] + (store == "named" ? ["named"] : []),
                ["write-keys", "coexist", "Q", "0", "\(Self.writes)"],
            ])
            let refusedA = Int(outputs[0].split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? Self.writes
            let refusedB = Self.refusals(outputs[1])
            tally.libraryRefused += refusedA + refusedB
            tally.libraryLost += Self.writes - refusedA - (try Self.libraryFound(child, suite: "coexist", root: "P", tally: &tally))
            otherLost += Self.writes - refusedB - (try Self.libraryFound(child, suite: "coexist", root: "Q"))
            // A's plain keys are saved by its library writes, the last one included.
            tally.plainLost += Self.writes - (try Self.plainFound(child, suite: "coexist"))
        }
        print("[coexistence] … of them, process B's root Q lost \(otherLost)")
        #expect(tally.libraryLost + otherLost == 0)
        #expect(tally.plainLost == 0)
        #expect(tally.movedAside == 0)
    }
}

/// The ledger in a suite's lock file, with a stale plain save made by hand (deterministic).
@Suite("Putting back what a stale plain save undid", .linuxSuiteFiles, waitLimit)
struct StaleSaveTests {
    /// Rewrites the suite file in place from `snapshot`, plus a plain key, as a plain save that
    /// read the file earlier does.
    static func staleSave(_ snapshot: Data, to suite: TestSuite) throws {
        var old = try #require(try PropertyListSerialization.propertyList(from: snapshot, format: nil) as? [String: Any])
        old["plain"] = 1
        let data = try PropertyListSerialization.data(fromPropertyList: old, format: .xml, options: 0)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: suite.path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: data)
        try handle.close()
    }

    /// A set written before the stale save read the file (`R` itself, or another one, so `R`
    /// did not exist yet), then `R` written again before the save landed.
    @Test("a library write that a stale save undid never reads as undone (reads never write), and the next library write puts it back, keeping the plain key",
          arguments: ["R", "Other"])
    func revertedWrite(writtenFirst: String) throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: writtenFirst)
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 2)), root: "R")
        try Self.staleSave(snapshot, to: suite)
        let reverted = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        let undone = try PropertyListSerialization.propertyList(from: reverted, format: nil) as? [String: Any]
        #expect((undone?["R"] as? [String: Any])?["Int"] as? Int == (writtenFirst == "R" ? 1 : nil), "the file holds the stale save")
        #expect(try suite.store.load(root: "R")?["Int"] as? Int == 2, "read as the next write will leave it")
        #expect(try Data(contentsOf: URL(fileURLWithPath: suite.path)) == reverted, "a read changed the file")
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 9)), root: "Q")
        #expect(try suite.store.load(root: "R")?["Int"] as? Int == 2)
        let file = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: suite.path)), format: nil)
        #expect((file as? [String: Any])?["plain"] as? Int == 1)
    }

    /// A stale save that lands after the write returned: a read from the file (as a process that
    /// was not running reads it) and the observer, which hears what that read changed, never see
    /// the older value. (The ledger remembers writes for two minutes: no wait for the watcher.)
    @Test("a value never goes back for a reader or an observer once its write returned", waitLimit)
    func noStepBack() async throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = TreePrefs(key: "R", store: suite.store)
        prefs.values = ["a": 1]
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        prefs.values = ["a": 2]
        #expect(prefs.lastError == nil)
        let events = prefs.changes()
        try Self.staleSave(snapshot, to: suite)
        #expect(try prefs.reload()["a"] as? Int == 2, "read after the stale save")
        #expect(prefs.values["a"] as? Int == 2)
        prefs.values = ["a": 3]
        var seen: [Int?] = []
        for await _ in events {
            seen.append(prefs.values["a"] as? Int)
            if seen.last == 3 { break }
        }
        #expect(!seen.contains(1), "an observer saw the value go back: \(seen)")
    }

    @Test("a suite removed on purpose stays removed")
    func removedSuite() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: "R")
        suite.store.userDefaults.removePersistentDomain(forName: suite.name)
        _ = suite.store.userDefaults.synchronize()
        #expect(try suite.store.load(root: "R") == nil)
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 3)), root: "Q")
        #expect(try suite.store.load(root: "R") == nil)
    }
}

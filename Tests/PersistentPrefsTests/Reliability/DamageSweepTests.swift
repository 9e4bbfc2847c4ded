import Foundation
import Testing

@testable import PersistentPrefs

/// A program's set whose suite file is damaged in every way a disk or an editor damages one, met
/// from outside: the harness and the program (`prefs-test-helper`, `AudioPrefs`) as separate
/// processes. No damage may leave the set stuck, lose the damaged bytes, or be reported as a
/// success that did not happen.
@Suite("Damaged files, swept from outside", .linuxSuiteFiles, waitLimit)
struct DamageSweepTests {
    /// The sweep runs in the plain test run; CI's sanitizer runs set `PREFS_DAMAGE_SWEEP=0`.
    static var sweepEnabled: Bool { ProcessInfo.processInfo.environment["PREFS_DAMAGE_SWEEP"] != "0" }

    /// One suite "S" holding the program's set "AppPrefs" (Volume 7, Device "speaker"), written by
    /// the program, with its schema file; `good` is the suite file as the program left it.
    struct Fixture {
        let child: ChildProcess
        let directory: TemporaryDirectory
        let file: String
        let good: Data

        init() throws {
            (child, directory) = ChildProcess.inTemporaryConfigHome()
            file = directory.path + "/S.plist"
            for (key, value) in [("volume", "7"), ("device", "speaker")] {
                let written = try child.run("prefs-test-helper", ["audio-set", "S", "AppPrefs", key, value])
                guard written.stdout == "ok\n" else { throw ChildProcessError(message: "the program's write failed: \(written.stdout)") }
            }
            good = try Data(contentsOf: URL(fileURLWithPath: file))
        }

        func harness(_ words: String...) throws -> ChildProcess.Output {
            try child.run("prefs-harness", ["--suite", "S", "--key", "AppPrefs"] + words)
        }

        /// What the program reads: `volume=… theme=… … problems=N`.
        func program() throws -> String {
            try child.run("prefs-test-helper", ["audio-read", "S", "AppPrefs"]).stdout
        }

        /// The copies moved aside, by name.
        func copies() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("S.plist.corrupt-") }.sorted()
        }

        func copy(_ name: String) throws -> Data {
            try Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + name))
        }

        /// Puts `bytes` in the suite file's place, with no copy or note of earlier damage beside it.
        func place(_ bytes: Data) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix("S.plist.corrupt-") || name == "S.plist.damaged" {
                try FileManager.default.removeItem(atPath: directory.path + "/" + name)
            }
            try? FileManager.default.removeItem(atPath: file)
            try bytes.write(to: URL(fileURLWithPath: file))
        }

        func current() -> Data? {
            FileManager.default.contents(atPath: file)
        }
    }

    /// The three kinds of damage, at `offset` of `good`.
    static func damaged(_ good: Data, kind: Int, at offset: Int) -> Data {
        var bytes = Array(good)
        switch kind {
        case 0: for index in offset..<min(offset + 30, bytes.count) { bytes[index] = UInt8(ascii: "X") }
        case 1: bytes.removeSubrange(offset...)
        default: for index in offset..<min(offset + 8, bytes.count) { bytes[index] = 0 }
        }
        return Data(bytes)
    }

    static let kinds = ["30 bytes overwritten", "cut short", "8 NUL bytes"]

    /// Whether Python's `plistlib` reads the file (`nil` where there is no `python3`).
    static func plistlibReads(_ path: String) -> Bool? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import plistlib, sys; plistlib.load(open(sys.argv[1], 'rb'))", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        if process.terminationStatus == 127 { return nil }  // no python3 here
        return process.terminationStatus == 0
    }

    @Test("24 offsets × 3 kinds of damage: no set is stuck, no byte is lost, no success is claimed that did not happen",
        .enabled(if: sweepEnabled, "PREFS_DAMAGE_SWEEP=0"))
    func sweep() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let good = fixture.good
        #expect(try fixture.program().hasPrefix("volume=7 "))
        var tally = [String: Int]()
        for kind in Self.kinds.indices {
            for step in 0..<24 {
                let offset = good.count * step / 24
                let bytes = Self.damaged(good, kind: kind, at: offset)
                let label = "\(Self.kinds[kind]) at \(offset)"
                try fixture.place(bytes)
                let ours = PlistXML.read(bytes)
                let theirs = (try? PropertyListSerialization.propertyList(from: bytes, format: nil)) is [String: Any]
                if case .success = ours {
                    // Read leniently (the damage hit a value's text): what the library then writes,
                    // every reader reads.
                    tally["read by the library", default: 0] += 1
                    let set = try fixture.harness("set", "Volume", "4")
                    #expect(set.status == 0, "\(label): \(set.stderr)")
                    let written = try #require(fixture.current(), "\(label)")
                    #expect(PlistFile.dictionary(from: written) != nil, "\(label): the library reads what it wrote")
                    #expect((try? PropertyListSerialization.propertyList(from: written, format: nil)) is [String: Any], "\(label): Foundation reads it")
                    #expect(Self.plistlibReads(fixture.file) != false, "\(label): plistlib reads it")
                    #expect(try fixture.program().hasPrefix("volume=4 "), "\(label)")
                } else if theirs {
                    // Foundation reads it, the library cannot keep it exactly: left in place, every
                    // command says how to resolve it, and acknowledge does.
                    tally["left in place", default: 0] += 1
                    let list = try fixture.harness("list")
                    #expect(list.status == 1 && list.stderr.contains("acknowledge") && !list.stderr.contains("starts it afresh"), "\(label): \(list.stderr)")
                    let set = try fixture.harness("set", "Volume", "4")
                    #expect(set.status == 1 && set.stderr.contains("acknowledge") && fixture.current() == bytes, "\(label): \(set.stderr)")
                    let acknowledge = try fixture.harness("acknowledge")
                    #expect(acknowledge.status == 0 && acknowledge.stdout.contains("byte for byte"), "\(label): \(acknowledge.stderr)")
                    #expect(try fixture.copies().map(fixture.copy) == [bytes], "\(label): the file is kept beside, byte for byte")
                    #expect(try fixture.harness("set", "Volume", "4").status == 0, "\(label)")
                    #expect(try fixture.program().hasPrefix("volume=4 "), "\(label)")
                } else {
                    tally["damaged", default: 0] += 1
                    // No reader reads it: damage. list says so and moves it aside, byte for byte.
                    let list = try fixture.harness("list")
                    #expect(list.status == 1 && list.stdout.isEmpty, "\(label)")
                    #expect(list.stderr.contains("unreadable: it is damaged") && list.stderr.contains("moved aside to"), "\(label): \(list.stderr)")
                    #expect(try fixture.copies().map(fixture.copy) == [bytes], "\(label): the damaged bytes are kept beside the file")
                    // One set succeeds and reads back, in the harness and in the program.
                    let set = try fixture.harness("set", "Volume", "4")
                    #expect(set.status == 0 && set.stdout == "Volume = 4\n", "\(label): \(set.stderr)")
                    let get = try fixture.harness("get", "Volume")
                    #expect(get.status == 0 && get.stdout == "4\n" && get.stderr.isEmpty, "\(label): \(get.stderr)")
                    #expect(try fixture.program().hasPrefix("volume=4 "), "\(label)")
                    // reset never exits 0 leaving the damaged file as it was.
                    try fixture.place(bytes)
                    let reset = try fixture.harness("reset")
                    if reset.status == 0 { #expect(fixture.current() != bytes, "\(label): reset claimed success over the damaged file") }
                    #expect(try fixture.copies().map(fixture.copy) == [bytes], "\(label)")
                    let after = try fixture.harness("list")
                    #expect(after.status == 0, "\(label): after reset, \(after.stderr)")
                }
            }
        }
        print("[damage sweep] \(tally.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))")
        // Each way of meeting a file came up (which way a given offset takes is the readers' call).
        #expect(tally["damaged", default: 0] >= 40 && tally["read by the library", default: 0] >= 1, "\(tally)")
    }

    @Test("a good file put back by hand reads at once, in the harness and in the program, and problems no longer lists the damage")
    func restoredByHand() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try fixture.place(Self.damaged(fixture.good, kind: 0, at: 200))
        #expect(try fixture.harness("list").status == 1)
        #expect(try fixture.copies().count == 1 && FileManager.default.fileExists(atPath: fixture.file + ".damaged"))
        let damagedRead = try fixture.program()
        #expect(damagedRead.hasPrefix("volume=5 ") && damagedRead.hasSuffix("problems=1\n"), "\(damagedRead)")
        // The good file goes back by hand; the note of the damage is still beside it.
        try fixture.good.write(to: URL(fileURLWithPath: fixture.file))
        let get = try fixture.harness("get", "Volume")
        #expect(get.status == 0 && get.stdout == "7\n" && get.stderr.isEmpty, "\(get.stderr)")
        #expect(try fixture.program() == "volume=7 theme=system muted=false device=speaker locked=[] forced=false problems=0\n")
        let set = try fixture.harness("set", "Volume", "3")
        #expect(set.status == 0 && set.stderr.isEmpty, "no word of damage: \(set.stderr)")
        #expect(try fixture.program().hasPrefix("volume=3 theme=system muted=false device=speaker "), "the restored values are kept")
        #expect(!FileManager.default.fileExists(atPath: fixture.file + ".damaged"), "the write removed the note that no longer held")
    }

    @Test("a file Foundation reads but the library cannot keep exactly: every command says so and names acknowledge; no success is claimed")
    func leftInPlace() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        // UTF-16: Foundation reads it, the library reads UTF-8 only.
        let text = String(decoding: fixture.good, as: UTF8.self).replacingOccurrences(of: "UTF-8", with: "UTF-16")
        let bytes = try #require(text.data(using: .utf16))
        try fixture.place(bytes)
        for words in [["list"], ["get", "Volume"], ["set", "Volume", "4"], ["reset"], ["delete"], ["incr", "Volume"], ["dump"]] {
            let result = try fixture.child.run("prefs-harness", ["--suite", "S", "--key", "AppPrefs"] + words)
            #expect(result.status == 1 && result.stdout.isEmpty, "\(words): \(result.stdout)")
            #expect(result.stderr.contains("cannot read exactly") && result.stderr.contains("'prefs-harness --suite S --key AppPrefs acknowledge' moves it aside"), "\(words): \(result.stderr)")
            #expect(!result.stderr.contains("A write (set") && !result.stderr.contains("warning"), "no promise that a write fixes it: \(words): \(result.stderr)")
        }
        for words in [["defaults", "write", "S", "X", "-int", "3"], ["defaults", "delete", "S"], ["defaults", "read", "S"], ["defaults", "delete", "S", "X"]] {
            let result = try fixture.child.run("prefs-harness", words)
            #expect(result.status == 1 && result.stderr.contains("'prefs-harness --suite S acknowledge' moves it aside"), "\(words): \(result.stderr)")
        }
        #expect(fixture.current() == bytes, "nothing touched it")
        #expect(try fixture.copies().isEmpty)
        let acknowledge = try fixture.child.run("prefs-harness", ["--suite", "S", "acknowledge", "--json"])
        #expect(acknowledge.status == 0, "\(acknowledge.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(acknowledge.stdout.utf8)) as? [String: Any])
        let copy = try #require(report["movedTo"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == bytes && fixture.current() == nil)
        let set = try fixture.harness("set", "Volume", "4")
        #expect(set.status == 0 && set.stderr.isEmpty, "\(set.stderr)")
        #expect(try fixture.program().hasPrefix("volume=4 ") && fixture.program().hasSuffix("problems=0\n"))
        let again = try fixture.harness("acknowledge")
        #expect(again.status == 0 && again.stdout.hasPrefix("Nothing to acknowledge"), "\(again.stdout)")
    }

    @Test("defaults commands that meet a damaged file first say so: a write warns and starts afresh, a key's delete or rename is refused")
    func defaultsMeetDamage() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let bytes = Self.damaged(fixture.good, kind: 0, at: 170)
        for words in [["delete", "S", "AppPrefs"], ["rename", "S", "AppPrefs", "Other"]] {
            try fixture.place(bytes)
            let refused = try fixture.child.run("prefs-harness", ["defaults"] + words)
            #expect(refused.status == 1 && refused.stderr.contains("is unreadable: it is damaged") && !refused.stderr.contains("has no key"), "\(words): \(refused.stderr)")
            #expect(try fixture.copies().map(fixture.copy) == [bytes], "\(words)")
        }
        for words in [["write", "S", "Foo", "1"], ["write", "S", "AppPrefs", "-dict-add", "Volume", "-int", "2"]] {
            try fixture.place(bytes)
            let written = try fixture.child.run("prefs-harness", ["defaults"] + words)
            #expect(written.status == 0 && written.stderr.hasPrefix("prefs-harness: warning: ") && written.stderr.contains("moved aside to"), "\(words): \(written.stderr)")
            #expect(try fixture.copies().map(fixture.copy) == [bytes], "\(words)")
        }
        // Nothing there: nothing to acknowledge, and nothing made.
        let none = try fixture.child.run("prefs-harness", ["--suite", "NoSuch", "acknowledge"])
        #expect(none.status == 0 && none.stdout == "Nothing to acknowledge: no damage is reported for the UserDefaults suite \"NoSuch\".\n", "\(none)")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path + "/NoSuch.plist.lock"))
    }

    @Test("acknowledge after a damaged file was moved aside ends the report; the copy stays")
    func acknowledgeMovedAside() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let bytes = Self.damaged(fixture.good, kind: 1, at: 100)
        try fixture.place(bytes)
        let get = try fixture.harness("get", "Volume")
        #expect(get.status == 1 && get.stderr.contains("'prefs-harness --suite S --key AppPrefs acknowledge' ends this report"), "\(get.stderr)")
        let acknowledge = try fixture.harness("acknowledge")
        #expect(acknowledge.status == 0 && acknowledge.stdout.hasPrefix("Acknowledged, and no longer reported: The preferences store at \(fixture.file) is unreadable"), "\(acknowledge.stdout)")
        let after = try fixture.harness("get", "Volume")
        #expect(after.status == 0 && after.stdout == "5\n", "the set reads its defaults: \(after.stderr)")
        #expect(try fixture.program().hasSuffix("problems=0\n"))
        #expect(try fixture.copies().map(fixture.copy) == [bytes])
        // defaults delete of a domain whose file was moved aside removes what is left of it, and
        // says so: the report ends, the copy stays.
        try fixture.place(bytes)
        #expect(try fixture.harness("get", "Volume").status == 1)
        let delete = try fixture.child.run("prefs-harness", ["defaults", "delete", "S"])
        #expect(delete.status == 0 && delete.stderr.contains("removed what was left of the domain S"), "\(delete.stderr)")
        #expect(try fixture.harness("get", "Volume").status == 0)
        #expect(try fixture.copies().map(fixture.copy) == [bytes])
        let again = try fixture.child.run("prefs-harness", ["defaults", "delete", "S"])
        #expect(again.status == 1 && again.stderr.contains("Domain (S) not found"), "\(again.stderr)")
    }
}

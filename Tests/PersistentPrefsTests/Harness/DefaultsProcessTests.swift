import Foundation
import PersistentPrefs
import Testing

/// `prefs-harness defaults` on suites by name, with real processes and a config folder of
/// their own: the tool against plain `UserDefaults` both ways, and a tool write seen live by a
/// program that uses the library.
@Suite("Harness: defaults across processes", .linuxSuiteFiles, waitLimit)
struct DefaultsProcessTests {
    @Test("PREFS_HARNESS_TIMING=1 reports start-up and work on stderr, and changes nothing else")
    func timing() throws {
        let (plain, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        var child = plain
        child.environment["PREFS_HARNESS_TIMING"] = "1"
        let write = try child.run("prefs-harness", ["defaults", "write", "timed", "Volume", "-int", "7"])
        #expect(write.status == 0)
        #expect(write.stdout.isEmpty)
        let line = try #require(write.stderr.split(separator: "\n").last.map(String.init))
        #expect(line.hasPrefix("prefs-harness: timing: start-up "), "\(line)")
        let work = try #require(line.components(separatedBy: "work ").last?.components(separatedBy: " ms").first.flatMap(Double.init))
        #expect(work > 0 && work < 10_000)
        // Then the page faults the work took, a count.
        let faults = line.components(separatedBy: "ms (").last?.components(separatedBy: " page faults)").first.flatMap(Int.init)
        #expect(faults.map { $0 >= 0 } == true, "\(line)")
        let read = try child.run("prefs-harness", ["defaults", "read", "timed", "Volume"])
        #expect(read.stdout == "7\n")
        #expect(read.stderr.contains("timing: start-up"))
        // A failing command still reports, after its error.
        let refused = try child.run("prefs-harness", ["defaults", "read", "timed", "Nope"])
        #expect(refused.status != 0)
        #expect(refused.stderr.hasSuffix("page faults)\n"))
    }

    @Test("a damaged suite is said aloud: every read names the copy and exits 1; a write warns, starts afresh and exits 0")
    func damagedSuite() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        #expect(try child.run("prefs-harness", ["defaults", "write", "hurt", "Theme", "light"]).status == 0)
        let file = directory.path + "/hurt.plist"
        try Data("<?xml version=\"1.0\"?><plist><dict><key>Th".utf8).write(to: URL(fileURLWithPath: file))
        // The first read moves the file aside; the later ones, and the set's own commands, still say so.
        for arguments in [
            ["defaults", "read", "hurt"], ["defaults", "read", "hurt"], ["defaults", "read", "hurt", "Theme"], ["--suite", "hurt", "list"],
            ["--suite", "hurt", "roots"], ["defaults", "delete", "hurt", "Theme"], ["defaults", "rename", "hurt", "Theme", "Colour"],
        ] {
            let read = try child.run("prefs-harness", arguments)
            #expect(read.status == 1 && read.stdout.isEmpty, "\(arguments): \(read)")
            #expect(read.stderr.contains("moved aside to \(file).corrupt-") && !read.stderr.contains("does not exist"), "\(arguments): \(read.stderr)")
        }
        let write = try child.run("prefs-harness", ["defaults", "write", "hurt", "Theme", "dark"])
        #expect(write.status == 0, "\(write)")
        #expect(write.stderr.hasPrefix("prefs-harness: warning: ") && write.stderr.contains("\(file).corrupt-") && write.stderr.contains("starts the domain hurt afresh"), "\(write.stderr)")
        let read = try child.run("prefs-harness", ["defaults", "read", "hurt", "Theme"])
        #expect(read.status == 0 && read.stdout == "dark\n" && read.stderr.isEmpty, "\(read)")
        // A write that is the first to find the damage says so as well, and writes.
        try Data("junk".utf8).write(to: URL(fileURLWithPath: file))
        let first = try child.run("prefs-harness", ["defaults", "write", "hurt", "Volume", "-int", "2"])
        #expect(first.status == 0 && first.stderr.contains("warning: ") && first.stderr.contains("\(file).corrupt-"), "\(first)")
        #expect(try child.run("prefs-harness", ["defaults", "read", "hurt", "Volume"]).stdout == "2\n")
        let copies = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("hurt.plist.corrupt-") }
        #expect(copies.count == 2, "\(copies)")
    }

    @Test("defaults delete DOMAIN leaves nothing of the domain's values: no file, no lock file; its schemas stay")
    func deleteRemovesTheLockFile() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        for n in 1...20 { #expect(try child.run("prefs-harness", ["defaults", "write", "gone", "K", "-int", "\(n)"]).status == 0) }
        try FileManager.default.createDirectory(atPath: directory.path + "/gone.schemas", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path + "/gone.schemas/Set.json"))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/gone.plist.lock"))
        let delete = try child.run("prefs-harness", ["defaults", "delete", "gone"])
        #expect(delete.status == 0, "\(delete.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("gone") }
        #expect(left == ["gone.schemas"], "left: \(left)")
        let again = try child.run("prefs-harness", ["defaults", "delete", "gone"])
        #expect(again.status == 1 && again.stderr.contains("not found"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("gone") } == ["gone.schemas"])
    }

    @Test("with XDG_CONFIG_HOME=/ (which Foundation ignores) the tool and plain UserDefaults both use $HOME/.config")
    func homeFolderRule() throws {
        let (plain, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        var child = plain
        child.environment["XDG_CONFIG_HOME"] = "/"
        child.environment["HOME"] = directory.path
        let put = try child.run("prefs-test-helper", ["plain-put-int", "homerule", "SamplePrefs", "41"])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/.config/homerule.plist"))
        let read = try child.run("prefs-harness", ["defaults", "read", "homerule", "SamplePrefs"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout.contains("\"Integer Value\" = 41;"), "\(read.stdout)")
        let write = try child.run("prefs-harness", ["defaults", "write", "homerule", "Tool", "-int", "5"])
        #expect(write.status == 0, "\(write.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/homerule.plist"))
        let seen = try child.run("prefs-test-helper", ["plain-get", "homerule", "Tool"])
        #expect(seen.stdout.hasPrefix("number(") && seen.stdout.hasSuffix(") 5\n"), "\(seen.stdout) \(seen.stderr)")
    }

    @Test("what the tool writes, plain UserDefaults in another process reads, typed")
    func toolToPlain() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let writes: [([String], String)] = [
            (["S", "-string", "hello world"], "string hello world"),
            (["I", "-int", "42"], "number(q) 42"),
            (["B", "-bool", "true"], "number(c) 1"),
            (["D", "-date", "2024-05-01T12:00:00Z"], "date 1714564800.0"),
            (["X", "-data", "0fbd77"], "data 0fbd77"),
            (["A", "-array", "a", "b"], "array 2"),
            (["M", "-dict", "k", "v"], "dictionary [\"k\"]"),
        ]
        for (words, expected) in writes {
            let write = try child.run("prefs-harness", ["defaults", "write", "demo"] + words)
            #expect(write.status == 0 && write.stdout.isEmpty, "\(words): \(write.stderr)")
            let read = try child.run("prefs-test-helper", ["plain-get", "demo", words[0]])
            let kindAndValue = read.stdout.trimmingCharacters(in: .newlines)
            // NSNumber's type code differs between integer widths; the kind and value must match.
            if expected.hasPrefix("number") {
                #expect(kindAndValue.hasPrefix("number(") && kindAndValue.hasSuffix(expected.split(separator: " ").last.map { " \($0)" }!), "\(words): \(kindAndValue)")
                #expect((kindAndValue.contains("(c)") || kindAndValue.contains("(B)")) == expected.contains("(c)"), "\(words): \(kindAndValue)")
            } else {
                #expect(kindAndValue == expected, "\(words): \(read.stderr)")
            }
        }
        let domains = try child.run("prefs-harness", ["defaults", "domains"])
        #expect(domains.stdout == "demo\n")
        // read without a domain: every domain, by name.
        let all = try child.run("prefs-harness", ["defaults", "read"])
        #expect(all.stdout.hasPrefix("{\n    demo =     {\n        A =         (\n            a,\n"), "\(all.stdout)")
    }

    @Test("what plain UserDefaults writes in another process, the tool reads as macOS defaults prints it")
    func plainToTool() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let write = try child.run("prefs-test-helper", ["plain-set-kinds", "plain", "-"])
        #expect(write.status == 0, "\(write.stderr)")
        let read = try child.run("prefs-harness", ["defaults", "read", "plain"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == DefaultsCommandTests.everyKindPrinted)
        let types = try child.run("prefs-harness", ["defaults", "read-type", "plain", "Double"])
        #expect(types.stdout == "Type is float\n")
        // And the tool's changes land beside them, read back by plain UserDefaults.
        #expect(try child.run("prefs-harness", ["defaults", "rename", "plain", "Int", "Number"]).status == 0)
        #expect(try child.run("prefs-test-helper", ["plain-get", "plain", "Int"]).stdout == "nil\n")
        #expect(try child.run("prefs-test-helper", ["plain-get", "plain", "Number"]).stdout.hasSuffix(" 42\n"))
        #expect(try child.run("prefs-test-helper", ["plain-get", "plain", "String"]).stdout == "string hello world\n")
    }

    @Test("a tool write is seen at once by a program that holds the set and observes it")
    func liveProgramSeesIt() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        #expect(try child.run("prefs-test-helper", ["put-int", "live", "Main", "1"]).status == 0)
        let (watcher, out) = try child.start("prefs-test-helper", ["watch-int", "live", "Main"])
        defer {
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
        }
        let lines = LineReader(out)
        #expect(lines.next(timeout: 10) == "ready")
        let started = Date()
        let write = try child.run("prefs-harness", ["defaults", "write", "live", "Main", "-dict-add", "Integer Value", "-int", "77"])
        #expect(write.status == 0, "\(write.stderr)")
        #expect(lines.next(timeout: 5) == "77")
        print("[defaults] a tool write seen by an observing program after \(Int(Date().timeIntervalSince(started) * 1000)) ms (tool start included)")
        // The rest of the set is kept: -dict-add merged one key into it.
        let read = try child.run("prefs-harness", ["defaults", "read", "live", "Main"])
        #expect(read.stdout.contains("\"Integer Value\" = 77;") && read.stdout.contains("\"String Value\" = \"Any String\";"), "\(read.stdout)")
    }

    @Test("bad suite names and flags through the real executable: exit 2, message on stderr, nothing written")
    func badInputEndToEnd() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        #expect(try child.run("prefs-harness", ["defaults", "write", "held", "K", "-int", "1"]).status == 0)
        let file = URL(fileURLWithPath: directory.path + "/held.plist")
        let before = try Data(contentsOf: file)
        for words in [["write", "../held", "K", "v"], ["write", "held", "K", "-int", "x"], ["write", "held", "K", "-bogus", "1"]] {
            let result = try child.run("prefs-harness", ["defaults"] + words)
            #expect(result.status == 2 && result.stdout.isEmpty && result.stderr.hasPrefix("prefs-harness: "), "\(words): \(result.stderr)")
        }
        let refused = try child.run("prefs-harness", ["defaults", "write", "held", "K", "-array-add", "x"])
        #expect(refused.status == 1 && refused.stderr.contains("not an array"), "\(refused.stderr)")
        #expect(try Data(contentsOf: file) == before)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names == ["held.plist", "held.plist.lock"], "\(names)")
    }
}

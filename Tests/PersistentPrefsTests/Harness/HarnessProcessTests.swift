import Foundation
import Testing

/// The built `prefs-harness`, driven from outside as a person or a script would.
@Suite("Harness: end to end, as separate processes", waitLimit)
struct HarnessProcessTests {
    @Test("a set in one process is read by get in a fresh one; exit code 0", .linuxSuiteFiles)
    func setThenGet() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let set = try child.run("prefs-harness", ["--suite", "s", "--key", "Main", "--sample", "set", "int", "4242"])
        #expect(set.status == 0, "\(set.stderr)")
        let get = try child.run("prefs-harness", ["--suite", "s", "--key", "Main", "--sample", "get", "Integer Value"])
        #expect(get.status == 0)
        #expect(get.stdout == "4242\n")
        #expect(get.stderr.isEmpty)
        let helperRead = try child.run("prefs-test-helper", ["get-int", "s", "Main"])
        #expect(helperRead.stdout == "4242\n")
    }

    @Test("list --json is valid JSON with every key", .linuxSuiteFiles)
    func listJSON() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let list = try child.run("prefs-harness", ["--suite", "s", "list", "--json"])
        #expect(list.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(rows.compactMap { $0["key"] as? String } == ["Integer Value", "String Value", "Array Value", "Dictionary Value", "Date Value"])
        #expect(rows.allSatisfy { $0["source"] as? String == "default" && $0["locked"] as? Bool == false && $0["file"] is NSNull })
        // Reads never write: the set, its suite file and its lock file are not created.
        let roots = try child.run("prefs-harness", ["--suite", "s", "roots", "--json"])
        #expect(try JSONSerialization.jsonObject(with: Data(roots.stdout.utf8)) as? [String] == [])
        for read in [["get", "int"], ["list"], ["dump"], ["roots"], ["defaults", "read", "s"]] {
            _ = try child.run("prefs-harness", ["--suite", "s"] + read)
        }
        _ = try child.run("prefs-harness", ["--suite", "s"], input: "key typo1\nlist\nget int\nquit\n")
        _ = try child.run("prefs-harness", ["--store-dir", directory.path + "/sets", "list"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("usage errors exit 2, print to stderr only, and leave the store byte for byte unchanged", .linuxSuiteFiles)
    func usageErrorsChangeNothing() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.run("prefs-harness", ["--suite", "s", "set", "int", "1"])
        let file = directory.path + "/s.plist"
        let before = try #require(FileManager.default.contents(atPath: file))
        let cases: [([String], String)] = [
            (["--suite", "s", "set", "int", "abc"], "'abc' is not an integer for Integer Value"),
            (["--suite", "s", "set", "date", "soon"], "'soon' is not an ISO 8601 date"),
            (["--suite", "s", "set", "dict", "a=1,a=2"], "appears twice"),
            (["--suite", "s", "set", "nope", "1"], "unknown key 'nope'"),
            (["--suite", "s", "frobnicate"], "unknown command 'frobnicate'"),
            (["--suite", "s", "set", "int"], "set needs VALUE"),
            (["--suite", "../escape", "list"], "must not contain '/'"),
            (["--bogus"], "unknown option '--bogus'"),
        ]
        for (arguments, fragment) in cases {
            let result = try child.run("prefs-harness", arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.contains(fragment), "\(arguments): \(result.stderr)")
        }
        #expect(FileManager.default.contents(atPath: file) == before)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/../escape.plist"))
    }

    @Test("a refused operation exits 1 with the library's sentence, and keeps the bad file", .linuxSuiteFiles)
    func refusedExitsOne() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let store = directory.path + "/files"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try Data("not a plist".utf8).write(to: URL(fileURLWithPath: store + "/SamplePrefs.plist"))
        let list = try child.run("prefs-harness", ["--store-dir", store, "list"])
        #expect(list.status == 1)
        #expect(list.stderr.contains("unreadable"))
        let kept = try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.hasPrefix("SamplePrefs~") && $0.contains(".plist.corrupt-") }
        #expect(kept.count == 1)

        let dump = try child.run("prefs-harness", ["--suite", "empty", "--key", "Nothing", "dump"])
        #expect(dump.status == 1)
        #expect(dump.stderr.contains("Nothing is stored under the root key \"Nothing\""))
    }

    @Test("--store-dir keeps sets as files; delete removes one; help and version exit 0")
    func storeDirectoryAndHelp() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let store = directory.path + "/prefs"
        #expect(try child.run("prefs-harness", ["--store-dir", store, "--key", "A", "--sample", "set", "string", "hi"]).status == 0)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "--key", "B", "--sample", "reset"]).status == 0)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "roots"]).stdout == "A\nB\n")
        #expect(try child.run("prefs-harness", ["--store-dir", store, "--key", "A", "--sample", "delete"]).status == 0)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "roots"]).stdout == "B\n")
        let help = try child.run("prefs-harness", ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("usage: prefs-harness"))
        let setHelp = try child.run("prefs-harness", ["set", "--help"])
        #expect(setHelp.stdout.contains("ISO 8601"))
        #expect(try child.run("prefs-harness", ["--version"]).stdout.hasPrefix("prefs-harness "))
    }

    @Test("interactive mode over a pipe: commands, key, quit; no colour when not a terminal", .linuxSuiteFiles)
    func interactiveOverPipe() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let session = try child.run(
            "prefs-harness", ["--suite", "s", "--sample"], input: "set int 5\nkey Second\nset string \"two words\"\nget string\nquit\n")
        #expect(session.status == 0, "\(session.stderr)")
        #expect(session.stdout.contains("Now on the root key \"Second\"."))
        #expect(!session.stdout.contains("PersistentPrefs harness") && !session.stdout.contains("prefs ["), "off a terminal: no screen, no prompt")
        #expect(session.stdout.contains("two words"))
        #expect(!session.stdout.contains("\u{1B}["))
        #expect(try child.run("prefs-harness", ["--suite", "s", "get", "int"]).stdout == "5\n")
        #expect(try child.run("prefs-harness", ["--suite", "s", "--key", "Second", "--sample", "get", "string"]).stdout == "two words\n")
        let eof = try child.run("prefs-harness", ["--suite", "s"], input: "")
        #expect(eof.status == 0)
    }

    @Test("two harnesses on one root key: a write by one shows in the other's next list", .linuxSuiteFiles)
    func twoHarnessesShareARootKey() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        // The first harness is interactive and still running while the second one writes.
        let first = try child.process("prefs-harness", ["--suite", "s", "--key", "Shared", "--sample"])
        let input = Pipe()
        let output = Pipe()
        first.standardInput = input
        first.standardOutput = output
        first.standardError = FileHandle.nullDevice
        try first.run()
        ChildProcess.feed(input.fileHandleForWriting, "get int\n")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try child.run("prefs-harness", ["--suite", "s", "--key", "Shared", "--sample", "set", "int", "987"]).status == 0)
        ChildProcess.feed(input.fileHandleForWriting, "list\nquit\n")
        try input.fileHandleForWriting.close()
        let transcript = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)
        // Off a terminal each line prints what its command prints: `get int` before the write, then the table.
        #expect(transcript.hasPrefix("12345\n") && transcript.contains("987"), "\(transcript)")
    }
}

@Suite("Harness: settings (SettingsManageable demo types)", waitLimit)
struct HarnessSettingsTests {
    @Test("settings show, set and reset, across processes; bad input exits 2 and changes nothing")
    func settingsGroup() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let store = directory.path + "/files"
        let show = try child.run("prefs-harness", ["--store-dir", store, "settings", "show"])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("app.fontSize"))
        #expect(show.stdout.contains("Cowboys"))
        #expect(try child.run("prefs-harness", ["--store-dir", store, "settings", "set", "app", "fontSize", "21"]).status == 0)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "settings", "set", "player", "gunType", "1"]).status == 0)
        let file = store + "/settings/AppSettings.settings.plist"
        let before = try #require(FileManager.default.contents(atPath: file))
        let bad = try child.run("prefs-harness", ["--store-dir", store, "settings", "set", "app", "fontSize", "big"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("'big' is not a number for fontSize"))
        #expect(try child.run("prefs-harness", ["--store-dir", store, "settings", "set", "app", "nope", "1"]).status == 2)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "settings", "frob"]).status == 2)
        #expect(FileManager.default.contents(atPath: file) == before)
        let again = try child.run("prefs-harness", ["--store-dir", store, "settings", "show"])
        #expect(again.stdout.contains("21.0"))
        #expect(again.stdout.range(of: #"player\.gunType\s+Int\?\s+1"#, options: .regularExpression) != nil)
        #expect(try child.run("prefs-harness", ["--store-dir", store, "settings", "reset"]).status == 0)
        let reset = try child.run("prefs-harness", ["--store-dir", store, "settings", "show"])
        #expect(reset.stdout.contains("17.0"))
        #expect(reset.stdout.range(of: #"player\.gunType\s+Int\?\s+2"#, options: .regularExpression) != nil)
    }

    @Test("a corrupt settings file is refused with exit 1 and kept")
    func corruptSettings() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let settings = directory.path + "/files/settings"
        try FileManager.default.createDirectory(atPath: settings, withIntermediateDirectories: true)
        try Data("junk".utf8).write(to: URL(fileURLWithPath: settings + "/AppSettings.settings.plist"))
        let show = try child.run("prefs-harness", ["--store-dir", directory.path + "/files", "settings", "show", "app"])
        #expect(show.status == 1)
        #expect(show.stderr.contains("AppSettings.settings.plist could not be read"))
        #expect(FileManager.default.contents(atPath: settings + "/AppSettings.settings.plist") == Data("junk".utf8))
    }
}

@Suite("Harness: several processes at once", waitLimit)
struct HarnessConcurrencyTests {
    @Test("4 harnesses setting different keys of a fresh root key at once: every set survives, 10 rounds", arguments: suitesAreLibraryFiles ? ["suite", "files"] : ["files"])
    func concurrentSetsOnAFreshRoot(kind: String) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let store = kind == "suite" ? ["--suite", "race"] : ["--store-dir", directory.path + "/files"]
        var lost = 0
        var details: [String] = []
        for round in 0..<10 {
            let root = ["--key", "Round \(round)", "--sample"]
            let names = ["int", "string", "array", "dict"]
            let values = ["\(round)", "s\(round)", "a\(round)", "k=\(round)"]
            // Each process's stderr kept in a file of its own, so a lost set says whether its
            // process failed (and why) or succeeded and the value went missing.
            let errorFiles = names.map { directory.path + "/stderr-\(round)-\($0)" }
            let processes = try names.indices.map { index -> Process in
                let process = try child.process("prefs-harness", store + root + ["set", names[index], values[index]])
                process.standardOutput = FileHandle.nullDevice
                _ = FileManager.default.createFile(atPath: errorFiles[index], contents: nil)
                process.standardError = FileHandle(forWritingAtPath: errorFiles[index])
                return process
            }
            for process in processes { try process.run() }
            for process in processes { process.waitUntilExit() }
            for index in names.indices {
                let get = try child.run("prefs-harness", store + root + ["get", names[index]])
                if get.stdout != values[index] + "\n" {
                    lost += 1
                    let stderr = (try? String(contentsOfFile: errorFiles[index], encoding: .utf8)) ?? ""
                    details.append(
                        "round \(round) \(names[index]): read \(get.stdout.debugDescription) (\(get.stderr.debugDescription)); its set exited \(processes[index].terminationStatus): \(stderr.debugDescription)")
                }
            }
        }
        print("[reliability] harness on \(kind): 4 processes setting 4 keys of a fresh root key, 10 rounds: \(lost) of 40 sets lost")
        #expect(lost == 0, "\(details.joined(separator: "\n"))")
    }
}

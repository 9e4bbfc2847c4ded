import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// A program's set with a key kept by string beside its `@Pref`s (no declared type).
final class LaunchPrefs: PersistentPrefs {
    @Pref("User Name") var userName = "nobody"
    @Pref("Volume", in: 0...11) var volume = 5
    override var keys: [String] { super.keys + ["Launch Count"] }
}

/// What a newcomer meets first, each driven from outside as separate processes: the README's
/// install line, quoting, piped input, a top-level key beside a set's, untyped keys.
@Suite("Harness: what a newcomer meets, from outside", waitLimit)
struct HarnessNewcomerTests {
    /// The folder of sets the program wrote, with its schema files, and a harness over it.
    struct Program {
        let child: ChildProcess
        let directory: TemporaryDirectory
        var folder: String { directory.path + "/sets" }

        init() {
            (child, directory) = ChildProcess.inTemporaryConfigHome()
            let prefs = LaunchPrefs(key: "App", store: PlistFileStore(directory: URL(fileURLWithPath: directory.path + "/sets")))
            prefs.volume = 7
            prefs["Launch Count"] = 3
            // The harness runs at once, in another process: the schema file follows the first write, so wait for it.
            try? prefs.synchronize()
        }

        func harness(_ words: [String], input: String? = nil) throws -> ChildProcess.Output {
            try child.run("prefs-harness", ["--store-dir", folder, "--key", "App"] + words, input: input)
        }

        func stored() -> [String: Any] {
            (try? PlistFileStore(directory: URL(fileURLWithPath: folder)).load(root: "App")) ?? [:]
        }
    }

    @Test("one rule for set, batch lines, piped lines and the prompt: a quoted key or value is one word, the words after the key are the value")
    func quoting() throws {
        let program = Program()
        defer { program.directory.remove() }
        for (words, expected) in [
            (["set", "User Name", "Bob", "Smith"], "Bob Smith"),  // the shell's words: "User Name" Bob Smith
            (["set", "User", "Name", "Ann", "Lee"], "Ann Lee"),  // unquoted, the leading words that name a key
            (["set", "User Name", "  two  spaces "], "  two  spaces "),
        ] {
            let result = try program.harness(words)
            #expect(result.status == 0, "\(words): \(result.stderr)")
            #expect(program.stored()["User Name"] as? String == expected, "\(words)")
        }
        let batch = try program.harness(["batch"], input: "\"User Name\" Zed Q\n")
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(program.stored()["User Name"] as? String == "Zed Q")
        let unquotedBatch = try program.harness(["batch"], input: "User Name Zed Q2\n")
        #expect(unquotedBatch.status == 0 && program.stored()["User Name"] as? String == "Zed Q2", "\(unquotedBatch.stderr)")
        let piped = try program.harness([], input: "set \"User Name\" 'Amy  B'\nget \"User Name\"\n")
        #expect(piped.status == 0 && piped.stdout.contains("Amy  B"), "\(piped)")
        let refused = try program.harness([], input: "get \"User Name\"\nset Volume 99\nlist\n")
        #expect(refused.status == 1 && refused.stderr.hasPrefix("prefs-harness: line 2: "), "a refused piped line is named: \(refused.stderr)")
        let unterminated = try program.harness(["batch"], input: "Volume 3\n\"User Name Zed\n")
        #expect(unterminated.status == 1 && unterminated.stderr.contains("line 2: unterminated \" quote"), "\(unterminated.stderr)")
        #expect(program.stored()["Volume"] as? Int == 7, "a refused batch writes nothing")
    }

    @Test("null on a key of no declared type removes the user's value; quoted, it is the string")
    func nullOnUntypedKey() throws {
        let program = Program()
        defer { program.directory.remove() }
        let schema = try #require(try PrefsSchema.load(from: PlistFileStore(directory: URL(fileURLWithPath: program.folder)).schemaFileURL(forRoot: "App")))
        #expect(schema["Launch Count"]?.type == nil && schema["Launch Count"]?.kind == nil)
        let removed = try program.harness(["set", "Launch Count", "null"])
        #expect(removed.status == 0 && removed.stdout == "Launch Count = nil (removed)\n", "\(removed)")
        #expect(program.stored()["Launch Count"] == nil && program.stored()["Volume"] as? Int == 7)
        // On the command line the shell leaves '…' of "'null'"; a batch line and the prompt read words the same way.
        #expect(try program.harness(["set", "Launch Count", "'null'"]).status == 0)
        #expect(program.stored()["Launch Count"] as? String == "null")
        #expect(try program.harness(["set", "Launch Count", "4"]).status == 0)
        #expect(try program.harness(["batch"], input: "\"Launch Count\" \"'null'\"\n").status == 0)
        #expect(program.stored()["Launch Count"] as? String == "null")
        #expect(try program.harness([], input: "set \"Launch Count\" null\n").status == 0)
        #expect(program.stored()["Launch Count"] == nil, "unquoted at the prompt, it removes the value")
        #expect(try program.harness(["set", "Launch Count", "4"]).status == 0)
        #expect(program.stored()["Launch Count"] as? Int == 4)
        let help = try program.child.run("prefs-harness", ["help", "set"]).stdout.replacingOccurrences(of: "\n", with: " ")
        #expect(help.contains("a key of no declared type null to remove the user's value"), "\(help)")
    }

    @Test("defaults write of a key a set of the suite has is kept, with a warning naming the commands that change the set's key", .linuxSuiteFiles)
    func defaultsWriteBesideSet() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        #expect(try child.run("prefs-test-helper", ["audio-set", "MyApp", "AppPrefs", "volume", "7"]).stdout == "ok\n")
        let written = try child.run("prefs-harness", ["defaults", "write", "MyApp", "Volume", "-int", "3"])
        #expect(written.status == 0, "kept, as macOS defaults keeps it: \(written.stderr)")
        #expect(written.stderr.contains("warning: \"Volume\" was written as a key of the suite MyApp itself"), "\(written.stderr)")
        #expect(written.stderr.contains("  prefs-harness defaults write MyApp AppPrefs -dict-add Volume -int 3\n"), "\(written.stderr)")
        #expect(written.stderr.contains("  prefs-harness --suite MyApp --key AppPrefs set Volume 3"), "\(written.stderr)")
        #expect(try child.run("prefs-harness", ["defaults", "read", "MyApp", "Volume"]).stdout == "3\n")
        #expect(try child.run("prefs-test-helper", ["audio-read", "MyApp", "AppPrefs"]).stdout.hasPrefix("volume=7 "), "the set's key is untouched")
        // The suggested command changes the set's key.
        #expect(try child.run("prefs-harness", ["defaults", "write", "MyApp", "AppPrefs", "-dict-add", "Volume", "-int", "3"]).status == 0)
        #expect(try child.run("prefs-test-helper", ["audio-read", "MyApp", "AppPrefs"]).stdout.hasPrefix("volume=3 "))
        // A key no set has: no warning.
        let plain = try child.run("prefs-harness", ["defaults", "write", "MyApp", "Other", "-int", "1"])
        #expect(plain.status == 0 && plain.stderr.isEmpty, "\(plain.stderr)")
    }

    @Test("the README's install lines work where ~/.local/bin does not exist yet")
    func installLine() throws {
        let readme = try ReadmeTests.read("README.md")
        let block = try #require(readme.components(separatedBy: "```\n").first { $0.contains("-static-executable") && $0.contains(".local/bin") })
        let lines = block.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasPrefix("swift build -c release -Xswiftc -static-executable"), "\(lines)")
        let install = try #require(lines.last)
        #expect(install.hasPrefix("mkdir -p ~/.local/bin"), "\(install)")
        // The install line as the README gives it, in a fresh home, on a built harness.
        let work = TemporaryDirectory()
        defer { work.remove() }
        let home = work.path + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: work.path + "/.build/release", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try ChildProcess.executable("prefs-harness").path, toPath: work.path + "/.build/release/prefs-harness")
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", install]
        shell.currentDirectoryURL = URL(fileURLWithPath: work.path)
        shell.environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        let installed = home + "/.local/bin/prefs-harness"
        #expect(FileManager.default.isExecutableFile(atPath: installed))
        let run = Process()
        run.executableURL = URL(fileURLWithPath: installed)
        run.arguments = ["--version"]
        let output = Pipe()
        run.standardOutput = output
        try run.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(run.terminationStatus == 0 && printed.hasPrefix("prefs-harness "), "\(printed)")
    }
}

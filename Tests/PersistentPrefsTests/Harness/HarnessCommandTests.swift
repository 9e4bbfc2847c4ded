import Foundation
import PersistentPrefs
import PrefsHarnessKit
import Testing

/// A console that records what the harness prints.
final class RecordingConsole: @unchecked Sendable {
    var out = ""
    var err = ""
    var input: [String]

    /// Whether the console says it is a terminal (the interactive screen), else a pipe.
    let terminal: Bool

    init(input: [String] = [], terminal: Bool = false) {
        self.input = input
        self.terminal = terminal
    }

    lazy var console = Console(
        isTerminal: terminal, out: { [unowned self] in out += $0 }, err: { [unowned self] in err += $0 },
        readLine: { [unowned self] in input.isEmpty ? nil : input.removeFirst() })
}

@Suite("Harness: commands against a store")
struct HarnessCommandTests {
    /// Runs a command line against `session`'s store, with `input` as its stdin lines.
    static func run(_ line: [String], _ session: HarnessSession, input: [String] = []) -> (Int32, RecordingConsole) {
        let recorder = RecordingConsole(input: input)
        do {
            guard case .run(_, let command) = try CommandLineParser.parse(line) else {
                Issue.record("not a command: \(line)")
                return (-1, recorder)
            }
            try session.execute(command, console: recorder.console)
            return (0, recorder)
        } catch let error as HarnessError {
            recorder.err += error.message
            return (error.exitCode, recorder)
        } catch {
            Issue.record("unexpected \(error)")
            return (-1, recorder)
        }
    }

    @Test("set, then get, list and list --json show the value")
    func setAndGet() throws {
        let session = HarnessSession(rootKey: "R", store: InMemoryStore())
        #expect(Self.run(["set", "int", "77"], session).0 == 0)
        let get = Self.run(["get", "int"], session)
        #expect(get.1.out == "77\n")
        let list = Self.run(["list"], session).1.out
        #expect(list.contains("Integer Value"))
        #expect(list.contains("77"))
        let lines = list.split(separator: "\n")
        #expect(Set(lines.map { $0.range(of: "Int")?.lowerBound.utf16Offset(in: $0) }).count <= 2)
        let json = Self.run(["list", "--json"], session).1.out
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let object = Dictionary(uniqueKeysWithValues: rows.compactMap { row in (row["key"] as? String).map { ($0, row["value"] as Any) } })
        #expect(object["Integer Value"] as? Int == 77)
        #expect(object["String Value"] as? String == "Any String")
        #expect(rows.first?["source"] as? String == "user" && rows.first?["locked"] as? Bool == false)
    }

    @Test("a value that does not parse is a usage error and changes nothing")
    func badValueChangesNothing() throws {
        let store = InMemoryStore()
        let session = HarnessSession(rootKey: "R", store: store)
        _ = Self.run(["set", "int", "5"], session)
        let before = try store.load(root: "R")?["Integer Value"] as? Int
        let (status, recorder) = Self.run(["set", "int", "abc"], session)
        #expect(status == 2)
        #expect(recorder.err.contains("'abc' is not an integer for Integer Value"))
        #expect(try store.load(root: "R")?["Integer Value"] as? Int == before)
        #expect(Self.run(["get", "nope"], session).0 == 2)
    }

    @Test("reset, delete, roots and dump")
    func resetDeleteRootsDump() throws {
        let store = InMemoryStore()
        let session = HarnessSession(rootKey: "R", store: store)
        _ = Self.run(["set", "string", "changed"], session)
        _ = Self.run(["reset"], session)
        #expect(Self.run(["get", "string"], session).1.out == "Any String\n")
        #expect(Self.run(["roots"], session).1.out == "R\n")
        let dump = Self.run(["dump"], session).1.out
        #expect(dump.contains("<key>String Value</key>"))
        #expect(Self.run(["delete"], session).0 == 0)
        #expect(try store.roots().isEmpty)
        let (status, recorder) = Self.run(["dump"], session)
        #expect(status == 1)
        #expect(recorder.err.contains("Nothing is stored under the root key \"R\""))
        #expect(Self.run(["roots", "--json"], session).1.out == "[]\n")
    }

    @Test("a store the library refuses to read is exit code 1 with the library's sentence")
    func refusedByLibrary() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try Data("junk".utf8).write(to: try store.fileURL(forRoot: "R"))
        let (status, recorder) = Self.run(["list"], HarnessSession(rootKey: "R", store: store, sample: true))
        #expect(status == 1)
        #expect(recorder.err.contains("unreadable"))
        #expect(recorder.err.contains(directory.path))
    }

    @Test("the interactive mode runs commands, switches root keys and quits")
    func interactive() throws {
        let store = InMemoryStore()
        let recorder = RecordingConsole(input: ["set int 9", "key Other", "set string \"two words\"", "bogus", "quit"])
        let session = HarnessSession(rootKey: "First", store: store)
        let status = Interactive(session: session, console: recorder.console).run()
        #expect(status == 1, "a piped session with a failed command ends with 1")
        #expect(try store.load(root: "First")?["Integer Value"] as? Int == 9)
        #expect(try store.load(root: "Other")?["String Value"] as? String == "two words")
        #expect(recorder.out.contains("Now on the root key \"Other\"."))
        #expect(!recorder.out.contains("PersistentPrefs harness") && !recorder.out.contains("prefs ["), "no screen and no prompt off a terminal")
        #expect(recorder.err == "prefs-harness: line 4: unknown command 'bogus'; the commands are list, get, set, batch, incr, reset, delete, acknowledge, roots, dump, settings, watch, sync, sync-status, migrate, defaults, list-keys, describe, range, writable, schema-file, help, key, quit\n")
        #expect(!recorder.out.contains("bogus"))
        #expect(recorder.input.isEmpty)
    }

    @Test("at the prompt, values are typed as on the command line; help lists the prompt's commands; key refuses blanks")
    func promptValues() throws {
        let store = InMemoryStore()
        let recorder = RecordingConsole(input: [
            "set array a, b, c", "set string hello world", "set dict '{\"k\": \"v w\"}'", "set \"Date Value\" 2024-05-01",
            "help", "key '   '",
        ])
        let status = Interactive(session: HarnessSession(rootKey: "P", store: store), console: recorder.console).run()
        let stored = try #require(try store.load(root: "P"))
        #expect(stored["Array Value"] as? [String] == ["a", "b", "c"])
        #expect(stored["String Value"] as? String == "hello world")
        #expect(stored["Dictionary Value"] as? [String: String] == ["k": "v w"])
        #expect(stored["Date Value"] as? Date == Date(timeIntervalSince1970: 1_714_521_600))
        #expect(recorder.out.contains("Commands at this prompt"))
        #expect(recorder.out.contains("  key ROOT "))
        #expect(recorder.err == "prefs-harness: line 6: the root key must not be empty or blank\n")
        #expect(status == 1)
        let screen = RecordingConsole(input: ["key '   '"], terminal: true)
        #expect(Interactive(session: HarnessSession(rootKey: "P", store: store), console: screen.console).run() == 0)
        #expect(screen.out.contains("Commands: list, get, set, incr, reset, delete, acknowledge, roots, dump, settings, sync, sync-status, migrate, defaults, list-keys, describe, range, writable, schema-file, help, key, quit"))
        #expect(screen.out.contains("the root key must not be empty or blank") && screen.err.isEmpty, "on a terminal the screen shows it")
        let json = RecordingConsole(input: ["set array '[\"x\",\"y z\"]'"])
        #expect(Interactive(session: HarnessSession(rootKey: "J", store: store), console: json.console).run() == 0)
        #expect(try store.load(root: "J")?["Array Value"] as? [String] == ["x", "y z"])
    }

    @Test("--json wherever there is output: set, incr, batch, reset, delete, dump")
    func jsonEverywhere() throws {
        let session = HarnessSession(rootKey: "J", store: InMemoryStore())
        #expect(Self.run(["set", "int", "5", "--json"], session).1.out == "{\"key\":\"Integer Value\",\"value\":5}\n")
        #expect(Self.run(["incr", "int", "--json"], session).1.out == "{\"key\":\"Integer Value\",\"value\":6}\n")
        #expect(Self.run(["batch", "--json"], session, input: ["string x"]).1.out == "{\"changes\":1,\"root\":\"J\"}\n")
        let dump = Self.run(["dump", "--json"], session).1.out
        let object = try #require(try JSONSerialization.jsonObject(with: Data(dump.utf8)) as? [String: Any])
        #expect(object["Integer Value"] as? Int == 6 && object["String Value"] as? String == "x")
        let reset = Self.run(["reset", "--json"], session).1.out
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(reset.utf8)) as? [[String: Any]])
        #expect(rows.first { $0["key"] as? String == "Integer Value" }?["value"] as? Int == 12345)
        #expect(Self.run(["delete", "--json"], session).1.out == "{\"deleted\":true,\"root\":\"J\"}\n")
    }

    @Test("delete of a set that does not exist says so and exits 1")
    func deleteMissing() {
        let (status, recorder) = Self.run(["delete"], HarnessSession(rootKey: "Nothing", store: InMemoryStore()))
        #expect(status == 1)
        #expect(recorder.err == "Nothing is stored under the root key \"Nothing\", so nothing was deleted.")
    }

    @Test("end of input (Ctrl-D) leaves the interactive mode cleanly")
    func endOfInput() {
        let recorder = RecordingConsole(input: ["get int"])
        let status = Interactive(session: HarnessSession(store: InMemoryStore()), console: recorder.console).run()
        #expect(status == 0)
        #expect(recorder.out.contains("12345"))
    }
}

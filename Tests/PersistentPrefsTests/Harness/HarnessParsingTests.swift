import Foundation
import PersistentPrefs
@testable import PrefsHarnessKit
import Testing

@Suite("Harness: command-line parsing")
struct HarnessParsingTests {
    struct Good: CustomTestStringConvertible, Sendable {
        let arguments: [String]
        let expected: Invocation
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static func run(_ name: String, _ arguments: [String], json: Bool = false, key: String? = nil, store: StoreChoice = .standard)
        -> Invocation
    {
        .run(HarnessOptions(key: key, store: store), Command(spec: CommandSpec.named(name)!, arguments: arguments, json: json))
    }

    static let good: [Good] = [
        Good(arguments: [], expected: .interactive(HarnessOptions())),
        Good(arguments: ["--key", "R"], expected: .interactive(HarnessOptions(key: "R"))),
        Good(arguments: ["list"], expected: run("list", [])),
        Good(arguments: ["list", "--json"], expected: run("list", [], json: true)),
        Good(arguments: ["--key", "R", "list"], expected: run("list", [], key: "R")),
        Good(arguments: ["--key=R", "--suite", "S", "get", "int"], expected: run("get", ["int"], key: "R", store: .suite("S"))),
        Good(arguments: ["--store-dir", "/tmp/p", "set", "int", "5"], expected: run("set", ["int", "5"], store: .directory("/tmp/p"))),
        Good(arguments: ["set", "int", "-5"], expected: run("set", ["int", "-5"])),
        Good(arguments: ["set", "string", "--", "--json"], expected: run("set", ["string", "--json"])),
        Good(arguments: ["--", "roots"], expected: run("roots", [])),
        Good(arguments: ["get", "Integer Value", "--json"], expected: run("get", ["Integer Value"], json: true)),
        Good(arguments: ["reset"], expected: run("reset", [])),
        Good(arguments: ["delete"], expected: run("delete", [])),
        Good(arguments: ["dump"], expected: run("dump", [])),
        Good(arguments: ["--help"], expected: .help(nil)),
        Good(arguments: ["-h"], expected: .help(nil)),
        Good(arguments: ["help"], expected: .help(nil)),
        Good(arguments: ["help", "set"], expected: .help(CommandSpec.named("set"))),
        Good(arguments: ["set", "--help"], expected: .help(CommandSpec.named("set"))),
        Good(arguments: ["--key", "R", "list", "-h"], expected: .help(CommandSpec.named("list"))),
        Good(arguments: ["--version"], expected: .version),
    ]

    @Test("good command lines", arguments: good)
    func parsesGood(_ example: Good) throws {
        #expect(try CommandLineParser.parse(example.arguments) == example.expected)
    }

    static let bad: [([String], String)] = [
        (["bogus"], "unknown command 'bogus'"),
        (["key", "R"], "unknown command 'key'"),
        (["get"], "get needs NAME"),
        (["set", "int"], "set needs VALUE"),
        (["get", "a", "b"], "too many arguments for get: 'b'"),
        (["list", "extra"], "too many arguments for list"),
        (["--key"], "--key needs a value"),
        (["--key", "", "list"], "the root key must not be empty"),
        (["--key", "a", "--key", "b", "list"], "--key is given twice"),
        (["--suite", "a", "--store-dir", "b", "list"], "give one of --suite and --store-dir"),
        (["--suite", "", "list"], "--suite needs a suite name"),
        (["--suite", "../x", "list"], "must not contain '/'"),
        (["--suite", "..", "list"], "must not contain '/'"),
        (["--suite", "NSGlobalDomain", "list"], "global domain"),
        (["--store-dir", "", "list"], "--store-dir needs a directory"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["list", "--dry-run"], "unknown option '--dry-run' for list"),
        (["help", "bogus"], "no help for unknown command 'bogus'"),
    ]

    @Test("bad command lines are usage errors that name the problem", arguments: bad)
    func rejectsBad(_ arguments: [String], _ fragment: String) {
        do {
            let parsed = try CommandLineParser.parse(arguments)
            Issue.record("parsed \(arguments) as \(parsed)")
        } catch let error as HarnessError {
            #expect(error.exitCode == 2)
            #expect(error.message.contains(fragment), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test(
        "interactive lines split like a shell",
        arguments: [
            ("set string \"hello world\"", ["set", "string", "hello world"]),
            ("  get   int  ", ["get", "int"]),
            ("set string 'it''s'", ["set", "string", "its"]),
            ("set string a\\ b", ["set", "string", "a b"]),
            ("set string \"say \\\"hi\\\"\"", ["set", "string", "say \"hi\""]),
            ("set string ''", ["set", "string", ""]),
            ("", []),
            // Found by Fuzz/run's harness target: a quote followed by a combining mark is one
            // character, and still opens (and closes) a quoted word.
            ("set string '\u{0670}a b'", ["set", "string", "\u{0670}a b"]),
            ("set string 'a b'\u{0301}", ["set", "string", "a b\u{0301}"]),
        ])
    func tokenizes(_ line: String, _ words: [String]) throws {
        #expect(try Tokenizer.words(line) == words)
    }

    @Test(
        "a word the harness quotes (to name a command to run) reads back as that one word",
        arguments: [
            "plain-word", "two words", "", "it's", "a\\b \"c\"", "\t\n",
            // Found by CI's harness fuzz run: a quote followed by a combining mark is one
            // character, and a search for the character "'" missed it, so it was not escaped.
            "'\u{06E3}", "x'\u{0301} y", "\\\\'\u{06E3}\u{0000}",
        ])
    func quotesBack(_ word: String) throws {
        #expect(try Tokenizer.words(Tokenizer.quoted(word)) == [word], "\(Tokenizer.quoted(word).debugDescription)")
    }

    @Test("range prints a string choice as gsettings does, every quote escaped, one followed by a combining mark too")
    func rangeLiterals() {
        #expect(SchemaCommands.literal("dark") == "'dark'")
        #expect(SchemaCommands.literal("it's") == #"'it\'s'"#)
        #expect(SchemaCommands.literal("a'\u{0301}b") == "'a\\'\u{0301}b'")
        #expect(SchemaCommands.literal(#"a\b"#) == #"'a\b'"#, "a backslash as it is, as set reads a quoted choice back")
        #expect(SchemaCommands.literal(5) == "5")
    }

    @Test("one rule for a NAME VALUE line: the key is the first word or the leading words that name a key; the rest, joined, is the value")
    func oneRule() throws {
        let sample = HarnessSet(schema: SchemaCommands.sampleSchema("R"), file: nil, root: "R")
        let cases: [(String, String, String)] = [
            ("int 42", "Integer Value", "42"),
            ("Integer Value 42", "Integer Value", "42"),
            ("\"Integer Value\" 42", "Integer Value", "42"),
            ("integer value 42", "Integer Value", "42"),
            ("string hello   world", "String Value", "hello world"),
            ("string 'hello   world'", "String Value", "hello   world"),
            ("'String Value' ''", "String Value", ""),
            ("dict '{\"k\": \"v w\"}'", "Dictionary Value", #"{"k": "v w"}"#),
            ("string value", "String Value", "value"),  // the alias and a value: a key must leave one
            ("string value x", "String Value", "x"),  // the most leading words that name a key
        ]
        for (line, key, value) in cases {
            let (found, text) = try sample.keyAndValue(try Tokenizer.words(line))
            #expect(found.name == key && text == value, "\(line)")
        }
        let program = HarnessSet(
            schema: PrefsSchema(root: "R", className: "App", schemaVersion: 0, keys: [PrefsSchema.Key(name: "User Name", type: "String", kind: "string")]),
            file: "/schema.json", root: "R")
        #expect(throws: HarnessError.usage("set needs VALUE after User Name (write '' for an empty string)")) {
            try program.keyAndValue(["User", "Name"], command: "set")
        }
        #expect(throws: HarnessError.usage("String Value has no value (write '' for an empty string)")) {
            try sample.keyAndValue(["string"])
        }
    }

    @Test("a schema key's date outside years 1 to 9999 is refused by the parser, naming the range")
    func schemaDateRange() {
        let key = PrefsSchema.Key(name: "When", type: "Date", kind: "date", defaultValue: Date())
        #expect(throws: HarnessError.usage("'22024024-05-01T12:00:00Z' is not a date a set can store (years 1 to 9999) for When (Date)")) {
            try SchemaCommands.parse("22024024-05-01T12:00:00Z", for: key)
        }
        #expect((try? SchemaCommands.parse("2024-05-01T12:00:00Z", for: key)) is Date)
    }

    @Test("unterminated quotes are usage errors", arguments: ["set string \"open", "set string 'open", "trailing \\"])
    func tokenizerErrors(_ line: String) {
        #expect(throws: HarnessError.self) { try Tokenizer.words(line) }
    }

    @Test("every command has help, and the overview lists them all")
    func help() {
        let overview = Harness.help(nil)
        for spec in CommandSpec.all {
            #expect(overview.contains(spec.synopsis))
            #expect(Harness.help(spec).contains(spec.name))
        }
    }
}

import Foundation
import PersistentPrefs
import PrefsHarnessKit
import Testing

/// `prefs-harness defaults` in this process, on plist files given by absolute path and on
/// `--store-dir` folders (suites by name run in child processes, with their own config folder:
/// see ``DefaultsProcessTests``).
@Suite("Harness: defaults commands")
struct DefaultsCommandTests {
    /// The keys `plain-set-kinds` writes (and ``writeAndRead()`` with type flags), as `read` prints them.
    static let everyKindPrinted = """
        {
            Array =     (
                a,
                "b c"
            );
            Bool = 1;
            Data = {length = 3, bytes = 0x0fbd77};
            Date = "2024-05-01 12:00:00 +0000";
            Dict =     {
                k = v;
                n = 1;
            };
            Double = "1.5";
            Int = 42;
            Negative = "-7";
            String = "hello world";
        }

        """

    /// Runs `prefs-harness [--store-dir DIR] defaults …` against a session with those options.
    static func run(_ words: [String], storeDir: String? = nil, input: [String] = []) -> (Int32, RecordingConsole) {
        guard let session = try? HarnessSession(options: HarnessOptions(store: storeDir.map { .directory($0) } ?? .standard)) else {
            Issue.record("cannot open the session")
            return (-1, RecordingConsole())
        }
        return HarnessCommandTests.run(["defaults"] + words, session, input: input)
    }

    @Test("write with every type flag, then read, read-type and read --json")
    func writeAndRead() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/app"  // an absolute path: the file app.plist
        let writes: [[String]] = [
            ["String", "-string", "hello world"], ["Int", "-int", "42"], ["Negative", "-integer", "-7"],
            ["Double", "-float", "1.5"], ["Bool", "-bool", "yes"], ["Date", "-date", "2024-05-01T12:00:00Z"],
            ["Data", "-data", "0fbd77"], ["Array", "-array", "a", "b c"], ["Dict", "-dict", "k", "v", "n", "-int", "1"],
        ]
        for write in writes {
            let (status, console) = Self.run(["write", domain] + write)
            #expect(status == 0, "\(write): \(console.err)")
        }
        #expect(FileManager.default.fileExists(atPath: domain + ".plist"))
        let read = Self.run(["read", domain])
        #expect(read.0 == 0)
        #expect(read.1.out == Self.everyKindPrinted)
        #expect(Self.run(["read", domain, "String"]).1.out == "hello world\n")
        #expect(Self.run(["write", domain, "Word", "plain"]).0 == 0)
        #expect(Self.run(["read", domain, "Word"]).1.out == "plain\n")
        #expect(Self.run(["read", domain, "Double"]).1.out == "1.5\n")
        let types = ["String": "string", "Int": "integer", "Double": "float", "Bool": "boolean", "Date": "date", "Data": "data",
                     "Array": "array", "Dict": "dictionary"]
        for (key, type) in types {
            #expect(Self.run(["read-type", domain, key]).1.out == "Type is \(type)\n")
        }
        let json = Self.run(["read", domain, "--json"]).1.out
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["Int"] as? Int == 42 && object["Date"] as? String == "2024-05-01T12:00:00Z")
        // The file is an ordinary XML property list with typed values.
        let file = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: domain + ".plist")), format: nil)
        let stored = try #require(file as? [String: Any])
        #expect(stored["Int"] as? Int == 42 && stored["Bool"] as? Bool == true && stored["Double"] as? Double == 1.5)
    }

    @Test("-array-add, -dict-add, whole-domain writes, rename, delete, export and import")
    func otherCommands() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/edit.plist"
        #expect(Self.run(["write", domain, "List", "-array-add", "a"]).0 == 0)  // created
        #expect(Self.run(["write", domain, "List", "-array-add", "b", "-int", "2"]).0 == 0)
        #expect(Self.run(["read", domain, "List"]).1.out == "(\n    a,\n    b,\n    2\n)\n")
        #expect(Self.run(["write", domain, "Map", "-dict-add", "x", "1"]).0 == 0)
        #expect(Self.run(["write", domain, "Map", "-dict-add", "y", "2", "x", "3"]).0 == 0)
        #expect(Self.run(["read", domain, "Map"]).1.out == "{\n    x = 3;\n    y = 2;\n}\n")
        #expect(Self.run(["rename", domain, "Map", "Dictionary"]).0 == 0)
        #expect(Self.run(["read", domain, "Map"]).0 == 1)
        #expect(Self.run(["read-type", domain, "Dictionary"]).1.out == "Type is dictionary\n")
        #expect(Self.run(["delete", domain, "List"]).0 == 0)
        #expect(Self.run(["read", domain]).1.out == "{\n    Dictionary =     {\n        x = 3;\n        y = 2;\n    };\n}\n")

        let exported = Self.run(["export", domain, "-"]).1.out
        #expect(exported.hasPrefix("<?xml"))
        let copy = directory.path + "/copy.plist"
        #expect(Self.run(["import", copy, "-"], input: exported.components(separatedBy: "\n")).0 == 0)
        #expect(Self.run(["read", copy]).1.out == Self.run(["read", domain]).1.out)
        let path = directory.path + "/exported.plist"
        #expect(Self.run(["export", domain, path]).0 == 0)
        #expect(Self.run(["import", copy, path]).0 == 0)

        #expect(Self.run(["write", domain, "{ a = 1; b = ( x ); }"]).0 == 0)
        #expect(Self.run(["read", domain]).1.out == "{\n    a = 1;\n    b =     (\n        x\n    );\n}\n")
        #expect(Self.run(["delete", domain]).0 == 0)
        #expect(!FileManager.default.fileExists(atPath: domain))
        #expect(!FileManager.default.fileExists(atPath: domain + ".plist"))
        #expect(!FileManager.default.fileExists(atPath: domain + ".plist.lock"), "the domain's lock file goes with it")
        let gone = Self.run(["read", domain])
        #expect(gone.0 == 1 && gone.1.err == "Domain \(domain) does not exist")
        #expect(Self.run(["delete", domain]).0 == 1)
    }

    @Test("a terminal colour code: the domain's file and an exported file stay readable by every property-list reader")
    func awkwardValues() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/ctl"
        let colour = "colour \u{1B}[31mred"
        #expect(Self.run(["write", domain, "k", "-string", colour]).0 == 0)
        #expect(Self.run(["read", domain, "k"]).1.out == colour + "\n")
        try PortableFileTests.checkReadable(domain + ".plist", holds: ["k": colour], root: nil)
        let path = directory.path + "/exported.plist"
        #expect(Self.run(["export", domain, path]).0 == 0)
        try PortableFileTests.checkReadable(path, holds: ["k": colour], root: nil)
        let copy = directory.path + "/copy"
        #expect(Self.run(["import", copy, path]).0 == 0)
        #expect(Self.run(["read", copy, "k"]).1.out == colour + "\n")
    }

    @Test("with --store-dir, the domains are the folder's root keys, shared with the library")
    func storeDirectory() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["Integer Value": 5], root: "main")
        #expect(Self.run(["domains"], storeDir: directory.path).1.out == "main\n")
        #expect(Self.run(["read", "main", "Integer Value"], storeDir: directory.path).1.out == "5\n")
        #expect(Self.run(["write", "main", "Integer Value", "-int", "6"], storeDir: directory.path).0 == 0)
        #expect(try store.load(root: "main")?["Integer Value"] as? Int == 6)
        #expect(Self.run(["write", "second", "k", "v"], storeDir: directory.path).0 == 0)
        #expect(Self.run(["domains", "--json"], storeDir: directory.path).1.out == "[\"main\",\"second\"]\n")
        #expect(Self.run(["delete", "second"], storeDir: directory.path).0 == 0)
        #expect(try store.roots() == ["main"])
    }

    /// Every bad input, on a file that holds a set: exit code, message, and the file unchanged.
    static let hostile: [([String], Int32, String)] = [
        (["write", "DOMAIN", "K", "-int", "abc"], 2, "'abc' is not an integer for -int"),
        (["write", "DOMAIN", "K", "-integr", "5"], 2, "unknown type flag '-integr'"),
        (["write", "DOMAIN", "K", "-bool", "perhaps"], 2, "is not a boolean"),
        (["write", "DOMAIN", "K", "-date", "soon"], 2, "is not a date"),
        (["write", "DOMAIN", "K", "-date", "24-05-01 12:\u{5B0}:0"], 2, "is not a date"),  // Foundation's DateFormatter trapped on it
        (["write", "DOMAIN", "K", "-data", "xyz"], 2, "is not data"),
        (["write", "DOMAIN", "K", "{ a = "], 2, "is not property-list text"),
        (["write", "DOMAIN", "Text", "-array-add", "x"], 1, "-array-add: Text in DOMAIN is string, not an array"),
        (["write", "DOMAIN", "Text", "-dict-add", "x", "y"], 1, "-dict-add: Text in DOMAIN is string, not a dictionary"),
        (["write", "DOMAIN", "(a, b)"], 2, "is not a dictionary"),
        (["write", "DOMAIN"], 2, "usage: defaults write"),
        (["write", "../escape", "K", "v"], 2, "must not contain '/' or '..'"),
        (["write", "a/b", "K", "v"], 2, "must not contain '/' or '..'"),
        (["write", "NSGlobalDomain", "K", "v"], 2, "global domain"),
        (["delete", "DOMAIN", "Missing"], 1, "has no key Missing"),
        (["rename", "DOMAIN", "Missing", "New"], 1, "Key Missing does not exist"),
        (["read", "DOMAIN", "Missing"], 1, "The domain/default pair of (DOMAIN, Missing) does not exist"),
        (["import", "DOMAIN", "/nonexistent/file.plist"], 1, "cannot read /nonexistent/file.plist"),
        (["frobnicate", "DOMAIN"], 2, "unknown defaults subcommand 'frobnicate'"),
        (["read", "DOMAIN", "a", "b"], 2, "usage: defaults read"),
    ]

    @Test("bad input: a clear message, exit 2 or 1, and the file byte for byte as it was", arguments: 0..<hostile.count)
    func badInput(index: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/held.plist"
        #expect(Self.run(["write", domain, "{ Text = hello; Count = <*I3>; }"]).0 == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: domain))
        let (words, status, message) = Self.hostile[index]
        let (code, console) = Self.run(words.map { $0 == "DOMAIN" ? domain : $0 })
        #expect(code == status, "\(words): \(console.err)")
        #expect(console.err.contains(message.replacingOccurrences(of: "DOMAIN", with: domain)), "\(console.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: domain)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix("held.plist") }.isEmpty)
    }

    @Test("a file named by path that is not a property list is reported and left exactly as it is: not moved, nothing made beside it",
          arguments: [["write", "DOMAIN", "K", "v"], ["read", "DOMAIN"], ["read-type", "DOMAIN", "K"], ["delete", "DOMAIN", "K"],
                      ["delete", "DOMAIN"], ["rename", "DOMAIN", "a", "b"], ["export", "DOMAIN", "-"]])
    func damagedFile(words: [String]) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/broken.plist"
        let damage = Data("<?xml version=\"1.0\"?><plist><dict><key>a</key>".utf8)
        try damage.write(to: URL(fileURLWithPath: domain))
        let (status, console) = Self.run(words.map { $0 == "DOMAIN" ? domain : $0 })
        #expect(status == 1)
        #expect(console.err.contains("unreadable") && console.err.contains(domain), "\(console.err)")
        #expect(FileManager.default.contents(atPath: domain) == damage, "the file is left as it was")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["broken.plist"], "nothing made beside it")
    }
}

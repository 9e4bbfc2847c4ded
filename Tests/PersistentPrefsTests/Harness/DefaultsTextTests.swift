import Foundation
import PrefsHarnessKit
import Testing

/// The property-list text of `prefs-harness defaults`: parsing what people type, printing what
/// `defaults read` prints.
@Suite("Harness: defaults text")
struct DefaultsTextTests {
    static let may1 = Date(timeIntervalSince1970: 1_714_564_800)  // 2024-05-01 12:00:00 UTC

    /// Compares two property-list values, numbers by kind and value.
    static func same(_ lhs: Any, _ rhs: Any) -> Bool {
        switch (lhs, rhs) {
        case let (l as String, r as String): return l == r
        case let (l as Date, r as Date): return l == r
        case let (l as Data, r as Data): return l == r
        case let (l as NSNumber, r as NSNumber): return PlistText.kind(of: l) == PlistText.kind(of: r) && l == r
        case let (l as [Any], r as [Any]): return l.count == r.count && zip(l, r).allSatisfy { same($0, $1) }
        case let (l as [String: Any], r as [String: Any]):
            return Set(l.keys) == Set(r.keys) && l.allSatisfy { same($0.value, r[$0.key]!) }
        default: return false
        }
    }

    nonisolated(unsafe) static let parsed: [(String, Any)] = [
        ("hello", "hello"),
        ("\"hello world\"", "hello world"),
        ("'single quoted'", "single quoted"),
        ("-5", "-5"),  // old-style text has no numbers: a bare word is a string
        ("com.example.app", "com.example.app"),
        ("\"a\\nb\\t\\\"c\\\"\\\\\"", "a\nb\t\"c\"\\"),
        ("\"caf\\U00e9 \\U00e9t\\U00e9\"", "café été"),
        ("\"\\Ud83d\\Ude00\"", "😀"),
        ("\"\\101\\102\"", "AB"),
        ("( a, \"b c\", )", ["a", "b c"]),
        ("()", [Any]()),
        ("{ a = 1; \"b c\" = ( x, y ); d = { e = f; }; }", ["a": "1", "b c": ["x", "y"], "d": ["e": "f"]]),
        ("{ a = 1 }", ["a": "1"]),  // the last ';' may be left out
        ("{}", [String: Any]()),
        ("<0fbd 77>", Data([0x0f, 0xbd, 0x77])),
        ("<>", Data()),
        ("/* a comment */ ( a, // another\n b )", ["a", "b"]),
        ("<*I42>", NSNumber(value: 42)),
        ("<*R1.5>", NSNumber(value: 1.5)),
        ("<*BY>", NSNumber(value: true)),
        ("<*D2024-05-01 12:00:00 +0000>", may1),
        ("<integer>5</integer>", NSNumber(value: 5)),
        ("<real>2.5</real>", NSNumber(value: 2.5)),
        ("<true/>", NSNumber(value: true)),
        ("<date>2024-05-01T12:00:00Z</date>", may1),
        ("<array><string>x</string><integer>1</integer></array>", ["x", NSNumber(value: 1)] as [Any]),
        ("<dict><key>k</key><false/></dict>", ["k": NSNumber(value: false)]),
        (
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict><key>n</key><integer>-3</integer></dict></plist>",
            ["n": NSNumber(value: -3)]
        ),
    ]

    @Test("old-style text, XML fragments and whole XML documents parse", arguments: 0..<parsed.count)
    func parses(index: Int) throws {
        let (text, expected) = Self.parsed[index]
        let value = try PlistText.parse(text)
        #expect(Self.same(value, expected), "\(text) → \(value)")
    }

    static let refused: [(String, String)] = [
        ("{ a = 1 ", "'}' is missing at the end of a dictionary (line 1, column 9)"),
        ("( a b )", "',' or ')' is missing after an array element (line 1, column 5)"),
        ("\"abc", "the closing quote is missing (line 1, column 1)"),
        ("<0fb>", "data needs an even number of hex digits (line 1, column 1)"),
        ("<0fbz>", "'z' is not a hex digit in data (line 1, column 5)"),
        ("{ a 1; }", "'=' is missing after the key \"a\" (line 1, column 5)"),
        ("{ a = 1\n  b = 2; }", "';' is missing after the value of \"a\" (line 2, column 3)"),
        ("a b", "unexpected 'b' after the value (line 1, column 3)"),
        ("", "a value is missing (line 1, column 1)"),
        ("{ (x) = 1; }", "a dictionary key must be a string (line 1, column 6)"),
        ("<*Ix>", "'x' is not an integer (line 1, column 1)"),
        ("=", "unexpected '=' (line 1, column 1)"),
    ]

    @Test("text that does not parse says what was expected, and where", arguments: 0..<refused.count)
    func refuses(index: Int) {
        let (text, message) = Self.refused[index]
        #expect(throws: PlistText.ParseError(description: message)) { try PlistText.parse(text) }
    }

    @Test("a nesting 200 deep is refused, not a crash")
    func deepNesting() {
        #expect(throws: PlistText.ParseError.self) { try PlistText.parse(String(repeating: "(", count: 200)) }
    }

    nonisolated(unsafe) static let printed: [(Any, String, String)] = [
        // value, printed on its own (read DOMAIN KEY), printed inside a collection
        ("hello", "hello", "hello"),
        ("hello world", "hello world", "\"hello world\""),
        ("", "", "\"\""),
        ("a-b_c.d", "a-b_c.d", "\"a-b_c.d\""),
        ("café", "café", "\"caf\\U00e9\""),
        ("say \"hi\"\n", "say \"hi\"\n", "\"say \\\"hi\\\"\\n\""),
        (NSNumber(value: 42), "42", "42"),
        (NSNumber(value: -7), "-7", "\"-7\""),
        (NSNumber(value: 1.5), "1.5", "\"1.5\""),
        (NSNumber(value: 2.0), "2", "2"),
        (NSNumber(value: true), "1", "1"),
        (NSNumber(value: false), "0", "0"),
        (may1, "2024-05-01 12:00:00 +0000", "\"2024-05-01 12:00:00 +0000\""),
        (Data([0x0f, 0xbd, 0x77]), "{length = 3, bytes = 0x0fbd77}", "{length = 3, bytes = 0x0fbd77}"),
        (
            Data(0..<40), "{length = 40, bytes = 0x000102030405060708090a0b0c0d0e0f ... 2021222324252627}",
            "{length = 40, bytes = 0x000102030405060708090a0b0c0d0e0f ... 2021222324252627}"
        ),
    ]

    @Test("scalars print as defaults read prints them, quoted inside collections", arguments: 0..<printed.count)
    func printsScalars(index: Int) {
        let (value, alone, inside) = Self.printed[index]
        #expect(PlistText.describe(value) == alone)
        #expect(PlistText.describe([value]) == "(\n    \(inside)\n)")
    }

    @Test("collections print nested, four spaces a level, keys sorted")
    func printsCollections() throws {
        let value: [String: Any] = [
            "s": "hello world", "a": [NSNumber(value: 1), NSNumber(value: 2)], "b": ["c": "d"], "empty": [Any](),
            "list": [["x": "y"] as [String: Any]],
        ]
        let expected = """
            {
                a =     (
                    1,
                    2
                );
                b =     {
                    c = d;
                };
                empty =     (
                );
                list =     (
                            {
                        x = y;
                    }
                );
                s = "hello world";
            }
            """
        #expect(PlistText.describe(value, topLevel: false) == expected)
        #expect(PlistText.describe([String: Any]()) == "{\n}")
    }

    @Test("what read prints parses back to the same strings and structure")
    func roundTrip() throws {
        let value: [String: Any] = ["plain": "x", "spaced": "a b", "quote": "say \"hi\"", "unicode": "é😀", "list": ["1", "two"]]
        let text = PlistText.describe(value, topLevel: false)
        #expect(Self.same(try PlistText.parse(text), value), "\(text)")
    }

    @Test("read-type names every kind as defaults does")
    func kinds() {
        let values: [(Any, String)] = [
            ("s", "string"), (NSNumber(value: 1), "integer"), (NSNumber(value: 1.5), "float"), (NSNumber(value: true), "boolean"),
            (Self.may1, "date"), (Data(), "data"), ([Any](), "array"), ([String: Any](), "dictionary"),
        ]
        for (value, name) in values { #expect(PlistText.kind(of: value)?.rawValue == name) }
    }

    nonisolated(unsafe) static let flags: [([String], Any)] = [
        (["-string", "5"], "5"),
        (["-int", "5"], NSNumber(value: 5)),
        (["-integer", "-12"], NSNumber(value: -12)),
        (["-float", "1.25"], NSNumber(value: 1.25)),
        (["-bool", "YES"], NSNumber(value: true)),
        (["-boolean", "false"], NSNumber(value: false)),
        (["-bool", "1"], NSNumber(value: true)),
        (["-date", "2024-05-01T12:00:00Z"], may1),
        (["-date", "2024-05-01 12:00:00 +0000"], may1),
        (["-date", "2024-05-01T14:00:00+02:00"], may1),
        (["-date", "2024-05-01T09:30:00-02:30"], may1),
        (["-date", "2024-05-01T12:00:00.000Z"], may1),
        (["-data", "0FBD77"], Data([0x0f, 0xbd, 0x77])),
        (["-array", "a", "b c", "-int", "3"], ["a", "b c", NSNumber(value: 3)] as [Any]),
        (["-array"], [Any]()),
        (["-dict", "k", "v", "n", "-int", "2"], ["k": "v", "n": NSNumber(value: 2)] as [String: Any]),
        (["(x, y)"], ["x", "y"]),
        (["plain"], "plain"),
        (["-5"], "-5"),
    ]

    @Test("write's type flags give typed values", arguments: 0..<flags.count)
    func typeFlags(index: Int) throws {
        let (words, expected) = Self.flags[index]
        guard case .set("K", let value) = try WriteChange.parse(["K"] + words) else {
            Issue.record("not a set of K: \(words)")
            return
        }
        #expect(Self.same(value, expected), "\(words) → \(value)")
    }

    static let badFlags: [([String], String)] = [
        (["K", "-int", "5x"], "'5x' is not an integer for -int"),
        (["K", "-float", "nan"], "'nan' is not a number for -float"),
        (["K", "-bool", "maybe"], "'maybe' is not a boolean for -bool (use true, false, yes, no, 1 or 0)"),
        (["K", "-data", "abc"], "'abc' is not data for -data (an even number of hex digits, such as 0fbd77)"),
        (["K", "-date", "tomorrow"], "'tomorrow' is not a date for -date"),
        (["K", "-date", "2024-05-01T12:00:00Zxyz"], "'2024-05-01T12:00:00Zxyz' is not a date for -date"),
        (["K", "-date", "2024-5-1"], "'2024-5-1' is not a date for -date"),
        (["K", "-date", "20224-05-01 12:00:00 +0000"], "'20224-05-01 12:00:00 +0000' is outside the dates a set can store (years 1 to 9999)"),
        (["K", "-array", "-date", "10000-01-01"], "'10000-01-01' is outside the dates a set can store (years 1 to 9999)"),
        (["K", "-integr", "5"], "unknown type flag '-integr'"),
        (["K", "-int"], "-int takes one value, got 0"),
        (["K", "-int", "1", "2"], "-int takes one value, got 2"),
        (["K", "-dict", "k"], "the key 'k' has no value"),
        (["K", "-array", "-int"], "-int needs a value"),
        (["K", "a", "b"], "too many values for K"),
        (["-int", "5"], "the key is missing before -int"),
        (["{ a = "], "is not property-list text"),
        (["(a, b)"], "is not a dictionary"),
    ]

    @Test("a bad flag or value is a usage error naming it", arguments: 0..<badFlags.count)
    func badTypeFlags(index: Int) {
        let (words, message) = Self.badFlags[index]
        do {
            _ = try WriteChange.parse(words)
            Issue.record("\(words) parsed")
        } catch let error as HarnessError {
            #expect(error.exitCode == 2)
            #expect(error.message.contains(message), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

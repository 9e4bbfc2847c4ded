import Foundation
import PrefsHarnessKit
import Testing

@Suite("Harness: values")
struct HarnessValueTests {
    static let now = Date(timeIntervalSince1970: 1_000)

    static func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)!
    }

    struct Good: CustomTestStringConvertible, @unchecked Sendable {
        let key: SampleKey
        let text: String
        let check: (Any) -> Bool
        var testDescription: String { "\(key.rawValue) \(text)" }
    }

    static let good: [Good] = [
        Good(key: .int, text: "42") { $0 as? Int == 42 },
        Good(key: .int, text: "-7") { $0 as? Int == -7 },
        Good(key: .int, text: " 8 ") { $0 as? Int == 8 },
        Good(key: .int, text: "9223372036854775807") { $0 as? Int == Int.max },
        Good(key: .string, text: "any text, with = and ,") { $0 as? String == "any text, with = and ," },
        Good(key: .string, text: "") { $0 as? String == "" },
        Good(key: .array, text: "a, b ,c") { $0 as? [String] == ["a", "b", "c"] },
        Good(key: .array, text: "") { $0 as? [String] == [] },
        Good(key: .array, text: "solo") { $0 as? [String] == ["solo"] },
        Good(key: .array, text: "[\"x,y\", \"z\"]") { $0 as? [String] == ["x,y", "z"] },
        Good(key: .dict, text: "a=1, b=2") { $0 as? [String: String] == ["a": "1", "b": "2"] },
        Good(key: .dict, text: "a==b") { $0 as? [String: String] == ["a": "=b"] },
        Good(key: .dict, text: "a=") { $0 as? [String: String] == ["a": ""] },
        Good(key: .dict, text: "") { $0 as? [String: String] == [:] },
        Good(key: .dict, text: "{\"k\": \"v, w\"}") { $0 as? [String: String] == ["k": "v, w"] },
        Good(key: .date, text: "now") { $0 as? Date == now },
        Good(key: .date, text: "NOW") { $0 as? Date == now },
        Good(key: .date, text: "2024-05-01T12:00:00Z") { $0 as? Date == date("2024-05-01T12:00:00.000Z") },
        Good(key: .date, text: "2024-05-01T12:00:00.250Z") { $0 as? Date == date("2024-05-01T12:00:00.250Z") },
        Good(key: .date, text: "2024-05-01T14:00:00+02:00") { $0 as? Date == date("2024-05-01T12:00:00.000Z") },
        Good(key: .date, text: "2024-05-01") { $0 as? Date == date("2024-05-01T00:00:00.000Z") },
    ]

    @Test("values that parse for their key", arguments: good)
    func parses(_ example: Good) throws {
        let value = try ValueParser.parse(example.text, for: example.key, now: Self.now)
        #expect(example.check(value), "got \(value)")
    }

    static let bad: [(SampleKey, String, String)] = [
        (.int, "abc", "'abc' is not an integer for Integer Value"),
        (.int, "1.5", "'1.5' is not an integer for Integer Value"),
        (.int, "", "'' is not an integer for Integer Value"),
        (.int, "99999999999999999999", "99999999999999999999 is outside the range of an integer (-9223372036854775808 to 9223372036854775807) for Integer Value"),
        (.array, "[1, 2]", "is not a JSON array of strings for Array Value"),
        (.array, "[unclosed", "is not a JSON array of strings"),
        (.dict, "a", "'a' is not a k=v pair"),
        (.dict, "=v", "is not a k=v pair"),
        (.dict, "a=1,a=2", "'a' appears twice"),
        (.dict, "{\"a\": 1}", "is not a JSON object of strings for Dictionary Value"),
        (.date, "yesterday", "'yesterday' is not an ISO 8601 date (or 'now') for Date Value"),
        (.date, "2024-13-01", "is not an ISO 8601 date"),
        // Foundation's ISO 8601 parser on Linux reads these, ignoring or guessing what does not fit.
        (.date, "2024-05-01xyz", "'2024-05-01xyz' is not an ISO 8601 date"),
        (.date, "2024-05-01T12:00:00Zxyz", "is not an ISO 8601 date"),
        (.date, "2024-5-1", "is not an ISO 8601 date"),
        // Found by Fuzz/run's harness target: parsed, then refused by the set with no word on why.
        (.date, "22024024-05-01T12:00:00Z", "'22024024-05-01T12:00:00Z' is outside the dates a set can store (years 1 to 9999) for Date Value (write it as "),
    ]

    @Test("values that do not parse are usage errors naming the value and the key", arguments: bad)
    func rejects(_ key: SampleKey, _ text: String, _ fragment: String) {
        do {
            let value = try ValueParser.parse(text, for: key)
            Issue.record("parsed '\(text)' as \(value)")
        } catch let error as HarnessError {
            #expect(error == .usage(error.message))
            #expect(error.message.contains(fragment), "\(error.message)")
            if !fragment.contains("twice") {
                #expect(error.message.contains("(write it as "), "says how to write it: \(error.message)")
            }
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("keys are found by full name or alias, case-insensitively")
    func keyNames() {
        #expect(SampleKey(named: "Integer Value") == .int)
        #expect(SampleKey(named: "integer value") == .int)
        #expect(SampleKey(named: "int") == .int)
        #expect(SampleKey(named: "DICT") == .dict)
        #expect(SampleKey(named: "dictionary") == .dict)
        #expect(SampleKey(named: "Date Value") == .date)
        #expect(SampleKey(named: "nope") == nil)
    }

    @Test("values are shown in the form set accepts back", arguments: SampleKey.allCases)
    func formattedValuesParseBack(_ key: SampleKey) throws {
        let samples: [SampleKey: Any] = [
            .int: NSNumber(value: -12), .string: "text, with comma", .array: ["a", "b c", "x,y"],
            .dict: ["k": "v", "e": "x=y"], .date: Date(timeIntervalSince1970: 1_700_000_000.5),
        ]
        let value = samples[key]!
        let text = ValueFormatter.text(value)
        let parsed = try ValueParser.parse(text, for: key)
        #expect(ValueFormatter.text(parsed) == text)
        #expect(ValueFormatter.typeName(value, for: key) == key.typeName)
    }

    @Test("a value of another type is shown with its actual type")
    func mismatchedType() {
        #expect(ValueFormatter.typeName("text", for: .int) == "String (expected Int)")
        #expect(ValueFormatter.typeName(NSNumber(value: 1.5), for: .int) == "Double (expected Int)")
    }

    @Test("JSON shows dates as ISO 8601 and data as base64, on one line, slashes as they are")
    func json() throws {
        let text = ValueFormatter.jsonText(
            ["d": Date(timeIntervalSince1970: 0), "b": Data([1, 2]), "n": NSNumber(value: 3), "p": "/tmp/a\\b\"c", "l": [["k": 1]]])
        #expect(text == #"{"b":"AQI=","d":"1970-01-01T00:00:00Z","l":[{"k":1}],"n":3,"p":"/tmp/a\\b\"c"}"#)
    }
}

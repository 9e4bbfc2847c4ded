import Foundation
import PersistentPrefs
import Testing

/// What ``PrefsSchema`` reads from a schema file, and how a key's rules judge a value: a rule is
/// read exactly or the file is refused, and a value is never let through a rule it cannot be
/// judged by.
@Suite("Schemas: reading a schema file strictly, judging values exactly")
struct SchemaReadingTests {
    /// A schema file with one key, "Volume", described by `volume` (a JSON object's text).
    static func file(volume: String, extra: String = "\"schemaVersion\": 0, ") -> Data {
        Data(#"{"format": 1, "root": "R", "class": "C", \#(extra)"keys": {"Volume": \#(volume)}}"#.utf8)
    }

    @Test(
        "a rule that cannot be read exactly refuses the whole file, naming the key",
        arguments: [
            #"{"kind": "integer", "range": {"min": "0", "max": "11"}}"#, #"{"kind": "integer", "range": 11}"#,
            #"{"kind": "string", "choices": "light"}"#, #"{"kind": "quux"}"#, #"{"kind": ["integer"]}"#,
            #"{"kind": "integer", "range": {"min": 9.3e18}}"#, #"{"kind": "integer", "range": {"max": 1e300}}"#,
            #"{"kind": "integer", "range": {"min": 18446744073709551616}}"#, #"{"kind": "integer", "range": {"min": 1.5}}"#,
            #"{"kind": "data", "range": {"min": "AA=="}}"#, #"{"kind": "integer", "choices": [1, true]}"#,
            #"{"kind": "boolean", "default": 1}"#, #"{"summary": 7}"#, #"[1]"#,
        ])
    func malformedRules(_ volume: String) {
        #expect {
            try PrefsSchema(jsonData: Self.file(volume: volume))
        } throws: { error in
            guard case PersistentPrefs.PrefsError.corruptStore(_, let reason) = error else { return false }
            return reason.contains("the key \"Volume\"")
        }
    }

    @Test("files that are not schema files this code reads are refused, deep nesting before it is parsed")
    func damagedFiles() {
        let damaged: [Data] = [
            Data("[]".utf8), Data("nope".utf8), Data(#"{"root": "R", "keys": {}}"#.utf8), Data(#"{"format": 2, "root": "R", "keys": {}}"#.utf8),
            Data(#"{"format": true, "root": "R", "keys": {}}"#.utf8), Data(#"{"format": 1, "root": "R", "keys": {}, "schemaVersion": -1}"#.utf8),
            Data(#"{"format": 1, "root": "R", "keys": {}, "class": 3}"#.utf8),
            Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8),
        ]
        for data in damaged {
            #expect(throws: PersistentPrefs.PrefsError.self, "\(String(decoding: data.prefix(60), as: UTF8.self))") { try PrefsSchema(jsonData: data) }
        }
    }

    @Test("a file without a schemaVersion says so; the library's own files record it")
    func versionRecorded() throws {
        let without = try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "integer"}"#, extra: ""))
        #expect(!without.recordsSchemaVersion && without.schemaVersion == 0)
        let with = try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "integer"}"#, extra: #""schemaVersion": 4, "#))
        #expect(with.recordsSchemaVersion && with.schemaVersion == 4)
        let written = PrefsSchema(root: "R", className: "C", schemaVersion: 2, keys: [])
        #expect(try PrefsSchema(jsonData: written.jsonData).schemaVersion == 2)
    }

    @Test("integer bounds of the whole Int64 and UInt64 span are read as written and compared exactly")
    func exactBounds() throws {
        let wide = try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "integer", "range": {"min": 9223372036854775808, "max": 18446744073709551615}}"#))
        let key = try #require(wide["Volume"])
        #expect(key.problem(with: 99) == "99 is outside the range 9223372036854775808...18446744073709551615")
        #expect(key.problem(with: UInt64(9_223_372_036_854_775_809)) == nil)
        let full = try #require(try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "integer", "range": {"min": -9223372036854775808, "max": 9223372036854775807}}"#))["Volume"])
        #expect(full.problem(with: Int.min) == nil && full.problem(with: Int.max) == nil && full.problem(with: 7) == nil)
        let real = try #require(try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "real", "range": {"min": -1e300, "max": 1e300}}"#))["Volume"])
        #expect(real.problem(with: 7) == nil && real.problem(with: 7.5) == nil)
        #expect(real.problem(with: 1e301) == "1e+301 is outside the range -1e+300...1e+300")
        // 2^53 + 1 is above 2^53, which a Double holding both cannot tell; 0 is below 0.5.
        let exact = PrefsSchema.Key(name: "N", type: "Int", kind: "integer", minimum: 0.5, maximum: 9_007_199_254_740_992.0)
        #expect(exact.problem(with: 9_007_199_254_740_993)?.contains("is outside the range 0.5...") == true)
        #expect(exact.problem(with: 9_007_199_254_740_992) == nil)
        #expect(exact.problem(with: 0) == "0 is outside the range 0.5...9007199254740992.0")
    }

    @Test("a value that cannot be ordered against a bound, or any value against empty choices, is refused with a sentence")
    func failsClosed() {
        let ranged = PrefsSchema.Key(name: "Volume", type: nil, kind: nil, minimum: 0, maximum: 11)
        #expect(ranged.problem(with: "abc") == "\"abc\" cannot be compared with the minimum, 0")
        #expect(ranged.problem(with: 99) == "99 is outside the range 0...11")
        #expect(PrefsSchema.Key(name: "Volume", type: nil, kind: nil, maximum: 11).problem(with: 99) == "99 is above the maximum, 11")
        #expect(PrefsSchema.Key(name: "Volume", type: nil, kind: nil, minimum: 0).problem(with: -1) == "-1 is below the minimum, 0")
        #expect(ranged.problem(with: Double.nan) != nil)
        #expect(ranged.problem(with: 5) == nil)
        let none = PrefsSchema.Key(name: "Theme", type: "Theme", kind: "string", choices: [])
        #expect(none.problem(with: "dark") == "the schema lists no value that Theme may hold (its choices are empty)")
    }

    /// Found by `Fuzz/run`'s schema target: Foundation's `JSONSerialization` on Linux reads
    /// this real as 1.1111111111101121e+120; the schema reader reads numbers itself.
    @Test("a real default reads back exactly as written")
    func realDefaultReadsExactly() throws {
        let schema = try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "real", "default": 1.1111111111101114e+120}"#))
        #expect(schema.keys.first?.defaultValue as? Double == 1.1111111111101114e+120)
    }

    @Test("a number too large for a Double is refused, naming it; text that is not JSON says where it stops")
    func numberOutOfRange() {
        #expect(throws: PersistentPrefs.PrefsError.corruptStore(path: "", reason: "it holds a number too large for a Double, 1e400, at offset 108")) {
            try PrefsSchema(jsonData: Self.file(volume: #"{"kind": "real", "default": 1e400}"#))
        }
        #expect(throws: PersistentPrefs.PrefsError.corruptStore(path: "", reason: "it is not JSON (reading stopped at offset 14)")) {
            try PrefsSchema(jsonData: Data(#"{"format": 1, }"#.utf8))
        }
    }
}

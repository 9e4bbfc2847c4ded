import Foundation
import Testing

@testable import PersistentPrefs

/// The JSON reader behind schema files and the harness's JSON values: RFC 8259 read strictly,
/// numbers read exactly and of the kind their text has.
@Suite("JSON reader: strict, exact numbers")
struct JSONReaderTests {
    static func read(_ text: String) throws -> Any { try JSONText.value(of: Data(text.utf8)) }

    @Test("numbers keep their kind and read to the nearest Double")
    func numbers() throws {
        let array = try #require(try Self.read("[5, 5.0, -0.0, 1e2, -9223372036854775808, 18446744073709551615, 18446744073709551616, 1.1111111111101114e+120, 4.9e-324, 1e-400, true, false]") as? [NSNumber])
        #expect(array.map { NumberKind($0) } == [.signed, .real, .real, .real, .signed, .unsigned, .real, .real, .real, .real, .boolean, .boolean])
        #expect(array[0].int64Value == 5 && array[1].doubleValue == 5)
        #expect(array[2].doubleValue.sign == .minus)
        #expect(array[4].int64Value == .min && array[5].uint64Value == .max)
        #expect(array[6].doubleValue == 18_446_744_073_709_551_616)
        // Foundation's JSONSerialization on Linux reads this one as 1.1111111111101121e+120.
        #expect(array[7].doubleValue == 1.1111111111101114e+120)
        #expect(array[8].doubleValue == .leastNonzeroMagnitude)
        #expect(array[9].doubleValue == 0)
        // JSON has no infinity: a number beyond a Double is refused, as Foundation refuses it.
        #expect(throws: JSONText.ReadError.numberOutOfRange("-1e400", offset: 4)) { try Self.read("[1, -1e400]") }
        #expect(throws: JSONText.ReadError.numberOutOfRange("1" + String(repeating: "0", count: 400), offset: 1)) {
            try Self.read("[1" + String(repeating: "0", count: 400) + "]")
        }
        #expect(array[10].boolValue && !array[11].boolValue)
    }

    @Test("strings: escapes, surrogate pairs, any scalar")
    func strings() throws {
        let text = #"["a\"b\\c\/d\b\f\n\r\t", "\u00e9\ud83d\ude00\u0000", "é😀 raw", ""]"#
        #expect(try Self.read(text) as? [String] == ["a\"b\\c/d\u{08}\u{0C}\n\r\t", "é😀\u{0}", "é😀 raw", ""])
    }

    @Test("objects: nesting, null, a repeated key keeps its last value, a leading byte-order mark")
    func objects() throws {
        let object = try #require(try JSONText.value(of: Data([0xEF, 0xBB, 0xBF]) + Data(#" {"a": {"b": [null, {}]}, "k": 1, "k": 2} "#.utf8)) as? [String: Any])
        #expect(object["k"] as? Int == 2)
        let inner = try #require((object["a"] as? [String: Any])?["b"] as? [Any])
        #expect(inner.count == 2 && inner[0] is NSNull && (inner[1] as? [String: Any])?.isEmpty == true)
    }

    @Test(
        "text that is not JSON is refused, saying where reading stopped",
        arguments: [
            ("", 0), ("[1,]", 3), ("[01]", 1), ("[1.]", 1), ("[.5]", 1), ("[1e]", 1), ("[+1]", 1), ("[NaN]", 1), ("[Infinity]", 1),
            ("{\"a\" 1}", 5), ("{a: 1}", 1), ("[\"\\ud800\"]", 2), ("[\"\\udc00\"]", 2), ("[\"\\x\"]", 2), ("[\"\\u12\"]", 2),
            ("[\"tab\there\"]", 5), ("[1] 2", 4), ("[\"open]", 7), ("tru", 0), ("[1}", 2),
        ])
    func refused(_ text: String, offset: Int) {
        #expect(throws: JSONText.ReadError.notJSON(offset: offset)) { try Self.read(text) }
    }

    @Test("ill-formed UTF-8 is refused, at its first byte; what Swift's decoder takes as well-formed, the check takes too")
    func invalidUTF8() {
        #expect(throws: JSONText.ReadError.notJSON(offset: 2)) { try JSONText.value(of: Data([0x5B, 0x22, 0xF0, 0x9F, 0x98, 0x22, 0x5D])) }
        // Overlong, surrogate, past U+10FFFF, stray continuation, truncated at the end.
        for bad: [UInt8] in [[0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xE2, 0x82]] {
            #expect(JSONText.firstInvalidUTF8([0x61] + bad) == 1, "\(bad)")
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator) | (Bool.random(using: &generator) ? 0x80 : 0)
            }
            let wellFormed = Array(String(decoding: bytes, as: UTF8.self).utf8) == bytes
            let first = JSONText.firstInvalidUTF8(bytes)
            #expect((first == nil) == wellFormed, "\(bytes)")
            // Everything before the first bad byte is well-formed, and no well-formed sequence
            // starts at it.
            if let first {
                #expect(Array(String(decoding: bytes[..<first], as: UTF8.self).utf8) == Array(bytes[..<first]), "\(bytes)")
                for end in (first + 1)...min(first + 4, bytes.count) {
                    #expect(Array(String(decoding: bytes[first..<end], as: UTF8.self).utf8) != Array(bytes[first..<end]), "\(bytes) at \(first)")
                }
            }
        }
    }

    @Test("nesting past the limit is refused before it is read")
    func depth() throws {
        let deep = String(repeating: "[", count: 5) + String(repeating: "]", count: 5)
        #expect(try JSONText.value(of: Data(deep.utf8), maximumDepth: 5) is [Any])
        #expect(throws: JSONText.ReadError.tooDeep(limit: 4)) { try JSONText.value(of: Data(deep.utf8), maximumDepth: 4) }
        let huge = String(repeating: "[", count: 100_000)
        #expect(throws: JSONText.ReadError.tooDeep(limit: 128)) { try JSONText.value(of: Data(huge.utf8)) }
    }

    @Test("what JSONText writes reads back as the same value")
    func roundTrip() throws {
        let value: [String: Any] = [
            "s": "a/b \"q\" \u{1} é😀", "i": Int64.min, "u": UInt64.max, "r": 0.1, "b": true, "n": NSNull(), "a": [1, [2.5, "x"], [:] as [String: Any]],
        ]
        for pretty in [false, true] {
            let read = try #require(try Self.read(JSONText.text(value, pretty: pretty)) as? [String: Any])
            #expect(JSONText.text(read, pretty: false) == JSONText.text(value, pretty: false))
            #expect(NumberKind(try #require(read["u"] as? NSNumber)) == .unsigned)
        }
    }
}

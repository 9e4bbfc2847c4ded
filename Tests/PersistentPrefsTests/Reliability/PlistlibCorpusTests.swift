import Foundation
import Testing

@testable import PersistentPrefs

/// The library against another writer, on documents Python's `plistlib` wrote in the spellings
/// other programs and hand edits use (`Fixtures/plistlib-corpus.json`, made by
/// `Tests/Differential/plist_roundtrip.py --emit-corpus`, with `plistlib`'s reading of each):
/// each reads as `plistlib` reads it, and a library write of another key keeps every value.
@Suite("Documents written by plistlib")
struct PlistlibCorpusTests {
    struct Document {
        let xml: Data
        /// `plistlib`'s reading, as the fixture spells it (see ``matches(_:_:)``).
        let value: Any
    }

    /// The fixture's documents (none when it cannot be read: ``corpus()`` fails then).
    static func documents() -> [Document] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/plistlib-corpus.json")
        guard let data = try? Data(contentsOf: url), let entries = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
            return []
        }
        return entries.compactMap { entry in
            guard let xml = (entry["xml"] as? String).flatMap({ Data(base64Encoded: $0) }), let value = entry["value"] else { return nil }
            return Document(xml: xml, value: value)
        }
    }

    /// Where `actual`, as the library read it, differs from `expected`, the fixture's typed tree
    /// (the same kind at every level, integers and dates to the unit, reals to the bit), or `nil`.
    static func mismatch(_ expected: Any, _ actual: Any, at path: String = "") -> String? {
        guard let tree = expected as? [String: Any], tree.count == 1, let (kind, value) = tree.first else { return "\(path): bad fixture" }
        let found = "\(path): expected \(kind) \(value), found \(type(of: actual)) \(actual)"
        switch kind {
        case "dict":
            guard let expected = value as? [String: Any], let actual = actual as? [String: Any] else { return found }
            guard Set(expected.keys) == Set(actual.keys) else {
                return "\(path): keys \(expected.keys.map(\.debugDescription).sorted()) != \(actual.keys.map(\.debugDescription).sorted())"
            }
            return expected.keys.sorted().lazy.compactMap { mismatch(expected[$0]!, actual[$0]!, at: path + "/" + $0.debugDescription) }.first
        case "array":
            guard let expected = value as? [Any], let actual = actual as? [Any], expected.count == actual.count else { return found }
            return zip(expected, actual).enumerated().lazy.compactMap { mismatch($1.0, $1.1, at: path + "[\($0)]") }.first
        case "string":
            guard let text = actual as? String, let value = value as? String, Array(text.unicodeScalars) == Array(value.unicodeScalars) else { return found }
        case "integer":
            guard type(of: actual) != Bool.self, let number = actual as? NSNumber, NumberKind(number) == .signed || NumberKind(number) == .unsigned,
                let text = value as? String, text.hasPrefix("-") ? String(number.int64Value) == text : String(number.uint64Value) == text
            else { return found }
        case "real":
            guard let number = actual as? NSNumber, NumberKind(number) == .real, let bits = UInt64(value as? String ?? "", radix: 16),
                number.doubleValue.bitPattern == bits
            else { return found }
        case "bool":
            guard type(of: actual) == Bool.self, let bool = actual as? Bool, let value = value as? Bool, bool == value else { return found }
        case "date":
            guard let date = actual as? Date, let seconds = Int64(value as? String ?? ""), date.timeIntervalSince1970 == Double(seconds) else { return found }
        case "data":
            guard let data = actual as? Data, data == Data(base64Encoded: value as? String ?? "") else { return found }
        default:
            return "\(path): unknown kind \(kind)"
        }
        return nil
    }

    @Test("the corpus is there and varied")
    func corpus() {
        #expect(Self.documents().count == 400)
        let text = Self.documents().map { String(decoding: $0.xml, as: UTF8.self) }
        for spelling in ["<!--", "<![CDATA[", "&#", "\r\n", "<?", "\u{FEFF}", "<key/>", "<data/>", "inf<", "0x"] {
            #expect(text.contains { $0.contains(spelling) }, "no document spells \(spelling.debugDescription)")
        }
    }

    @Test("each document reads as plistlib reads it, or is declined as one CoreFoundation reads otherwise")
    func reading() {
        var declined = 0
        for (index, document) in Self.documents().enumerated() {
            switch PlistXML.read(document.xml) {
            case .success(let dictionary):
                let difference = Self.mismatch(document.value, dictionary)
                #expect(difference == nil, "document \(index): \(difference ?? "")")
            case .failure(let decline):
                Issue.record("document \(index): \(decline.reason)")
                declined += 1
            }
        }
        #expect(declined == 0, "declined \(declined)")
    }

    @Test("a library write of another key keeps every value, or refuses and leaves the file byte for byte", .linuxSuiteFiles)
    func roundTrip() throws {
        let suite = TestSuite("plistlib")
        defer { suite.remove() }
        let url = URL(fileURLWithPath: suite.path)
        var written = 0
        for (index, document) in Self.documents().enumerated() {
            try document.xml.write(to: url)
            let prefs = TreePrefs(key: "probe", store: suite.store)
            prefs.values = ["a": index]
            let after = try Data(contentsOf: url)
            if prefs.lastError != nil {
                #expect(after == document.xml, "document \(index): refused, but the file changed")
                continue
            }
            written += 1
            guard var dictionary = PlistFile.dictionary(from: after) else {
                Issue.record("document \(index): the library's own file does not read back")
                continue
            }
            #expect((dictionary.removeValue(forKey: "probe") as? [String: Any])?["a"] as? Int == index)
            let difference = Self.mismatch(document.value, dictionary)
            #expect(difference == nil, "document \(index): \(difference ?? "")")
        }
        #expect(written > Self.documents().count * 9 / 10)
    }
}

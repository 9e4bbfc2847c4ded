import Foundation
import Testing

@testable import PersistentPrefs

/// What the library writes, every property-list reader reads: a set holding a character XML 1.0
/// cannot carry (the C0 controls but tab and line feed, U+FFFE, U+FFFF) is written as a binary
/// property list, anything else as XML that holds none of them raw.
@Suite("Portable files: every character survives, and every reader reads the file")
struct PortableFileTests {
    /// Every C0 control, DEL, and the characters near the edges of what XML and UTF-8 carry.
    static let awkward: [String] =
        (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + [
            "\u{7F}", "\u{85}", "\u{2028}", "\u{FEFF}", "\u{FFFD}", "\u{FFFE}", "\u{FFFF}", "\u{10FFFF}", "\r\n", "a\rb",
            "colour \u{1B}[31mred", "😀", "&<>\"'", "ｆｕｌｌ\u{FF01}",
        ]

    /// The key the mutation fuzz found: U+0005, U+0013 and U+0014 in a key.
    static let awkwardKey = "k\u{5}\u{13}\u{14}"

    final class Anything: PersistentPrefs {
        override var keys: [String] { PortableFileTests.awkward.indices.map { "k\($0)" } + [PortableFileTests.awkwardKey, "plain"] }
    }

    /// The set the tests write: one awkward string per key, one nested, one as a key.
    static var values: [String: Any] {
        var values: [String: Any] = [:]
        for (index, text) in awkward.enumerated() { values["k\(index)"] = text }
        values[awkwardKey] = ["nested \u{1}": ["in an array \u{B}", "\u{FFFE}"]] as [String: Any]
        values["plain"] = "ordinary"
        return values
    }

    /// Checks the file at `path` as another program would read it: XML only when no XML 1.0
    /// parser refuses it, Foundation reads `expected` back, and so does Python's `plistlib`
    /// where it is installed.
    static func checkReadable(_ path: String, holds expected: [String: Any], root: String?) throws {
        let data = try #require(FileManager.default.contents(atPath: path))
        let isXML = data.starts(with: Array("<?xml".utf8))
        if isXML { #expect(PlistXML.isPortable(data), "XML that an XML 1.0 parser refuses: \(path)") }
        let top = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        let read = try #require(root.map { top[$0] } ?? top)
        let normalized = try #require(PlistValue.normalized(read) as? [String: Any])
        #expect(PlistValue.same(normalized, expected), "Foundation reads another set back from \(path): \(differences(normalized, expected))")
        try checkWithPlistlib(path, holds: expected, root: root)
    }

    /// Where `python3` is installed: `plistlib` loads the file and finds every string of
    /// `expected` in it, character for character.
    static func checkWithPlistlib(_ path: String, holds expected: [String: Any], root: String?) throws {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: FileManager.default.isExecutableFile) else { return }
        let script = """
            import json, plistlib, sys
            top = plistlib.load(open(sys.argv[1], 'rb'))
            if sys.argv[2]: top = top[sys.argv[2]]
            print(json.dumps(top, sort_keys=True, ensure_ascii=True))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, path, root ?? ""]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "plistlib: \(String(decoding: printed, as: UTF8.self))")
        guard process.terminationStatus == 0 else { return }
        let parsed = try #require(try JSONSerialization.jsonObject(with: printed) as? [String: Any])
        let normalized = try #require(PlistValue.normalized(parsed) as? [String: Any])
        #expect(PlistValue.same(normalized, expected), "plistlib reads another set back from \(path): \(differences(normalized, expected))")
    }

    /// The keys whose values differ, with the Unicode scalars of each side.
    static func differences(_ found: [String: Any], _ expected: [String: Any]) -> String {
        let keys = Set(found.keys).union(expected.keys).filter { !PlistValue.same(found[$0], expected[$0]) }
        return keys.sorted().map { key in
            let scalars = { (value: Any?) in (value as? String).map { $0.unicodeScalars.map { String($0.value, radix: 16) } } ?? ["\(String(describing: value))"] }
            return "\(key): \(scalars(found[key])) instead of \(scalars(expected[key]))"
        }.joined(separator: "; ")
    }

    @Test("a suite holding every awkward character: the library, Foundation and plistlib read it back", .linuxSuiteFiles)
    func suiteFile() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = Anything(key: "Awkward", values: Self.values, store: suite.store)
        #expect(prefs.lastError == nil)
        _ = try prefs.reload()
        #expect(PlistValue.same(prefs.values, Self.values))
        try Self.checkReadable(suite.path, holds: Self.values, root: "Awkward")
        // A later write keeps the file readable, and once no such character is left it is XML again.
        prefs["k7"] = "bell\u{7} again"
        try Self.checkReadable(suite.path, holds: prefs.values, root: "Awkward")
        prefs.values = ["plain": "ordinary", "k13": "a\rb"]
        try Self.checkReadable(suite.path, holds: prefs.values, root: "Awkward")
        let data = try #require(FileManager.default.contents(atPath: suite.path))
        #expect(data.starts(with: Array("<?xml".utf8)), "a set with nothing XML cannot carry is written as XML")
    }

    @Test("a colour code written by prefs-harness's defaults tool leaves the suite readable", .linuxSuiteFiles)
    func terminalColour() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = Anything(key: "Awkward", store: suite.store)
        prefs["plain"] = "colour \u{1B}[31mred"
        #expect(prefs.lastError == nil)
        try Self.checkReadable(suite.path, holds: ["plain": "colour \u{1B}[31mred"], root: "Awkward")
    }

    @Test("a PlistFileStore file, an exported set and a Codable settings file hold every awkward character readably")
    func otherFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = Anything(key: "Awkward", values: Self.values, store: store)
        #expect(prefs.lastError == nil)
        try Self.checkReadable(try store.fileURL(forRoot: "Awkward").path, holds: Self.values, root: nil)

        let exported = URL(fileURLWithPath: directory.path + "/export.plist")
        try prefs.export(to: exported)
        try Self.checkReadable(exported.path, holds: Self.values, root: nil)
        let imported = Anything(key: "Imported", store: store)
        try imported.import(from: exported)
        #expect(PlistValue.same(imported.values, Self.values))
    }

    /// A set with a date key and a string key.
    final class Dated: PersistentPrefs {
        override var keys: [String] { ["when", "plain"] }
    }

    @Test("a date with a fraction of a second is kept exactly: the suite is binary while it holds one", .linuxSuiteFiles)
    func fractionalDate() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let exact = Date(timeIntervalSinceReferenceDate: 786_000_000.25)
        let prefs = Dated(key: "Dated", store: suite.store)
        prefs["when"] = exact
        #expect(prefs.lastError == nil)
        _ = try prefs.reload()
        #expect(prefs["when"] as? Date == exact)
        var data = try #require(FileManager.default.contents(atPath: suite.path))
        #expect(!data.starts(with: Array("<?xml".utf8)))
        let top = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect((top["Dated"] as? [String: Any])?["when"] as? Date == exact)
        // A whole second is written as XML again.
        prefs["when"] = Date(timeIntervalSinceReferenceDate: 786_000_000)
        data = try #require(FileManager.default.contents(atPath: suite.path))
        #expect(data.starts(with: Array("<?xml".utf8)))
    }

    @Test("another program's date keeps its fraction of a second when the library writes beside it", .linuxSuiteFiles)
    func foreignFractionalDate() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let exact = Date(timeIntervalSinceReferenceDate: 786_000_000.5)
        let foreign = try PropertyListSerialization.data(fromPropertyList: ["OtherApp.lastSync": exact], format: .binary, options: 0)
        try foreign.write(to: URL(fileURLWithPath: suite.path))
        let prefs = Dated(key: "Dated", store: suite.store)
        prefs["plain"] = "mine"
        #expect(prefs.lastError == nil)
        let data = try #require(FileManager.default.contents(atPath: suite.path))
        let top = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(top["OtherApp.lastSync"] as? Date == exact)
        #expect((top["Dated"] as? [String: Any])?["plain"] as? String == "mine")
    }

    @Test("the XML writer marks a date with a fraction of a second, or of minus zero seconds, as one XML cannot keep")
    func writerDateJudgement() throws {
        for (seconds, portable) in [(0.0, true), (-1.0, true), (786_000_000, true), (0.5, false), (-0.5, false), (786_000_000.001, false), (-0.0, false)] {
            let judged = try #require(PlistXML.portableDocument(["v": Date(timeIntervalSinceReferenceDate: seconds)]))
            #expect(judged.portable == portable, "\(seconds)")
        }
    }

    @Test("the suite ledger's own XML of every awkward string reads back the same")
    func ledgerEncoding() throws {
        for text in Self.awkward + ["\u{FEFF}leading", Self.awkwardKey] {
            let xml = try #require(SuiteLedger.xml(text))
            guard case .success(let wrapped) = PlistFile.parse(xml) else {
                Issue.record("the ledger's XML of \(text.unicodeScalars.map { String($0.value, radix: 16) }) does not parse")
                continue
            }
            #expect(wrapped["v"] as? String == text, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("the XML writer marks exactly the documents XML 1.0 cannot carry", arguments: Array(PortableFileTests.awkward.indices))
    func writerJudgement(index: Int) throws {
        let text = Self.awkward[index]
        let (data, portable) = try #require(PlistXML.portableDocument(["v": text, text: "as a key"]))
        let forbidden = text.unicodeScalars.contains { scalar in
            (scalar.value < 0x20 && scalar.value != 0x09 && scalar.value != 0x0A && scalar.value != 0x0D) || scalar.value == 0xFFFE || scalar.value == 0xFFFF
        } || text.unicodeScalars.first == "\u{FEFF}"
        #expect(portable == !forbidden, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(PlistXML.isPortable(data) == portable)
    }
}

extension PlistXML {
    /// Whether every XML parser reads `document`'s characters as the library wrote them, found
    /// from the bytes (the writer's own mark, ``PlistXML/Writer/portable``, is checked against
    /// it): no character XML 1.0 cannot carry even as a reference (U+0000–U+0008, U+000B,
    /// U+000C, U+000E–U+001F, U+FFFE, U+FFFF), no raw carriage return, and no key or string
    /// that starts with U+FEFF.
    static func isPortable(_ document: Data) -> Bool {
        document.withUnsafeBytes { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte < 0x20 && byte != 0x09 && byte != 0x0A { return false }
                if byte == 0xEF, index + 2 < bytes.count {
                    if bytes[index + 1] == 0xBF && bytes[index + 2] >= 0xBE { return false }  // U+FFFE, U+FFFF
                    if bytes[index + 1] == 0xBB && bytes[index + 2] == 0xBF && index > 0 && bytes[index - 1] == UInt8(ascii: ">") { return false }
                }
                index += 1
            }
            return true
        }
    }
}

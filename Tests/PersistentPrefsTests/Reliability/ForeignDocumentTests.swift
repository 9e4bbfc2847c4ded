import Foundation
import Testing

@testable import PersistentPrefs

/// A suite file belongs to every program that writes it: a library write of one set keeps every
/// other value exactly as the file held it, or is refused and leaves the file byte for byte.
@Suite("Other programs' suite documents", .linuxSuiteFiles)
struct ForeignDocumentTests {
    /// Writes `document` as the suite's file, then the set "a" through the library; returns the
    /// file's reading after the write (or the error, with the file's bytes).
    static func touch(_ document: String, in suite: TestSuite) throws -> Result<[String: Any], PersistentPrefs.PrefsError> {
        try Data(document.utf8).write(to: URL(fileURLWithPath: suite.path))
        let prefs = TreePrefs(key: "a", store: suite.store)
        prefs.values = ["a": 7]
        if let error = prefs.lastError { return .failure(error) }
        let written = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        return .success(try #require(PlistFile.dictionary(from: written)))
    }

    static let keptDocuments: [(String, String)] = [
        ("-0.0", "<key>z</key><real>-0.0</real>"),
        ("infinities as Python writes them", "<key></key><real>-inf</real><key>p</key><real>inf</real>"),
        ("U+FEFF keys beside an empty key", "<key></key><integer>1</integer><key>\u{FEFF}</key><false/><key>s</key><string>\u{FEFF}x</string>"),
        ("comments and instructions", "<!-- c --><key>k</key><?pi x?><string>v</string>"),
        ("CDATA and references", "<key>c</key><string><![CDATA[<a>]]>&#x1F600;&#13;</string>"),
        ("empty keys at every depth", "<key></key><dict><key></key><dict><key></key><string>deep</string></dict></dict>"),
        ("a year CoreFoundation writes for dates past 9999", "<key>d</key><date>2030437302-06-07T00:00:00Z</date>"),
        ("a year before 1", "<key>d</key><date>-001-11-28T00:00:00Z</date>"),
        ("hexadecimal and signed integers", "<key>h</key><integer>0x1F</integer><key>s</key><integer>+5</integer>"),
    ]

    @Test("values another program wrote survive a library write of another key", arguments: Array(keptDocuments.indices))
    func kept(index: Int) throws {
        let (name, body) = Self.keptDocuments[index]
        let suite = TestSuite("foreign")
        defer { suite.remove() }
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<plist version=\"1.0\">\r\n<dict>\(body)</dict>\r\n</plist>\r\n"
        let original = try #require(PlistXML.dictionary(from: Data(document.utf8)), "\(name)")
        let after = try Self.touch(document, in: suite).get()
        #expect(after.count == original.count + 1, "\(name)")
        for (key, value) in original {
            #expect(after[key].map { XMLReaderTests.same($0, value) } == true, "\(name): \(key)")
        }
        let set = try #require(after["a"] as? [String: Any])
        #expect((set["a"] as? NSNumber)?.intValue == 7)
    }

    @Test("a carriage return in a string Foundation wrote is kept, and written back as a reference")
    func foundationCarriageReturn() throws {
        let suite = TestSuite("foreign-cr")
        defer { suite.remove() }
        let document = try PropertyListSerialization.data(fromPropertyList: ["k\r": "a\r\nb\r"], format: .xml, options: 0)
        #expect(document.contains(0x0D), "Foundation writes the carriage return as it is")
        let after = try Self.touch(String(decoding: document, as: UTF8.self), in: suite).get()
        #expect(after["k\r"] as? String == "a\r\nb\r")
        #expect(try !Data(contentsOf: URL(fileURLWithPath: suite.path)).contains(0x0D))
    }

    /// Documents Foundation's reader reads, which the library's cannot read exactly.
    static let refusedDocuments: [(String, String)] = [
        ("a carriage return inside a string of a document with CRLF line ends", "<key>k</key>\r\n<string>line\r\nnext</string>"),
        ("a year past what CoreFoundation reads", "<key>d</key><date>99999999999-01-01T00:00:00Z</date>"),
    ]

    /// Whole documents that neither the library's reader nor Foundation's reads.
    static let unreadDocuments: [(String, String)] = [
        ("a comment inside a string", "<key>k</key><string>a<!-- c -->b</string>"),
        ("an integer with trailing space", "<key>k</key><integer>5 </integer>"),
    ]

    static func document(_ body: String) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\(body)</dict>\n</plist>\n"
    }

    @Test("a document the library cannot read exactly, which Foundation reads, is never rewritten", arguments: Array(refusedDocuments.indices))
    func refused(index: Int) throws {
        let (name, body) = Self.refusedDocuments[index]
        let suite = TestSuite("foreign-refused")
        defer { suite.remove() }
        let document = Self.document(body)
        #expect((try? PropertyListSerialization.propertyList(from: Data(document.utf8), format: nil)) is [String: Any], "\(name): Foundation reads it")
        let result = try Self.touch(document, in: suite)
        guard case .failure(.corruptStore(let path, let reason)) = result else {
            Issue.record("\(name): \(result)")
            return
        }
        #expect(path == suite.path, "\(name)")
        #expect(reason.contains("cannot read exactly") && reason.contains("left as it is"), "\(name): \(reason)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: suite.path)) == Data(document.utf8), "\(name): byte for byte")
        let folder = (suite.path as NSString).deletingLastPathComponent
        let file = (suite.path as NSString).lastPathComponent
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).allSatisfy { !$0.hasPrefix(file + ".corrupt") }, "never moved aside")
    }

    @Test("a whole document that neither reader reads is damage: moved aside byte for byte, and the write starts afresh", arguments: Array(unreadDocuments.indices))
    func unread(index: Int) throws {
        let (name, body) = Self.unreadDocuments[index]
        let suite = TestSuite("foreign-unread")
        defer { suite.remove() }
        let document = Self.document(body)
        #expect((try? PropertyListSerialization.propertyList(from: Data(document.utf8), format: nil)) == nil, "\(name): Foundation refuses it")
        let folder = (suite.path as NSString).deletingLastPathComponent
        let file = (suite.path as NSString).lastPathComponent
        try Data(document.utf8).write(to: URL(fileURLWithPath: suite.path))
        let prefs = TreePrefs(key: "a", store: suite.store)
        guard case .corruptStore(let path, let reason)? = prefs.lastError else {
            Issue.record("\(name): \(String(describing: prefs.lastError))")
            return
        }
        #expect(path == suite.path && reason.contains("it is damaged, not a property list") && reason.contains("moved aside"), "\(name): \(reason)")
        let copies = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(file + ".corrupt-") }
        #expect(copies.count == 1, "\(name)")
        #expect(try copies.map { try Data(contentsOf: URL(fileURLWithPath: folder + "/" + $0)) } == [Data(document.utf8)], "\(name): byte for byte")
        prefs.values = ["a": 7]
        #expect(prefs.lastError == nil, "\(name): the write starts the suite afresh")
        #expect(TreePrefs(key: "a", store: suite.store).values["a"] as? Int == 7)
    }

    @Test("a date further than Foundation's calendar reaches is refused by a write, never a crash")
    func farDate() throws {
        let suite = TestSuite("foreign-far-date")
        defer { suite.remove() }
        // Binary property lists are read by Foundation, which keeps any date.
        let document = try PropertyListSerialization.data(
            fromPropertyList: ["d": Date(timeIntervalSinceReferenceDate: 1e300)], format: .binary, options: 0)
        try document.write(to: URL(fileURLWithPath: suite.path))
        let prefs = TreePrefs(key: "a", store: suite.store)
        prefs.values = ["a": 7]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["d"]))
        #expect(try Data(contentsOf: URL(fileURLWithPath: suite.path)) == document)
        #expect(PlistXML.text(of: Date(timeIntervalSinceReferenceDate: 1e300)) == nil)
        #expect(PlistXML.text(of: Date(timeIntervalSinceReferenceDate: -.infinity)) == nil)
    }
}

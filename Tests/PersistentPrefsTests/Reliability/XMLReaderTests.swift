import Foundation
import Testing

@testable import PersistentPrefs

/// The library reads XML suite files with its own reader (`PlistXML.dictionary(from:)`), falling
/// back to Foundation for what it declines: whatever it reads must be exactly what Foundation
/// hands back for the same bytes — same values, same Swift types, same `NSNumber` kinds.
@Suite("The XML reader of suite files")
struct XMLReaderTests {
    /// Foundation's reading of `data`, as `PlistFile` takes it (top-level keys as `String`).
    static func foundation(_ data: Data) -> [String: Any]? {
        (try? PropertyListSerialization.propertyList(from: data, format: nil)).flatMap(PlistValue.stringKeyedDictionary)
    }

    /// Identity of shape and value: the same dynamic type at every level (but for dictionaries:
    /// the reader's `[String: Any]` stands for Foundation's `[AnyHashable: Any]`), `NSNumber`s
    /// of the same kind and bits (NaN included), dictionaries with the same keys.
    static func same(_ a: Any, _ b: Any) -> Bool {
        let dictionaries: [Any.Type] = [[String: Any].self, [AnyHashable: Any].self]
        let bothDictionaries = dictionaries.contains { $0 == type(of: a) } && dictionaries.contains { $0 == type(of: b) }
        guard bothDictionaries || type(of: a) == type(of: b) else { return false }
        switch (a, b) {
        case let (a as String, b as String): return a == b
        case let (a as Bool, b as Bool): return a == b
        case let (a as NSNumber, b as NSNumber):
            guard String(cString: a.objCType) == String(cString: b.objCType) else { return false }
            if String(cString: a.objCType) == "d" { return a.doubleValue.bitPattern == b.doubleValue.bitPattern }
            return a.int64Value == b.int64Value && a.uint64Value == b.uint64Value
        case let (a as Date, b as Date): return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case let (a as Data, b as Data): return a == b
        case let (a as [Any], b as [Any]): return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case let (a as [AnyHashable: Any], b as [AnyHashable: Any]):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        default: return false
        }
    }

    /// Checks `data` both ways; returns whether the library's reader read it.
    @discardableResult
    static func check(_ data: Data, _ comment: Comment? = nil) -> Bool {
        guard let ours = PlistXML.dictionary(from: data) else { return false }
        guard let theirs = foundation(data) else {
            Issue.record("\(comment.map { "\($0): " } ?? "")read a document Foundation refuses: \(String(decoding: data, as: UTF8.self))")
            return true
        }
        let differing = Set(ours.keys).union(theirs.keys).sorted().filter { key in
            guard let mine = ours[key], let foundation = theirs[key] else { return true }
            return !same(mine, foundation)
        }
        func shown(_ value: Any?) -> String { value.map { "\(type(of: $0)) \($0)" } ?? "none" }
        let report = differing.map { "\($0): ours \(shown(ours[$0])), Foundation's \(shown(theirs[$0]))" }
        #expect(differing.isEmpty, "\(comment.map { "\($0): " } ?? "")keys read otherwise: \(report) in \(String(decoding: data, as: UTF8.self))")
        return true
    }

    static func document(_ body: String, declaration: String = #"<?xml version="1.0" encoding="UTF-8"?>"#) -> Data {
        Data("""
            \(declaration)
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            \(body)
            </plist>

            """.utf8)
    }

    @Test("each kind of value, written by Foundation and by the library, reads as Foundation reads it")
    func kinds() throws {
        for (name, value) in XMLWriterTests.kinds() {
            let set: [String: Any] = ["a": value, "b": 1]
            let foundation = try PropertyListSerialization.data(fromPropertyList: set, format: .xml, options: 0)
            // Control characters are left to Foundation by both the library's writer and reader.
            let control = name.hasPrefix("control")
            #expect(Self.check(foundation, "\(name), Foundation's writer") != control, "\(name)")
            if let ours = PlistXML.document(PlistValue.loadedOrAsIs(set)) {
                #expect(Self.check(ours, "\(name), the library's writer"), "\(name)")
            } else {
                #expect(control, "\(name)")
            }
        }
    }

    @Test("random value trees read as Foundation reads them")
    func randomTrees() throws {
        var maker = TreeMaker(random: SeededGenerator(state: 20_261_126))
        var storableTrees = 0
        var read = 0
        while storableTrees < 300 {
            guard let tree = maker.storableSet(keys: ["a", "b", "c", "<&>é"]),
                let data = try? PropertyListSerialization.data(fromPropertyList: tree, format: .xml, options: 0)
            else { continue }
            storableTrees += 1
            if Self.check(data, "tree \(storableTrees)") { read += 1 }
        }
        // Every tree the library can store is one its reader reads (chains nested to the limit included).
        #expect(read == storableTrees)
    }

    @Test("dates over the whole range and numbers at the edges read as Foundation reads them")
    func datesAndNumbers() {
        var generator = SeededGenerator(state: 11)
        var dates = (0..<3000).map { _ in
            Date(timeIntervalSinceReferenceDate: Double.random(in: PlistValue.dateRange, using: &generator).rounded(.down))
        }
        dates += [PlistValue.dateRange.lowerBound, PlistValue.dateRange.upperBound, 0, -1, 951_782_400 - 978_307_200].map(Date.init(timeIntervalSinceReferenceDate:))
        let data = try? PropertyListSerialization.data(fromPropertyList: ["d": dates], format: .xml, options: 0)
        #expect(data.map { Self.check($0) } == true)
        let integers = [
            "0", "-0", "007", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615",
            "18446744073709551616", "-9223372036854775809", "99999999999999999999", "+5", "0x10", " 5", "5 ", "", "1.0", "1e3", "--1",
        ]
        let reals = [
            "0.0", "-0.0", "1.5", "3", "-2", "1e300", "1E-300", "2.5e+10", "nan", "+infinity", "-infinity", "inf", "NaN", ".5", "5.",
            "1e", "e5", "--1", "1.2.3", "0.1", "4.9406564584124654e-324", "1.7976931348623157e+308", "1e999", "",
            "123456789012345678901234567890",
        ]
        var readIntegers = 0
        for text in integers where Self.check(Self.document("<dict><key>k</key><integer>\(text)</integer></dict>")) { readIntegers += 1 }
        var readReals = 0
        for text in reals where Self.check(Self.document("<dict><key>k</key><real>\(text)</real></dict>")) { readReals += 1 }
        #expect(readIntegers == 7, "the decimal forms, to UInt64.max")
        #expect(readReals == 17, "decimal forms, nan and the infinities")
    }

    @Test("hand-written variations: read the same, or left to Foundation")
    func variations() throws {
        let read = [
            "<dict/>", "<dict></dict>", "<dict>\n</dict>",
            "<dict><key>s</key><string>a &amp; b &lt; c &gt; d &quot; &apos; &#65;&#x42;&#233;&#x1F389;</string></dict>",
            "<dict><key>s</key><string>a > b</string></dict>",
            "<dict><key>s</key><string>  spaced\t\n  </string></dict>",
            "<dict><key>s</key><string/><key>t</key><string></string></dict>",
            "<dict><key></key><string>empty key</string></dict>",
            "<dict><key>&lt;&amp;&gt;</key><true/><key>f</key><false/></dict>",
            "<dict><key>a</key><array/><key>b</key><array></array><key>c</key><dict/><key>d</key><array><dict/><array/></array></dict>",
            "<dict><key>n</key><dict><key>k</key><dict><key>k</key><integer>1</integer></dict></dict></dict>",
            "<dict><key>data</key><data>AAEC\n\tAwQF</data><key>e</key><data></data><key>p</key><data>AA==</data></dict>",
            "<dict><key>d</key><date>2024-02-29T23:59:59Z</date></dict>",
        ]
        for body in read {
            #expect(Self.check(Self.document(body)), "\(body)")
        }
        // Left to Foundation: it may read them (its way) or refuse them (with its message).
        let left = [
            "<dict><key>x</key><data>!!</data></dict>", "<dict><key>data</key><data>AAE</data></dict>",
            "<dict><key>data</key><data>AA=A</data></dict>",
            "<dict><key>d</key><date>2023-02-29T00:00:00Z</date></dict>",
            "<dict><key>d</key><date>2024-01-01T00:00:00.5Z</date></dict>",
            "<dict><key>d</key><date>2024-01-01</date></dict>",
            "<dict><key>dup</key><integer>1</integer><key>dup</key><integer>2</integer></dict>",
            "<dict><key>c</key><string><![CDATA[x]]></string></dict>",
            "<dict><!-- note --><key>k</key><integer>1</integer></dict>",
            "<dict><key>k</key><string>a&unknown;b</string></dict>",
            "<dict><key>k</key><string>a&#0;b</string></dict>",
            "<dict><key>k</key><string>bell\u{7}</string></dict>",
            "<dict><key>k</key><string>crlf\r\n</string></dict>",
            "<dict><key>k</key><integer>1</integer>", "<array><integer>1</integer></array>", "<string>top</string>",
            "<dict><key>k</key></dict>", "<dict><integer>1</integer></dict>", "<dict><key>k</key><unknown/></dict>",
            "<dict><key>k</key><string>x</string><key>k2</key></dict>",
        ]
        for body in left {
            #expect(PlistXML.dictionary(from: Self.document(body)) == nil, "\(body)")
        }
        let declarations = [
            "", #"<?xml version="1.0"?>"#, #"<?xml version="1.0" encoding="utf-8"?>"#, #"<?xml version="1.0" encoding='UTF-8'?>"#,
            #"<?xml version="1.0" encoding="UTF-16"?>"#, #"<?xml version="1.0" encoding="ISO-8859-1"?>"#, "\u{FEFF}<?xml version=\"1.0\"?>",
        ]
        for declaration in declarations {
            Self.check(Self.document("<dict><key>k</key><string>é</string></dict>", declaration: declaration), "\(declaration)")
        }
        let plain = Data("<plist version=\"1.0\"><dict><key>k</key><integer>3</integer></dict></plist>".utf8)
        #expect(Self.check(plain))
        for wrapper in ["<plist><dict/></plist>", "<plist/>", "<plistx><dict/></plistx>", "<plist><dict/></plist>trailing", "<plist><dict/>"] {
            Self.check(Data(wrapper.utf8), "\(wrapper)")
        }
        #expect(PlistXML.dictionary(from: Data()) == nil)
        #expect(PlistXML.dictionary(from: Data([0xC3, 0x28])) == nil)
        #expect(PlistXML.dictionary(from: Self.document("<dict><key>k</key><string>\u{FFFD}</string></dict>")) != nil)
        var bad = Self.document("<dict><key>k</key><string>xx</string></dict>")
        bad[try #require(bad.firstIndex(of: UInt8(ascii: "x")))] = 0xFF
        #expect(PlistXML.dictionary(from: bad) == nil, "bytes that are not UTF-8 are left to Foundation")
    }

    @Test("nesting deeper than the library's limit is left to Foundation")
    func depth() {
        let open = String(repeating: "<array>", count: PlistValue.maximumDepth)
        let close = String(repeating: "</array>", count: PlistValue.maximumDepth)
        #expect(Self.check(Self.document("<dict><key>k</key>\(open)\(close)</dict>")))
        #expect(!Self.check(Self.document("<dict><key>k</key>\(open)<array/>\(close)</dict>")))
    }

    @Test("every truncation and many one-byte changes of a document: read as Foundation reads them, or declined")
    func damaged() throws {
        let set: [String: Any] = [
            "s": "a<b>&c é", "i": -42, "big": UInt64.max, "r": 0.1, "t": true, "d": Date(timeIntervalSince1970: 1_700_000_000),
            "data": Data([1, 2, 3, 250]), "a": [1, "x", ["k": false]] as [Any], "e": [String: Any](),
        ]
        let data = try #require(PlistXML.document(PlistValue.loadedOrAsIs(set)))
        #expect(Self.check(data))
        var read = 0
        for length in 0..<data.count where Self.check(data.prefix(length)) { read += 1 }
        var generator = SeededGenerator(state: 3)
        let alphabet = Array("<>/&;#x0123456789-.eEZT: \t\nadikrstuvy".utf8)
        for _ in 0..<3000 {
            var changed = data
            changed[Int.random(in: 0..<data.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            if Self.check(changed) { read += 1 }
        }
        // Many one-byte changes land in text (a different string, digit or key): still read.
        #expect(read > 500, "read \(read)")
    }

    @Test("a suite file is read by the library's reader and means what Foundation reads")
    func suiteFiles() throws {
        let suite = TestSuite("xml-reader")
        defer { suite.remove() }
        let prefs = TreePrefs(key: "R", store: suite.store)
        prefs.values = ["a": "text", "b": [1, 2.5, true] as [Any], "c": ["x": Date(timeIntervalSince1970: 0)] as [String: Any]]
        #expect(prefs.lastError == nil)
        let data = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        #expect(Self.check(data))
        guard case .success(let parsed) = PlistFile.parse(data) else {
            Issue.record("the suite file did not parse")
            return
        }
        #expect(Self.same(parsed, try #require(Self.foundation(data))))
        // The set comes back in the shape the library keeps (no conversion when it is loaded).
        #expect(type(of: try #require(parsed["R"])) == [String: Any].self)
        #expect(PlistValue.loadedOrAsIs(parsed)["R"].map { type(of: $0) == [String: Any].self } == true)
    }
}

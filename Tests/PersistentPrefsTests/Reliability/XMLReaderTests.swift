import Foundation
import Testing

@testable import PersistentPrefs

/// The library reads XML suite files with its own reader (`PlistXML.read(_:)`), exactly as
/// CoreFoundation reads them, and declines what it cannot read so: whatever it reads that
/// Foundation reads too must be what Foundation hands back for the same bytes — same values,
/// same Swift types, same `NSNumber` kinds.
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

    /// The library's reading of `data`, expected to succeed.
    static func ours(_ data: Data, _ comment: Comment? = nil) -> [String: Any]? {
        switch PlistXML.read(data) {
        case .success(let dictionary): return dictionary
        case .failure(let decline):
            Issue.record("\(comment.map { "\($0): " } ?? "")declined (\(decline.reason)): \(String(decoding: data, as: UTF8.self))")
            return nil
        }
    }

    /// Whether `data` is declined as a document some reader reads but not exactly as CoreFoundation.
    static func unsupported(_ data: Data) -> Bool {
        if case .failure(let decline) = PlistXML.read(data) { return !decline.damaged }
        return false
    }

    /// Whether `data` is declined as damaged.
    static func damaged(_ data: Data) -> Bool {
        if case .failure(let decline) = PlistXML.read(data) { return decline.damaged }
        return false
    }

    @Test("each kind of value, written by Foundation and by the library, reads as Foundation reads it")
    func kinds() throws {
        for (name, value) in XMLWriterTests.kinds() {
            let set: [String: Any] = ["a": value, "b": 1]
            let foundation = try PropertyListSerialization.data(fromPropertyList: set, format: .xml, options: 0)
            #expect(Self.check(foundation, "\(name), Foundation's writer"), "\(name)")
            let ours = try #require(PlistXML.document(PlistValue.loadedOrAsIs(set)), "\(name)")
            // The library's writer keeps what Foundation's loses (the sign of -0.0): read back, not compared with Foundation.
            let read = try #require(Self.ours(ours, "\(name)"))
            #expect(Self.same(read, try #require(PlistXML.dictionary(from: PlistXML.document(read)!))), "\(name)")
        }
        let negativeZero = try #require(PlistXML.document(["z": NSNumber(value: -0.0)]))
        #expect((Self.ours(negativeZero)?["z"] as? NSNumber)?.doubleValue.sign == .minus, "-0.0 keeps its sign")
        let text = "cr\r lf\n crlf\r\n bell\u{7} nul\u{0} bom\u{FEFF} ]]> <&>"
        let written = try #require(PlistXML.document(["\u{FEFF}\r": text]))
        #expect(!String(decoding: written, as: UTF8.self).contains("\r"), "a carriage return is written as a reference")
        #expect(Self.ours(written).map { $0["\u{FEFF}\r"] as? String } == text)
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

    @Test("dates over the whole range and numbers in every spelling both kinds of reader agree on")
    func datesAndNumbers() {
        var generator = SeededGenerator(state: 11)
        var dates = (0..<3000).map { _ in
            Date(timeIntervalSinceReferenceDate: Double.random(in: PlistValue.dateRange, using: &generator).rounded(.down))
        }
        dates += [PlistValue.dateRange.lowerBound, PlistValue.dateRange.upperBound, 0, -1, 951_782_400 - 978_307_200].map(Date.init(timeIntervalSinceReferenceDate:))
        let data = try? PropertyListSerialization.data(fromPropertyList: ["d": dates], format: .xml, options: 0)
        #expect(data.map { Self.check($0) } == true)
        let integers: [(String, Int64?)] = [
            ("0", 0), ("-0", 0), ("007", 7), ("9223372036854775807", .max), ("-9223372036854775808", .min), ("+5", 5),
            ("0x10", 16), ("0XfF", 255), (" 5", 5), ("\n\t-12", -12),
        ]
        for (text, value) in integers {
            let read = Self.ours(Self.document("<dict><key>k</key><integer>\(text)</integer></dict>"), "\(text)")
            #expect((read?["k"] as? NSNumber)?.int64Value == value, "\(text)")
        }
        let big = Self.ours(Self.document("<dict><key>k</key><integer>18446744073709551615</integer></dict>"))
        #expect((big?["k"] as? NSNumber)?.uint64Value == .max)
        // Python reads these (or CoreFoundation does) and the other does not, or reads otherwise.
        for text in ["5 ", "1_000", "-0x10", " 0x10", "+ 5", "18446744073709551616", "-9223372036854775809", "1.0", "1e3", "--1", "0x"] {
            #expect(Self.unsupported(Self.document("<dict><key>k</key><integer>\(text)</integer></dict>")), "\(text)")
        }
        let reals: [(String, Double)] = [
            ("0.0", 0), ("-0.0", -0.0), ("1.5", 1.5), ("3", 3), ("-2", -2), ("1e300", 1e300), ("1E-300", 1e-300), ("2.5e+10", 2.5e10),
            ("+infinity", .infinity), ("-infinity", -.infinity), ("inf", .infinity), ("-inf", -.infinity), ("+inf", .infinity),
            ("Infinity", .infinity), ("-INF", -.infinity), (".5", 0.5), ("5.", 5), ("+1.5", 1.5), ("0.1", 0.1),
            ("4.9406564584124654e-324", .leastNonzeroMagnitude), ("1.7976931348623157e+308", .greatestFiniteMagnitude),
            ("1e999", .infinity), ("123456789012345678901234567890", 123456789012345677877719597056), ("&#49;.5", 1.5),
            ("<![CDATA[2.5]]>", 2.5),
        ]
        for (text, value) in reals {
            let read = Self.ours(Self.document("<dict><key>k</key><real>\(text)</real></dict>"), "\(text)")
            #expect((read?["k"] as? NSNumber)?.doubleValue.bitPattern == value.bitPattern, "\(text)")
        }
        for text in ["nan", "NaN", "NAN"] {
            #expect((Self.ours(Self.document("<dict><key>k</key><real>\(text)</real></dict>"))?["k"] as? NSNumber)?.doubleValue.isNaN == true)
        }
        for text in ["1e", "e5", "--1", "1.2.3", "", " 1.5", "1.5 ", "-nan", "0x1p3", "1_0.5", "."] {
            #expect(PlistXML.dictionary(from: Self.document("<dict><key>k</key><real>\(text)</real></dict>")) == nil, "\(text)")
        }
    }

    @Test("hand-written variations read the same as Foundation reads them")
    func variations() throws {
        let read = [
            "<dict/>", "<dict></dict>", "<dict>\n</dict>", "<dict >\r\n</dict >",
            "<dict><key>s</key><string>a &amp; b &lt; c &gt; d &quot; &apos; &#65;&#x42;&#233;&#x1F389;</string></dict>",
            "<dict><key>s</key><string>a > b</string></dict>",
            "<dict><key>s</key><string>  spaced\t\n  </string></dict>",
            "<dict><key>s</key><string/><key>t</key><string></string></dict>",
            "<dict><key></key><string>empty key</string></dict>",
            "<dict><key>&lt;&amp;&gt;</key><true/><key>f</key><false/></dict>",
            "<dict><key>t</key><true /><key>f</key><false></false></dict>",
            "<dict><key>a</key><array/><key>b</key><array></array><key>c</key><dict/><key>d</key><array><dict/><array/></array></dict>",
            "<dict><key>n</key><dict><key>k</key><dict><key>k</key><integer>1</integer></dict></dict></dict>",
            "<dict><key>data</key><data>AAEC\n\tAwQF</data><key>e</key><data></data><key>p</key><data>AA==</data></dict>",
            "<dict><key>d</key><date>2024-02-29T23:59:59Z</date></dict>",
            "<dict><!-- note --><key>k</key><!-- between --><integer>1</integer><?pi x?></dict>",
            "<dict>\r\n\t<key>k</key>\r\n\t<array>\r<integer>1</integer>\r</array>\r\n</dict>",
            "<dict><key>c</key><string><![CDATA[x<y>&z]]>tail &amp; <![CDATA[]]></string></dict>",
            "<dict><key><![CDATA[cdata key]]></key><string>v</string></dict>",
            "<dict><key>dup</key><integer>1</integer><key>dup</key><integer>2</integer></dict>",
            "<dict><key>k</key><string>bell\u{7}</string></dict>",
            "<dict><key>k</key><string>&#13;&#x0D;&#10;</string></dict>",
            // A carriage return in text, as Foundation writes it (lines end with a line feed): CoreFoundation's reading.
            "<dict><key>k\r</key><string>crlf\r\n</string><key>c</key><string><![CDATA[a\rb]]></string></dict>",
        ]
        for body in read {
            #expect(Self.check(Self.document(body)), "\(body)")
        }
        let duplicate = try #require(Self.ours(Self.document("<dict><key>dup</key><integer>1</integer><key>dup</key><integer>2</integer></dict>")))
        #expect((duplicate["dup"] as? NSNumber)?.intValue == 2, "the last of duplicate keys counts")
        // U+FEFF anywhere, in keys and strings (Foundation on Linux drops a leading one: compared with the text itself).
        let marks = try #require(Self.ours(Self.document("<dict><key>\u{FEFF}</key><false/><key></key><integer>1</integer><key>x\u{FEFF}</key><string>\u{FEFF}a\u{FEFF}</string></dict>")))
        #expect(marks.count == 3)
        #expect(marks["\u{FEFF}"] as? Bool == false && marks["x\u{FEFF}"] as? String == "\u{FEFF}a\u{FEFF}")
        let wide = try #require(Self.ours(Self.document("<dict><key>y</key><date>-0001-01-01T00:00:00Z</date><key>z</key><date>10000-01-01T00:00:00Z</date></dict>")))
        #expect((wide["y"] as? Date)?.timeIntervalSince1970 == -62_198_755_200, "year -1 (1 BC is year 0)")
        #expect((wide["z"] as? Date)?.timeIntervalSince1970 == 253_402_300_800)
        // Read by some readers but not exactly as CoreFoundation reads them: declined, never damaged.
        let unsupported = [
            "<dict>\r\n<key>k</key>\r\n<string>crlf\r\n</string></dict>", "<dict>\r<key>k</key><string><![CDATA[a\rb]]></string></dict>",
            "<dict><key>k</key><string>a<!-- c -->b</string></dict>",
            "<dict><key>k</key><string>a<?pi?>b</string></dict>", "<dict><key>k</key><string>a<b/>c</string></dict>",
            "<dict><key>k</key><string>a]]>b</string></dict>", "<dict><key>k</key><string>a&unknown;b</string></dict>",
            "<dict><key>k</key><string>a&#0;b</string></dict>", "<dict><key>k</key><string>a&#x1;b</string></dict>",
            "<dict><key>k</key><string>a &amp b</string></dict>",
            "<dict><key>x</key><data>!!</data></dict>", "<dict><key>data</key><data>AAE</data></dict>",
            "<dict><key>d</key><date>2023-02-29T00:00:00Z</date></dict>", "<dict><key>d</key><date>2024-01-01T00:00:00.5Z</date></dict>",
            "<dict><key>d</key><date>2024-01-01</date></dict>", "<dict><key>d</key><date> 2024-01-01T00:00:00Z</date></dict>",
            "<dict><key>k</key><key>v</key></dict>", "<dict><integer>1</integer></dict>", "<dict><key>k</key><unknown/></dict>",
            "<dict>text<key>k</key><true/></dict>", "<dict><!-- a -- b --><key>k</key><true/></dict>",
            "<dict><key>k</key><true>x</true></dict>", "<dict><key a=\"x>y\">k</key><true/></dict>",
        ]
        for body in unsupported {
            #expect(Self.unsupported(Self.document(body)), "\(body)")
        }
        // CoreFoundation refuses <data/>; the readers that read it (plistlib, which writes it) read empty data.
        #expect((Self.ours(Self.document("<dict><key>k</key><data/></dict>"))?["k"] as? Data) == Data())
        let declarations = [
            "", #"<?xml version="1.0"?>"#, #"<?xml version="1.0" encoding="utf-8"?>"#, #"<?xml version='1.0' encoding='UTF-8'?>"#,
            #"<?xml version="1.0" encoding = "UTF-8" standalone="yes"?>"#, "\u{FEFF}<?xml version=\"1.0\"?>",
        ]
        for declaration in declarations {
            #expect(Self.check(Self.document("<dict><key>k</key><string>é</string></dict>", declaration: declaration)), "\(declaration)")
        }
        for declaration in [#"<?xml version="1.0" encoding="UTF-16"?>"#, #"<?xml version="1.0" encoding="ISO-8859-1"?>"#] {
            #expect(Self.unsupported(Self.document("<dict/>", declaration: declaration)), "\(declaration)")
        }
        #expect(Self.unsupported(Data("<!DOCTYPE plist [<!ENTITY e \"x\">]><plist><dict/></plist>".utf8)))
        #expect(Self.damaged(Data("<plist><dict/></plist>trailing".utf8)), "not a whole document")
        #expect(Self.damaged(Data("<plist><dict/></plist><!-- c --><tail/><!-- d -->".utf8)))
        #expect(Self.unsupported(Data("\n<?xml version=\"1.0\"?><plist><dict/></plist>".utf8)))
        #expect(Self.unsupported(Data([0xFF, 0xFE, 0x3C, 0x00])))
        for wrapper in ["<plist><dict/></plist>", "<plist version=\"1.0\"><!-- c --><dict/><!-- d --></plist>\n<!-- e -->", "<dict><key>k</key><true/></dict>"] {
            #expect(Self.check(Data(wrapper.utf8)), "\(wrapper)")
        }
        for wrapper in ["<plist/>", "<plist><dict/>", "<plist></plist>", "<plist><dict/><dict/></plist>", "<plist><dict/></plistx>", ""] {
            #expect(Self.damaged(Data(wrapper.utf8)), "\(wrapper)")
        }
        #expect(Self.damaged(Data([0xC3, 0x28])))
        #expect(Self.damaged(Data(repeating: 0, count: 4096)), "a file of zeros is damaged, not another encoding")
        #expect(Self.unsupported(Data("<?xml version=\"1.0\"?><plist><dict/></plist>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })))
        #expect(PlistXML.dictionary(from: Self.document("<dict><key>k</key><string>\u{FFFD}</string></dict>")) != nil)
        var bad = Self.document("<dict><key>k</key><string>xx</string></dict>")
        bad[try #require(bad.range(of: Data("<string>x".utf8))).upperBound - 1] = 0xFF
        #expect(Self.damaged(bad), "bytes that are not UTF-8")
    }

    @Test("a set's value nested to the library's limit is read in a suite file; one level deeper is declined")
    func depth() {
        // The suite's dictionary, the set's dictionary, then the value's containers.
        let open = String(repeating: "<array>", count: PlistValue.maximumDepth)
        let close = String(repeating: "</array>", count: PlistValue.maximumDepth)
        #expect(Self.check(Self.document("<dict><key>set</key><dict><key>k</key>\(open)\(close)</dict></dict>")))
        #expect(Self.unsupported(Self.document("<dict><key>set</key><dict><key>k</key>\(open)<array/>\(close)</dict></dict>")))
    }

    @Test("every truncation of a document is damaged or read, never taken for a whole document", waitLimit)
    func truncations() throws {
        let document = Self.document("""
            <dict>\r
            \t<!-- a comment -->\r
            \t<key>c&amp;d</key>\t<string>x<![CDATA[<y>]]>&#x1F600;z</string>
            \t<key>i</key><integer>0x1F</integer><?pi data?>
            \t<key>r</key><real>-inf</real><key>t</key><true /><key/><string>empty key</string>
            \t<key>a</key><array><date>2024-01-01T00:00:00Z</date><data>AAEC</data><dict/></array>
            </dict>
            """)
        #expect(Self.ours(document) != nil)
        // Cut after something the reader declines in a whole document: still damaged.
        let declined = Self.document("<dict><key>k</key><string>a<!-- c -->b</string><key>n</key><integer>5 </integer><key>e</key><string>x</string></dict>")
        #expect(Self.unsupported(declined))
        for length in 0..<declined.count - 12 {
            #expect(Self.damaged(declined.prefix(length)), "cut at \(length)")
        }
        for length in 0..<document.count {
            let prefix = document.prefix(length)
            if case .failure(let decline) = PlistXML.read(prefix) {
                #expect(decline.damaged, "cut at \(length): \(decline.reason)")
            }
        }
    }

    @Test("many one-byte changes of a document: read as Foundation reads them, or declined")
    func damaged() throws {
        let set: [String: Any] = [
            "s": "a<b>&c é", "i": -42, "big": UInt64.max, "r": 0.1, "t": true, "d": Date(timeIntervalSince1970: 1_700_000_000),
            "data": Data([1, 2, 3, 250]), "a": [1, "x", ["k": false]] as [Any], "e": [String: Any](),
        ]
        let data = try #require(PlistXML.document(PlistValue.loadedOrAsIs(set)))
        #expect(Self.check(data))
        var read = 0
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

    @Test("a suite file is read by the library's reader and means what Foundation reads", .linuxSuiteFiles)
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

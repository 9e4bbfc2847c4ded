import Foundation
import Testing

@testable import PersistentPrefs

/// The suite files `UserDefaultsStore` writes on Linux come from the library's own XML writer;
/// they must mean exactly what Foundation's writer would have written for the same set.
@Suite("The XML writer of suite files")
struct XMLWriterTests {
    /// What Foundation makes of `data`, written back by Foundation: two documents that mean the
    /// same property list give the same text.
    static func canonical(_ data: Data) throws -> String {
        let parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
        return String(decoding: try PropertyListSerialization.data(fromPropertyList: parsed, format: .xml, options: 0), as: UTF8.self)
    }

    /// Writes `values` as the set "R" of a fresh suite and checks the file against Foundation's
    /// writer; returns the file's text.
    @discardableResult
    static func check(_ values: [String: Any], _ comment: Comment? = nil) throws -> String {
        let suite = TestSuite("xml")
        defer { suite.remove() }
        let prefs = TreePrefs(key: "R", store: suite.store)
        prefs.values = values
        #expect(prefs.lastError == nil, comment)
        let written = try Data(contentsOf: URL(fileURLWithPath: suite.path))
        let foundation = try PropertyListSerialization.data(fromPropertyList: ["R": prefs.values], format: .xml, options: 0)
        let (file, expected) = (try canonical(written), try canonical(foundation))
        // The store reads the file back as it was set (every later write of the suite reads it first).
        let readBack = try PropertyListSerialization.data(fromPropertyList: ["R": try suite.store.load(root: "R") ?? [:]], format: .xml, options: 0)
        #expect(try canonical(readBack) == expected, "\(comment?.description ?? ""): the store reads the file back differently")
        // Both texts on a failure: a random tree is long, and only they say what differed.
        #expect(file == expected, "\(comment?.description ?? "")\nthe file, as Foundation reads it:\n\(file)\nprefs.values, as Foundation writes it (lastError \(String(describing: prefs.lastError))):\n\(expected)")
        return String(decoding: written, as: UTF8.self)
    }

    /// One value of each kind, with its name.
    static func kinds() -> [(String, Any)] {
        [
            ("plain string", "hello" as Any),
            ("markup characters", "a<b & c>d \"q\" 'a' é 日本 🎉 \t tab\nnew line" as Any),
            ("control character", "bell\u{7}" as Any),
            ("empty string", "" as Any),
            ("true", true as Any), ("false", false as Any),
            ("Int64.min", Int64.min as Any), ("Int64.max", Int64.max as Any), ("UInt64.max", UInt64.max as Any),
            ("UInt8", UInt8(200) as Any), ("Int16", Int16(-5) as Any),
            ("Double", 0.1 as Any), ("whole Double", 2.0 as Any), ("-0.0", -0.0 as Any), ("1e300", 1e300 as Any),
            ("tiny", Double.leastNonzeroMagnitude as Any), ("NaN", Double.nan as Any), ("+infinity", Double.infinity as Any),
            ("-infinity", -Double.infinity as Any), ("Float", Float(0.1) as Any),
            ("date", Date(timeIntervalSince1970: 1_700_000_000.75) as Any),
            ("date before 1970, fractional", Date(timeIntervalSince1970: -1.5) as Any),
            ("first storable date", Date(timeIntervalSinceReferenceDate: -63_113_904_000) as Any),
            ("last storable date", Date(timeIntervalSinceReferenceDate: 252_423_993_599) as Any),
            ("leap day", Date(timeIntervalSince1970: 951_782_400) as Any),
            ("data", Data((0..<200).map { UInt8($0) }) as Any), ("empty data", Data() as Any),
            ("empty array", [Any]() as Any), ("empty dictionary", [String: Any]() as Any),
            ("nested", ["x": [1, "two", ["three": 3.0, "<k&>": [true]]], "y": [String: Any]()] as [String: Any] as Any),
        ]
    }

    @Test("each kind of value means what Foundation's writer would write", .linuxSuiteFiles, arguments: Array(0..<kinds().count))
    func kind(index: Int) throws {
        let (name, value) = Self.kinds()[index]
        try Self.check(["a": value, "b": 1], "\(name)")
    }

    @Test("dates of every day over 800 years are spelled as Foundation spells them", .linuxSuiteFiles)
    func dates() throws {
        var values: [String: Any] = [:]
        var generator = SeededGenerator(state: 7)
        var dates: [Any] = []
        for _ in 0..<2000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: -12_000_000_000 ... 13_000_000_000, using: &generator)))
        }
        values["a"] = dates
        try Self.check(values)
    }

    @Test("random value trees mean the same in both writers", .linuxSuiteFiles)
    func randomTrees() throws {
        var maker = TreeMaker(random: SeededGenerator(state: 20_261_124))
        var checked = 0
        while checked < 150 {
            guard let tree = maker.storableSet(keys: ["a", "b", "c", "d", "e"]) else { continue }
            try Self.check(tree, "tree \(checked)")
            checked += 1
        }
    }

    /// What a statically linked program needs (its Foundation may lack the conformance that
    /// bridges a Swift array met inside `Any`) is checked by CI, which runs the harness's process
    /// tests on such a build; here, that the conversion changes no value and no byte meaning.
    @Test("values for Foundation's writer: arrays and dictionaries made Foundation objects, meaning what the Swift values mean")
    func foundationObjects() throws {
        #expect(type(of: PlistValue.foundationObject([1, "a"] as [Any])) is NSArray.Type)
        #expect(type(of: PlistValue.foundationObject(["k": [1]] as [String: Any])) is NSDictionary.Type)
        // Linux's NSDictionary hands values back bridged to Swift, except through `allValues`.
        let nested = try #require(PlistValue.foundationObject(["k": [1], "d": ["x": 1]] as [String: Any]) as? NSDictionary)
        #expect(nested.allValues.allSatisfy { type(of: $0) is NSArray.Type || type(of: $0) is NSDictionary.Type })
        #expect(PlistValue.foundationObject("text") as? String == "text")
        var maker = TreeMaker(random: SeededGenerator(state: 20_261_126))
        var checked = 0
        var withContainers = 0
        while checked < 150 {
            guard let tree = maker.storableSet(keys: ["a", "b", "c", "d", "e"]), let normalized = PlistValue.normalized(tree) else { continue }
            #expect(plistEqual(PlistValue.foundationObject(normalized), normalized), "tree \(checked)")
            for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                let ours = try PropertyListSerialization.propertyList(from: PlistValue.foundationData(normalized, format: format), format: nil)
                let plain = try PropertyListSerialization.data(fromPropertyList: normalized, format: format, options: 0)
                #expect(plistEqual(ours, try PropertyListSerialization.propertyList(from: plain, format: nil)), "tree \(checked) \(format)")
            }
            if tree.values.contains(where: { $0 is [Any] || $0 is [String: Any] }) { withContainers += 1 }
            checked += 1
        }
        #expect(withContainers > 20, "the trees hold arrays and dictionaries")
    }

    @Test("the file keeps Foundation's layout: header, tabs, sorted keys", .linuxSuiteFiles)
    func layout() throws {
        let text = try Self.check(["b": "x", "a": 1])
        #expect(
            text == """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>R</key>
                \t<dict>
                \t\t<key>a</key>
                \t\t<integer>1</integer>
                \t\t<key>b</key>
                \t\t<string>x</string>
                \t</dict>
                </dict>
                </plist>

                """)
    }
}

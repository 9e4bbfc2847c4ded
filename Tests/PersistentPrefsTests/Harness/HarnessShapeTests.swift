import Foundation
import Testing

@testable import PersistentPrefs

/// `Codable` values through the harness: the schema records the shape a program reads back, the
/// harness refuses a value the program could not read (naming the shape), and says so where the
/// schema cannot tell.
@Suite("Harness: Codable values and their shapes", .linuxSuiteFiles, waitLimit)
struct HarnessShapeTests {
    struct Window: Codable, Equatable { var w = 800.0, h = 600.0 }
    struct Note: Codable, Equatable { var text = "hi", tag: String? }
    struct Tags: Codable, Equatable { var names: [String] = [] }
    struct Nested: Codable, Equatable { var window = Window(), count = 2, flags = [true, false] }
    struct Lenient: Codable, Equatable {
        var size = 1
        init() {}
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            size = (try? container.decode(Int.self, forKey: .size)) ?? 1
        }
    }
    enum Theme: String, Codable { case light, dark }
    struct Themed: Codable, Equatable { var theme = Theme.light }

    final class ShapePrefs: PersistentPrefs {
        @Pref("Window") var window = Window()
        @Pref("Note") var note = Note()
        @Pref("Tags") var tags = Tags()
        @Pref("Nested") var nested = Nested()
        @Pref("Lenient") var lenient = Lenient()
        @Pref("Themed") var themed = Themed()
        @Pref("Maybe") var maybe: Window?
        @Pref("Windows") var windows = [Window()]
    }

    @Test("the schema records each Codable default's shape, and whether the type reads back exactly that")
    func recorded() throws {
        let schema = ShapePrefs(key: "S", store: InMemoryStore()).schema
        let window = try #require(schema["Window"])
        #expect(window.shape == .dictionary(["w": .kind("real"), "h": .kind("real")]) && window.isShapeChecked == true)
        #expect(window.shape?.description == "{h: real, w: real}")
        let nested = try #require(schema["Nested"])
        #expect(nested.isShapeChecked == true && nested.shape?.description == "{count: integer, flags: [boolean], window: {h: real, w: real}}")
        #expect(schema["Windows"]?.isShapeChecked == true && schema["Windows"]?.shape?.description == "[{h: real, w: real}]")
        // Where the schema cannot tell: a member that is nil, an empty array, a decoder of its own, an enum.
        for name in ["Note", "Tags", "Lenient", "Themed"] {
            #expect(schema[name]?.isShapeChecked == false, "\(name)")
        }
        #expect(schema["Maybe"]?.isShapeChecked == false && schema["Maybe"]?.shape == nil, "an optional without a default has no shape to show")
        for name in ["Window", "Note"] { #expect(schema[name]?.kind == "dictionary") }
        // Not Codable: no shape fields at all.
        #expect(TestPrefsWithInt.schemaKey.isShapeChecked == nil && TestPrefsWithInt.schemaKey.shape == nil)
        // The file round-trips them, and older readers (which ignore unknown fields) still read it.
        let again = try PrefsSchema(jsonData: schema.jsonData)
        #expect(again["Nested"]?.shape == nested.shape && again["Nested"]?.isShapeChecked == true && again["Note"]?.isShapeChecked == false)
        let object = try #require(try JSONSerialization.jsonObject(with: schema.jsonData) as? [String: Any])
        #expect(object["format"] as? Int == 1, "new fields, not a new format")
        let keys = try #require(object["keys"] as? [String: Any])
        let windowObject = try #require(keys["Window"] as? [String: Any])
        #expect(windowObject["kind"] as? String == "dictionary" && windowObject["shapeChecked"] as? Bool == true)
        #expect((windowObject["shape"] as? [String: String]) == ["w": "real", "h": "real"])
    }

    @Test("a value of a checked shape is refused when its program could not read it, naming the shape; one it reads is written")
    func checked() throws {
        let key = try #require(ShapePrefs(key: "S", store: InMemoryStore()).schema["Window"])
        let missing = try #require(key.problem(with: ["w": 1]))
        #expect(missing.contains("it lacks h") && missing.contains("the shape is {h: real, w: real}"), "\(missing)")
        #expect(key.problem(with: ["w": 1, "h": "tall"])?.contains("h is a string, not a real") == true)
        #expect(key.problem(with: ["w": 1, "h": 2, "d": 3])?.contains("it has d, which the type does not") == true)
        #expect(key.problem(with: ["w": 1, "h": 2.5]) == nil, "an integer reads back as a real")
        let nested = try #require(ShapePrefs(key: "S", store: InMemoryStore()).schema["Nested"])
        #expect(nested.problem(with: ["window": ["w": 1, "h": 1], "count": 1, "flags": [true, 3]])?.contains("flags 1 is an integer, not a boolean") == true)
        #expect(nested.problem(with: ["window": ["w": 1], "count": 1, "flags": []])?.contains("lacks window.h") == true)
    }

    @Test("from outside: set refuses what the program will not decode; an unchecked shape says so in list and get")
    func harnessProcess() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        #expect(try child.run("prefs-test-helper", ["shape-write", "S", "App"]).stdout == "ok\n")
        let harness = { (words: [String]) in try child.run("prefs-harness", ["--suite", "S", "--key", "App"] + words) }
        let refused = try harness(["set", "Window", #"{"w":1}"#])
        #expect(refused.status == 1 && refused.stderr.contains("it lacks h") && refused.stderr.contains("{h: real, w: real}"), "\(refused.stderr)")
        let kept = try harness(["set", "Window", #"{"w":640,"h":480}"#])
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(try child.run("prefs-test-helper", ["shape-read", "S", "App"]).stdout.hasPrefix("window=640.0x480.0 "))
        // Note has an optional member: its shape is not checked, and list and get say so.
        let list = try harness(["list"])
        let noteRow = try #require(list.stdout.split(separator: "\n").first { $0.contains("Note") })
        #expect(noteRow.contains("(shape not checked)") && !list.stdout.split(separator: "\n").contains { $0.contains("Window") && $0.contains("not checked") }, "\(list.stdout)")
        let get = try harness(["get", "Note"])
        #expect(get.status == 0 && get.stderr.contains("shape not checked"), "\(get.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(try harness(["list", "--json"]).stdout.utf8)) as? [[String: Any]])
        #expect(json.first { $0["key"] as? String == "Note" }?["shapeChecked"] as? Bool == false)
        #expect(json.first { $0["key"] as? String == "Window" }?["shapeChecked"] == nil)
        #expect(try child.run("prefs-test-helper", ["shape-read", "S", "App"]).stdout.hasSuffix("problems=0\n"))
    }
}

/// A set with one plain `Int` key, for the shape fields a non-`Codable` key leaves out.
private final class TestPrefsWithInt: PersistentPrefs {
    @Pref("N") var n = 1
    static var schemaKey: PrefsSchema.Key { TestPrefsWithInt(key: "N", store: InMemoryStore()).schema["N"]! }
}

import Foundation
import PersistentPrefs
import Testing

enum Theme: String, Codable, CaseIterable { case system, light, dark }

struct WindowFrame: Codable, Equatable {
    var x = 0.0, y = 0.0, width = 800.0, height = 600.0
    var title = "Main"
}

struct Options: OptionSet, Sendable {
    let rawValue: Int
    static let bold = Options(rawValue: 1)
    static let italic = Options(rawValue: 2)
}

/// The issue's example, as written.
final class EditorPrefs: PersistentPrefs {
    @Pref("Font Size") var fontSize: Double = 14
    @Pref("Theme") var theme: Theme = .system
    @Pref("Recent Files") var recent: [String] = []
    @Pref("Last Folder") var lastFolder: URL?
    @Pref("Window") var window: WindowFrame = .init()
}

/// One @Pref of every kind.
final class KindsPrefs: PersistentPrefs {
    @Pref("Int") var int = 1
    @Pref("Bool") var bool = false
    @Pref("Float") var float: Float = 1.5
    @Pref("Date") var date = Date(timeIntervalSince1970: 0)
    @Pref("Data") var data = Data()
    @Pref("Dictionary") var dictionary: [String: Int] = [:]
    @Pref("Options") var options: Options = []
    @Pref("Optional Int") var optionalInt: Int?
    @Pref("Themes") var themes: [Theme] = []
}

/// Explicit keys win over the declared ones.
final class ExplicitKeysPrefs: PersistentPrefs {
    override var keys: [String] { ["Font Size", "Other"] }
    @Pref("Font Size") var fontSize: Double = 14
    @Pref("Hidden") var hidden = 0
}

@Suite("@Pref: typed accessors")
struct PrefTests {
    @Test("defaults read without being written; writes are stored in their plist form")
    func defaultsAndStorage() throws {
        let store = InMemoryStore()
        let prefs = EditorPrefs(key: "E", store: store)
        #expect(prefs.fontSize == 14)
        #expect(prefs.theme == .system)
        #expect(prefs.recent == [])
        #expect(prefs.lastFolder == nil)
        #expect(prefs.window == WindowFrame())
        #expect(try store.load(root: "E") == nil)

        prefs.fontSize = 16
        prefs.theme = .dark
        prefs.recent = ["a.txt", "b.txt"]
        prefs.lastFolder = URL(string: "https://example.org/a?q=1")
        prefs.window = WindowFrame(x: 1, y: 2, width: 3, height: 4, title: "T")
        #expect(prefs.lastError == nil)

        let stored = try #require(try store.load(root: "E"))
        #expect(stored["Font Size"] as? Double == 16)
        #expect(stored["Theme"] as? String == "dark")
        #expect(stored["Recent Files"] as? [String] == ["a.txt", "b.txt"])
        #expect(stored["Last Folder"] as? String == "https://example.org/a?q=1")
        let window = try #require(stored["Window"] as? [String: Any])
        #expect(window["width"] as? Double == 3)
        #expect(window["title"] as? String == "T")

        let other = EditorPrefs(key: "E", store: store)
        #expect(other.fontSize == 16)
        #expect(other.theme == .dark)
        #expect(other.lastFolder == URL(string: "https://example.org/a?q=1"))
        #expect(other.window == WindowFrame(x: 1, y: 2, width: 3, height: 4, title: "T"))
    }

    @Test("nil removes an optional key; reset and resetAll return keys to their defaults")
    func resetting() throws {
        let store = InMemoryStore()
        let prefs = EditorPrefs(key: "E", store: store)
        prefs.lastFolder = URL(fileURLWithPath: "/tmp")
        prefs.lastFolder = nil
        #expect(try store.load(root: "E") == nil)
        prefs.fontSize = 20
        prefs.theme = .light
        prefs.reset("Font Size")
        #expect(prefs.fontSize == 14)
        #expect(prefs.theme == .light)
        prefs.resetAll()
        #expect(prefs.theme == .system)
        #expect(try store.roots().isEmpty)
    }

    @Test("keys come from the @Pref declarations unless the subclass overrides them")
    func derivedKeys() {
        let prefs = EditorPrefs(store: InMemoryStore())
        #expect(Set(prefs.keys) == ["Font Size", "Theme", "Recent Files", "Last Folder", "Window"])
        prefs.values = ["Nope": 1]
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Nope"]))

        let explicit = ExplicitKeysPrefs(store: InMemoryStore())
        #expect(explicit.keys == ["Font Size", "Other"])
        explicit.hidden = 5
        #expect(explicit.lastError == .incorrectKeys(invalidElements: ["Hidden"]))
        #expect(explicit.hidden == 0)
    }

    @Test("every kind of value round-trips through a store and a reload", arguments: [false, true])
    func kindsRoundTrip(applePath: Bool) throws {
        let suite = TestSuite(applePath: applePath)
        defer { suite.remove() }
        let prefs = KindsPrefs(key: "K", store: suite.store)
        prefs.int = 42
        prefs.bool = true
        prefs.float = 12.3
        prefs.date = Date(timeIntervalSince1970: 1_700_000_000)
        prefs.data = Data([1, 2])
        prefs.dictionary = ["a": 1]
        prefs.options = [.bold, .italic]
        prefs.optionalInt = 7
        prefs.themes = [.dark, .light]
        #expect(prefs.lastError == nil)
        prefs.flush()
        #expect(prefs.int == 42)
        #expect(prefs.bool == true)
        #expect(prefs.float == 12.3)
        #expect(prefs.date == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(prefs.data == Data([1, 2]))
        #expect(prefs.dictionary == ["a": 1])
        #expect(prefs.options == [.bold, .italic])
        #expect(prefs.optionalInt == 7)
        #expect(prefs.themes == [.dark, .light])
        #expect(suite.store.userDefaults.dictionary(forKey: "K")?["Options"] as? Int == 3)
    }

    @Test("a stored value of the wrong type reads as the default, is reported, and is kept")
    func typeMismatch() throws {
        let store = InMemoryStore()
        try store.save(["Font Size": "huge", "Theme": "purple", "Window": ["width": "wide"]], root: "E")
        let prefs = EditorPrefs(key: "E", store: store)
        #expect(prefs.fontSize == 14)
        #expect(prefs.lastError == .typeMismatch(key: "Font Size", expected: "Double", found: "a String (\"huge\")"))
        #expect(prefs.theme == .system)
        #expect(prefs.lastError?.description.contains("Theme") == true)
        #expect(prefs.window == WindowFrame())
        if case .typeMismatch(let key, _, _)? = prefs.lastError { #expect(key == "Window") } else { Issue.record("no mismatch for Window") }
        #expect(try store.load(root: "E")?["Font Size"] as? String == "huge")
        prefs.fontSize = 12
        #expect(prefs.lastError == nil)
        #expect(prefs.fontSize == 12)
    }
}

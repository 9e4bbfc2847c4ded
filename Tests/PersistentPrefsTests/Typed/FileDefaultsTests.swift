import Foundation
import PersistentPrefs
import Testing

/// A set whose defaults come from a plist file given at creation.
final class FileBackedPrefs: PersistentPrefs {
    @Pref("Volume") var volume = 5
    @Pref("Theme") var theme: Theme = .system
    @Pref("Name") var name = "declared"
    private let file: URL

    init(file: URL, key: String = "F", store: any PrefsStore) {
        self.file = file
        super.init(key: key, values: [:], store: store)
    }

    override var defaultsFileURL: URL? { file }
}

@Suite("Defaults from a file; export and import")
struct FileDefaultsTests {
    static func plist(_ dictionary: [String: Any], in directory: TemporaryDirectory, name: String = "defaults.plist") throws -> URL {
        let url = URL(fileURLWithPath: directory.path + "/" + name)
        try PropertyListSerialization.data(fromPropertyList: dictionary, format: .xml, options: 0).write(to: url)
        return url
    }

    @Test("stored value, then file default, then declared default")
    func precedence() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = try Self.plist(["Volume": 8, "Theme": "dark"], in: directory)
        let store = InMemoryStore()
        let prefs = FileBackedPrefs(file: file, store: store)
        #expect(prefs.lastError == nil)
        #expect(prefs.volume == 8)
        #expect(prefs.theme == .dark)
        #expect(prefs.name == "declared")
        #expect(try store.load(root: "F") == nil)  // file defaults are not written
        prefs.volume = 3
        #expect(prefs.volume == 3)
        prefs.reset("Volume")
        #expect(prefs.volume == 8)
        #expect(prefs.fileDefaults["Volume"] as? Int == 8)
    }

    @Test("a defaults file with unknown keys, bad values, or no file at all is reported")
    func refusedFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let unknown = try Self.plist(["Volume": 1, "Bogus": 2], in: directory, name: "unknown.plist")
        let prefs = FileBackedPrefs(file: unknown, store: InMemoryStore())
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Bogus"]))
        #expect(prefs.volume == 5)

        let missing = FileBackedPrefs(file: URL(fileURLWithPath: directory.path + "/none.plist"), store: InMemoryStore())
        if case .ioError(let path, _)? = missing.lastError { #expect(path.hasSuffix("none.plist")) } else {
            Issue.record("expected ioError, got \(String(describing: missing.lastError))")
        }
        let array = URL(fileURLWithPath: directory.path + "/array.plist")
        try PropertyListSerialization.data(fromPropertyList: [1, 2], format: .xml, options: 0).write(to: array)
        let notDictionary = FileBackedPrefs(file: array, store: InMemoryStore())
        if case .corruptStore(let path, _)? = notDictionary.lastError { #expect(path == array.path) } else {
            Issue.record("expected corruptStore, got \(String(describing: notDictionary.lastError))")
        }
    }

    @Test("export then import restores the set; import is checked and all-or-nothing")
    func exportImport() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = InMemoryStore()
        let prefs = EditorPrefs(key: "E", store: store)
        prefs.fontSize = 18
        prefs.theme = .light
        prefs.window = WindowFrame(x: 5, y: 5, width: 10, height: 10, title: "W")
        let exported = URL(fileURLWithPath: directory.path + "/out/editor.plist")
        try prefs.export(to: exported)
        let text = try String(contentsOf: exported, encoding: .utf8)
        #expect(text.contains("<key>Font Size</key>"))

        prefs.resetAll()
        #expect(prefs.fontSize == 14)
        try prefs.import(from: exported)
        #expect(prefs.fontSize == 18)
        #expect(prefs.theme == .light)
        #expect(prefs.window.title == "W")

        let bad = try Self.plist(["Font Size": 1, "Colour": "red", "Zoom": 2], in: directory, name: "bad.plist")
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["Colour", "Zoom"])) {
            try prefs.import(from: bad)
        }
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Colour", "Zoom"]))
        #expect(prefs.fontSize == 18)
        #expect(try store.load(root: "E")?["Font Size"] as? Double == 18)
    }
}

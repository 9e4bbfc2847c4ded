import Foundation
import PersistentPrefs
import Testing

/// A set with a vendor layer in ``vendorRoot``, for ``PersistentPrefs/valueSource(forKey:)``.
private final class SourcePrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
    @Pref("Name") var name = "code"
    @Pref("Mode") var mode = "quiet"
    @Pref("Muted") var muted = false
}

@Suite("Layers: where a value comes from", waitLimit)
struct ValueSourceTests {
    @Test("valueSource names the user, the vendor file (locked or not) or the declared default; a lock hides the user's value")
    func sources() throws {
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let layerName = "source-\(UUID().uuidString)"
        let store = PlistFileStore(directory: URL(fileURLWithPath: folder.path), layerName: layerName)
        let vendorFile = vendorRoot.appendingPathComponent(layerName).appendingPathComponent(try store.fileURL(forRoot: "Main").lastPathComponent)
        defer { try? FileManager.default.removeItem(at: vendorFile.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: vendorFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try store.save(["Name": "mine", "Muted": true], root: "Main")
        let vendor: [String: Any] = ["Volume": 3, "Muted": false, "PersistentPrefs.locked": ["Muted"]]
        try PropertyListSerialization.data(fromPropertyList: vendor, format: .xml, options: 0).write(to: vendorFile, options: .atomic)
        let prefs = SourcePrefs(key: "Main", store: store)
        let file = vendorFile.standardizedFileURL
        #expect(prefs.valueSource(forKey: "Name") == .user)
        #expect(prefs.valueSource(forKey: "Volume") == .vendor(file))
        #expect(prefs.valueSource(forKey: "Volume")?.file == file && prefs.valueSource(forKey: "Volume")?.name == "vendor")
        #expect(prefs.valueSource(forKey: "Muted") == .vendor(file), "a locked key's stored value does not count")
        #expect(prefs.isLocked("Muted") && !prefs.muted)
        #expect(prefs.valueSource(forKey: "Mode") == .declaredDefault)
        #expect(prefs.valueSource(forKey: "Nope") == nil)
        #expect(PersistentPrefs(key: "Main", store: store).valueSource(forKey: "Mode") == nil, "a plain set declares no defaults")
        #expect(PersistentPrefs.ValueSource.site(file).name == "site" && PersistentPrefs.ValueSource.user.file == nil)
    }

    @Test("an in-memory set has only the user's values and the declared defaults")
    func inMemory() {
        let prefs = SourcePrefs(key: "Main", store: InMemoryStore())
        prefs.volume = 7
        #expect(prefs.valueSource(forKey: "Volume") == .user)
        #expect(prefs.valueSource(forKey: "Name") == .declaredDefault)
    }

    @Test("value sources and store changes print readably")
    func printing() {
        let site = PersistentPrefs.ValueSource.site(URL(fileURLWithPath: "/etc/xdg/MyApp.plist"))
        #expect("\(site)" == "site /etc/xdg/MyApp.plist")
        #expect("\(PersistentPrefs.ValueSource.user)" == "user" && "\(PersistentPrefs.ValueSource.declaredDefault)" == "default")
        #expect("\(PersistentPrefs.ValueSource.fileDefault)" == "file default")
        #expect("\(PrefsChange.merge(["Volume": 1, "Theme": "dark"]))" == #"merge of "Theme", "Volume""#)
        #expect("\(PrefsChange.set(key: "Volume", value: nil))" == #"removal of "Volume""#)
        #expect("\(PrefsChange.replace([:]))" == "replacement by no keys")
        #expect("\(PrefsChange.transform { $0 })" == "transform of the whole set")
    }
}

import Foundation
@testable import PersistentPrefs
import Testing

/// A set declaring keys of several kinds, for the checks of untyped writes.
final class DeclaredPrefs: PersistentPrefs {
    enum Theme: String, CaseIterable { case system, light, dark }
    enum Shape: String { case round, square }  // not CaseIterable: no choices in the schema
    struct Frame: Codable, Equatable { var width = 800.0, height = 600.0 }

    @Pref("Theme") var theme = Theme.system
    @Pref("Shape") var shape = Shape.round
    @Pref("Volume", in: 0...11) var volume = 5
    @Pref("Gain", in: 0.5...1.5) var gain = 1.0
    @Pref("Name") var name = ""
    @Pref("Title", validate: { !$0.isEmpty }) var title = "x"
    @Pref("Frame") var frame = Frame()
    @Pref("Folder") var folder: URL?
    @Pref("Loose") var loose = 0

    override var keys: [String] { super.keys + ["Extra"] }
}

@Suite("One voice for refusals; untyped writes checked against @Pref; lastError after typed writes")
struct OneVoiceTests {
    // MARK: - One voice

    @Test("a refused value reads the same from a @Pref, an untyped write and the set's schema")
    func sameWords() throws {
        let prefs = DeclaredPrefs(key: "Words", store: InMemoryStore())
        let schema = prefs.schema
        for (key, value) in [("Volume", 12 as Any), ("Volume", -1), ("Gain", 2.5), ("Theme", "purple"), ("Volume", "loud")] {
            let reason = try #require(schema[key]?.problem(with: value), "\(key) \(value)")
            prefs[key] = value
            #expect(prefs.lastError == .invalidValue(key: key, reason: reason), "\(key) \(value)")
        }
        prefs.volume = 12
        #expect(prefs.lastError == .invalidValue(key: "Volume", reason: "12 is outside the range 0...11"))
        #expect(schema["Volume"]?.problem(with: 12) == "12 is outside the range 0...11")
        #expect(prefs.lastError?.description == "The value for \"Volume\" is not allowed: 12 is outside the range 0...11.")
        prefs.gain = 2.5
        #expect(prefs.lastError == .invalidValue(key: "Gain", reason: "2.5 is outside the range 0.5...1.5"))
        prefs["Theme"] = "purple"
        #expect(prefs.lastError?.description == "The value for \"Theme\" is not allowed: \"purple\" is not one of \"system\", \"light\", \"dark\".")
        prefs["Volume"] = "loud"
        #expect(prefs.lastError?.description == "The value for \"Volume\" is not allowed: \"loud\" is a string, not an integer.")
    }

    @Test("every description is one sentence that names its subject")
    func oneSentence() {
        let errors: [PersistentPrefs.PrefsError] = [
            .incorrectKeys(invalidElements: ["Colour"]), .incorrectKeys(invalidElements: ["A", "B"]),
            .valuesNotPlistCompatible(invalidElements: ["Theme"]), .noStoredPrefsForKey(key: "R"), .unknownError(error: nil),
            .userDefaultsUnavailable, .invalidStoredValue(key: "R"), .corruptStore(path: "/p", reason: "bad."),
            .ioError(path: "/p", reason: "denied."), .invalidSuiteName(name: "a/b", reason: "has a slash"),
            .typeMismatch(key: "Volume", expected: "Int", found: "a String (\"x\")"), .invalidValue(key: "Volume", reason: "12 is outside the range 0...11"),
            .migrationFailed(root: "R", step: 2, name: "rename", reason: "it threw"), .newerSchemaVersion(root: "R", stored: 3, supported: 2),
            .lockTimeout(path: "/p", holderPID: 7, waited: 5), .watchDegraded(path: "/p", reason: "no inotify"),
            .conflictingDeclarations(key: "K", types: ["Int", "String"]), .keyLocked(key: "Volume"), .transactionInProgress(root: "R"),
        ]
        for error in errors {
            let text = error.description
            #expect(text.hasSuffix("."), "\(text)")
            #expect(!text.dropLast().contains(". "), "more than one sentence: \(text)")
            #expect(error.errorDescription == text)
        }
        #expect(PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["Colour"]).description == "\"Colour\" is not a key of this preference set, so nothing was written.")
        #expect(PersistentPrefs.PrefsError.keyLocked(key: "Volume").description.contains("\"Volume\" is locked by the system administrator"))
    }

    // MARK: - Untyped writes checked against the declaration

    @Test("the untyped roads refuse what a @Pref cannot read back, and write nothing")
    func untypedRoads() throws {
        let store = InMemoryStore()
        let prefs = DeclaredPrefs(key: "Roads", store: store)
        let purple = PersistentPrefs.PrefsError.invalidValue(key: "Theme", reason: "\"purple\" is not one of \"system\", \"light\", \"dark\"")
        prefs["Theme"] = "purple"
        #expect(prefs.lastError == purple)
        prefs.values = ["Theme": "purple", "Name": "n"]
        #expect(prefs.lastError == purple)
        #expect(throws: purple) { try prefs.set("purple", forKey: "Theme") }
        #expect(throws: purple) { try prefs.setValues(["Theme": "purple"]) }
        #expect(throws: purple) { try prefs.addMissingValues(["Theme": "purple"]) }
        prefs.batch { $0.name = "batched"; $0["Theme"] = "purple" }
        #expect(prefs.lastError == purple)
        #expect(throws: purple) { try prefs.transaction { $0["Theme"] = "purple" } }
        #expect(throws: purple) { try prefs.update { $0["Theme"] = "purple" } }
        #expect(try store.load(root: "Roads") == nil, "nothing was written")

        // The declared type: another kind, a raw value of no case, a Codable shape, a validate: rule.
        for (key, value) in [("Name", 5 as Any), ("Volume", "loud"), ("Volume", 5.5), ("Shape", "oval"), ("Frame", ["width": "wide"]), ("Title", ""), ("Loose", "x")] {
            prefs[key] = value
            guard case .invalidValue(let refusedKey, let reason)? = prefs.lastError else {
                Issue.record("\(key) = \(value) was not refused: \(String(describing: prefs.lastError))")
                continue
            }
            #expect(refusedKey == key && !reason.isEmpty)
        }
        prefs["Title"] = ""
        #expect(prefs.lastError?.description.contains("was refused by the rule of \"Title\"") == true)
        prefs["Shape"] = "oval"
        #expect(prefs.lastError == .invalidValue(key: "Shape", reason: "\"oval\" cannot be read as Shape"))
        #expect(try store.load(root: "Roads") == nil, "nothing was written")

        // What the declarations read back is written, removal always is, and undeclared keys are free.
        prefs["Theme"] = "dark"
        prefs["Volume"] = 7
        prefs["Gain"] = 1  // an integer for a Double
        prefs["Frame"] = ["width": 1.0, "height": 2.0]
        prefs["Folder"] = "file:///tmp"
        prefs["Extra"] = ["anything": true]
        #expect(prefs.lastError == nil)
        #expect(prefs.theme == .dark && prefs.volume == 7 && prefs.gain == 1 && prefs.frame == .init(width: 1, height: 2))
        #expect(prefs.folder?.absoluteString == "file:///tmp")
        prefs["Theme"] = nil
        try prefs.update { $0["Volume"] = nil }
        #expect(prefs.lastError == nil && prefs.theme == .system && prefs.volume == 5)
    }

    // MARK: - lastError after typed writes

    @Test("a @Pref read leaves lastError alone; an untyped read clears it, as in RVS_PersistentPrefs")
    func typedReadsKeepLastError() {
        let prefs = DeclaredPrefs(key: "Keep", store: InMemoryStore())
        prefs.volume = 12
        let refusal = PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: "12 is outside the range 0...11")
        #expect(prefs.volume == 5)
        #expect(prefs.name == "" && prefs.theme == .system && prefs.frame == .init() && prefs.folder == nil && prefs.gain == 1)
        #expect(prefs.lastError == refusal, "the refusal survives typed reads")
        _ = prefs["Volume"]
        #expect(prefs.lastError == nil, "an untyped read clears it")
        prefs.volume = 12
        _ = prefs.value(forKey: "Volume", as: Int.self)
        #expect(prefs.lastError == nil)
        prefs.volume = 12
        _ = prefs.values
        #expect(prefs.lastError == nil)
        // A typed read still reports what it finds wrong.
        prefs.volume = 3
        #expect(prefs.lastError == nil)
    }

    @Test("a typed read still reports a stored value it cannot use")
    func typedReadsReport() throws {
        let store = InMemoryStore()
        try store.save(["Volume": 99, "Name": 4], root: "Stored")
        let prefs = DeclaredPrefs(key: "Stored", store: store)
        #expect(prefs.volume == 5)
        #expect(prefs.lastError == .invalidValue(key: "Volume", reason: "99 is outside the range 0...11"))
        #expect(prefs.name == "")
        guard case .typeMismatch(let key, _, _)? = prefs.lastError else {
            Issue.record("\(String(describing: prefs.lastError))")
            return
        }
        #expect(key == "Name")
    }

    @Test("the throwing typed set throws this write's refusal and writes nothing")
    func throwingSetter() throws {
        let store = InMemoryStore()
        let prefs = DeclaredPrefs(key: "Throwing", store: store)
        try prefs.set(\.volume, 7)
        #expect(prefs.volume == 7 && prefs.lastError == nil)
        let refusal = PersistentPrefs.PrefsError.invalidValue(key: "Volume", reason: "12 is outside the range 0...11")
        #expect(throws: refusal) { try prefs.set(\.volume, 12) }
        #expect(prefs.volume == 7 && prefs.lastError == refusal)
        #expect(try store.load(root: "Throwing")?["Volume"] as? Int == 7)
        #expect(throws: PersistentPrefs.PrefsError.self) { try prefs.set(\.title, "") }
        try prefs.set(\.theme, .dark)
        try prefs.set(\.folder, nil)
        #expect(prefs.theme == .dark && prefs.lastError == nil)
        // Inside a batch, a refusal is thrown and spoils the batch.
        prefs.batch { batch in
            batch.name = "batched"
            #expect(throws: refusal) { try batch.set(\.volume, 12) }
        }
        #expect(prefs.lastError == refusal && prefs.name == "")
    }

    @Test("the throwing typed set throws its own write's error, never another thread's lastError")
    func throwingSetterIsItsOwn() {
        nonisolated(unsafe) let prefs = DeclaredPrefs(key: "Own", store: InMemoryStore())
        let thrown = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            for value in 0..<300 {
                if lane == 0 {
                    prefs.volume = 12  // refused: sets lastError again and again
                } else {
                    do { try prefs.set(\.loose, value) } catch { thrown.withLock { $0 += 1 } }
                }
            }
        }
        #expect(thrown.withLock { $0 } == 0)
        #expect(prefs.loose == 299)
    }
}

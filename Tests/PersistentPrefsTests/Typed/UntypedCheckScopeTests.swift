import Foundation
@testable import PersistentPrefs
import Testing

/// A set at schema version 1 whose step renames "Colour" to "Theme" (an enum), for a value
/// carried over that the enum cannot read.
final class RenamedThemePrefs: PersistentPrefs {
    enum Theme: String, CaseIterable { case system, light, dark }
    @Pref("Theme") var theme = Theme.system
    @Pref("Name") var name = ""
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] { [.renameKey("Colour", to: "Theme")] }
}

/// Where the checks of untyped writes against `@Pref` stop: what a write does not change, what a
/// migration carries over, and what observers write while a typed `set` is delivered.
@Suite("Checks of untyped writes: only what a write changes")
struct UntypedCheckScopeTests {
    @Test("a whole-set write that hands back a stored value the declaration cannot read is not refused for it")
    func wholeSetWriteChecksOnlyChanges() throws {
        let store = InMemoryStore()
        try store.save(["Theme": "sepia", "Name": "x"], root: "Stale")
        let prefs = DeclaredPrefs(key: "Stale", store: store)
        var values = prefs.values
        values["Name"] = "changed"
        prefs.values = values
        #expect(prefs.lastError == nil)
        #expect(prefs.name == "changed")
        #expect(prefs.theme == .system)  // still unreadable: the default, and problems says why
        #expect(prefs.problems.contains { if case .typeMismatch(key: "Theme", _, _) = $0 { return true } else { return false } })
        // Changing it to another value it cannot read is still refused.
        values["Theme"] = "purple"
        prefs.values = values
        #expect(prefs.lastError.map { if case .invalidValue(key: "Theme", _) = $0 { return true } else { return false } } == true)
    }

    @Test("a migration carries a value its @Pref type cannot read: the set stays writable and the value reads as the default")
    func migrationCarriesUnreadableValue() throws {
        let store = InMemoryStore()
        try store.save(["Colour": "sepia", "Name": "old"], root: "Carried")
        let prefs = RenamedThemePrefs(key: "Carried", store: store)
        #expect(prefs.lastError == nil)
        #expect(prefs.theme == .system)
        prefs.name = "new"
        #expect(prefs.lastError == nil)
        let stored = try #require(try store.load(root: "Carried"))
        #expect(stored["Name"] as? String == "new")
        #expect(stored["Theme"] as? String == "sepia")
    }

    @Test("try set(\\.kp, v) throws its own write's error, not one an observer's write meets")
    func typedSetIgnoresObserversErrors() throws {
        let store = InMemoryStore()
        let a = DeclaredPrefs(key: "A", store: store)
        nonisolated(unsafe) let b = DeclaredPrefs(key: "B", store: store)  // used by the observer on this thread
        let observation = a.observeChanges { _ in b.volume = 99 }  // refused by B's range
        defer { observation.cancel() }
        try a.set(\.volume, 7)
        #expect(a.volume == 7)
        #expect(b.lastError.map { if case .invalidValue(key: "Volume", _) = $0 { return true } else { return false } } == true)
    }

    @Test("valueSource(forKey:) leaves lastError as it is")
    func valueSourceKeepsLastError() {
        let prefs = DeclaredPrefs(key: "Source", store: InMemoryStore())
        prefs.volume = 12
        let refusal = prefs.lastError
        #expect(refusal != nil)
        _ = prefs.valueSource(forKey: "Volume")
        #expect(prefs.lastError == refusal)
    }
}

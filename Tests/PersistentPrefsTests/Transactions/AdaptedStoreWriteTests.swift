import Foundation
import Testing

@testable import PersistentPrefs

/// A store of the app's own (not a `SetStorage`) that can hold a set it cannot read, as a store
/// whose root key another program filled with something else would: `load` then refuses with
/// `invalidStoredValue`, until a save replaces it. Counts what the library asks of it.
private final class BreakableStore: PrefsStore, @unchecked Sendable {  // `state` is only touched under `lock`
    private let inner = InMemoryStore()
    private let lock = NSLock()
    private var state = (unreadable: false, applies: 0, saves: 0)

    var identifier: String { inner.identifier }
    var unreadable: Bool {
        get { lock.withLock { state.unreadable } }
        set { lock.withLock { state.unreadable = newValue } }
    }
    /// Calls of `apply` and of `save` or `remove`.
    var calls: (applies: Int, saves: Int) { lock.withLock { (state.applies, state.saves) } }

    func load(root: String) throws -> [String: Any]? {
        if unreadable { throw PersistentPrefs.PrefsError.invalidStoredValue(key: root) }
        return try inner.load(root: root)
    }
    func save(_ values: [String: Any], root: String) throws {
        lock.withLock {
            state.saves += 1
            state.unreadable = false
        }
        try inner.save(values, root: root)
    }
    func remove(root: String) throws {
        lock.withLock {
            state.saves += 1
            state.unreadable = false
        }
        try inner.remove(root: root)
    }
    func apply(_ change: PrefsChange, root: String) throws -> [String: Any] {
        lock.withLock { state.applies += 1 }
        let current = change.buildsOnCurrent ? try load(root: root) ?? [:] : [:]
        let updated = try change.applied(to: current)
        if updated.isEmpty { try remove(root: root) } else { try save(updated, root: root) }
        return updated
    }
    func roots() throws -> [String] { try inner.roots() }

    /// Stores `values` behind the library's back, as another program would.
    func writeBehind(_ values: [String: Any], root: String) throws { try inner.save(values, root: root) }
}

@Suite("Writes to a store of the app's own, through the engine's plan")
struct AdaptedStoreWriteTests {
    @Test("a replacement repairs a set the store cannot read; any other change is refused, and nothing is stored")
    func replacementRepairs() throws {
        let store = BreakableStore()
        try store.writeBehind(["Position": 1], root: "Main")
        store.unreadable = true
        let prefs = DurableSliderPrefs(key: "Main", store: store)
        #expect(prefs.lastError == .invalidStoredValue(key: "Main"))
        prefs.position = 4
        #expect(prefs.lastError == .invalidStoredValue(key: "Main"), "a change that builds on the set is refused")
        #expect(store.calls.saves == 0)
        prefs.values = ["Position": 3]
        #expect(prefs.lastError == nil, "a replacement needs nothing of the set as stored")
        #expect(try store.load(root: "Main")?["Position"] as? Int == 3)
        #expect(prefs.position == 3)
    }

    @Test("a write the plan refuses asks the store for nothing but the set")
    func refusedWriteStoresNothing() throws {
        let store = BreakableStore()
        let prefs = DurableSliderPrefs(key: "Main", store: store)
        prefs.position = 1
        #expect(prefs.lastError == nil)
        try store.writeBehind(["Position": 1, PersistentPrefs.schemaVersionKey: 5], root: "Main")
        let before = store.calls
        prefs.position = 2
        #expect(prefs.lastError == .newerSchemaVersion(root: "Main", stored: 5, supported: 0))
        #expect(store.calls.applies == before.applies && store.calls.saves == before.saves, "neither apply nor save")
        #expect(prefs.position == 1, "the set is read again: a newer version wrote it")
    }

    @Test("staged changes the set as stored cannot take are dropped once, whatever refuses them")
    func stagedDroppedWhenUnloadable() throws {
        let store = BreakableStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        prefs.position = 1
        try prefs.synchronize()
        prefs.position = 2  // staged
        store.unreadable = true
        // The set is read again and cannot be: its state is dropped, so the staged write meets
        // the refusal when it loads the set, before the store is asked to write.
        #expect(throws: PersistentPrefs.PrefsError.invalidStoredValue(key: "Main")) { try prefs.reload() }
        #expect(throws: PersistentPrefs.PrefsError.invalidStoredValue(key: "Main")) { try prefs.synchronize() }
        let calls = store.calls
        try prefs.synchronize()  // dropped: nothing waits any more
        #expect(store.calls.applies == calls.applies && store.calls.saves == calls.saves)
    }
}

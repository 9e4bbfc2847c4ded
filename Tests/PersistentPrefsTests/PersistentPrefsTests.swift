import Foundation
import PersistentPrefs
import Testing

@Suite("PersistentPrefs: the base class")
struct PersistentPrefsTests {
    // MARK: - Keys and root keys

    @Test("the bare base class has no keys: every write is refused, nothing crashes")
    func baseClassRefusesWrites() throws {
        let store = InMemoryStore()
        let prefs = PersistentPrefs(key: "bare", store: store)
        #expect(prefs.keys.isEmpty)
        prefs.values = ["a": 1]
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["a"]))
        prefs["b"] = 2
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["b"]))
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["c"])) {
            try prefs.set(3, forKey: "c")
        }
        #expect(try store.roots().isEmpty)
    }

    @Test("the default root key is the subclass's simple type name")
    func defaultRootKey() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(values: ["Int": 1], store: store)
        #expect(prefs.key == "MixedPrefs")
        #expect(PersistentPrefs(store: store).key == "PersistentPrefs")
        #expect(try store.roots() == ["MixedPrefs"])
    }

    @Test("an overridden root key is honoured")
    func overriddenRootKey() throws {
        let store = InMemoryStore()
        let prefs = FixedKeyPrefs(values: ["A": 1], store: store)
        #expect(prefs.lastError == nil)
        #expect(try store.roots() == ["Fixed Root"])
    }

    @Test("assigning key switches the instance to another set")
    func assigningKeySwitchesSet() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "one", values: ["Int": 1], store: store)
        prefs.key = "two"
        #expect(prefs.values.isEmpty)
        prefs.int = 2
        #expect(MixedPrefs(key: "one", store: store).int == 1)
        #expect(MixedPrefs(key: "two", store: store).int == 2)
    }

    // MARK: - values

    @Test("unknown keys: refused, sorted, nothing changes in memory or in the store")
    func incorrectKeys() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        prefs.values = ["Int": 2, "Zed": 1, "Alpha": 2]
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Alpha", "Zed"]))
        #expect(prefs.int == 1)
        #expect(try store.load(root: "k")?["Int"] as? Int == 1)
        prefs.values["Illegal"] = "x"
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Illegal"]))
        #expect(prefs.values["Illegal"] == nil)
    }

    @Test("a successful write clears lastError and replaces the whole set")
    func successfulWrite() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1, "String": "s"], store: store)
        prefs.values = ["Bogus": 1]
        #expect(prefs.lastError != nil)
        prefs.values = ["Double": 2.5]
        #expect(prefs.lastError == nil)
        #expect(prefs.values.keys.sorted() == ["Double"])
        #expect(try store.load(root: "k")?.keys.sorted() == ["Double"])
    }

    @Test("assigning [:] removes the root key from the store")
    func emptyRemovesRoot() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        #expect(try store.roots() == ["k"])
        prefs.values = [:]
        #expect(prefs.lastError == nil)
        #expect(try store.roots().isEmpty)
        #expect(prefs.count == 0)
    }

    // MARK: - Subscript

    @Test("the subscript reads, writes, changes type and removes with nil")
    func subscriptBehaviour() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1, "String": "One"], store: store)
        prefs["Int"] = 10
        #expect(prefs["Int"] as? Int == 10)
        prefs["Int"] = "10"
        #expect(prefs["Int"] as? Int == nil)
        #expect(prefs["Int"] as? String == "10")
        #expect(prefs.int == 0)
        prefs["Int"] = nil
        #expect(prefs.lastError == nil)
        #expect(prefs["Int"] == nil)
        #expect(try store.load(root: "k")?.keys.sorted() == ["String"])
        prefs["String"] = nil
        #expect(try store.roots().isEmpty)
    }

    @Test("a subscript write to an unknown key is refused and changes nothing")
    func subscriptUnknownKey() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        prefs["Nope"] = 1
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Nope"]))
        prefs["Nope"] = nil
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Nope"]))
        #expect(try store.load(root: "k")?.count == 1)
    }

    // MARK: - lastError

    @Test("lastError stays until the next operation; a successful read clears it")
    func lastErrorLifetime() {
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: InMemoryStore())
        prefs.values = ["Bad": 1]
        #expect(prefs.lastError != nil)
        #expect(prefs.lastError != nil)
        _ = prefs.int
        #expect(prefs.lastError == nil)
        prefs["Bad"] = 1
        _ = prefs.count
        #expect(prefs.lastError == nil)
    }

    // MARK: - Initialisers

    @Test("init merges values over the stored set, new values win")
    func initMerges() {
        let store = InMemoryStore()
        _ = MixedPrefs(key: "k", values: ["Int": 1, "String": "One"], store: store)
        let prefs = MixedPrefs(key: "k", values: ["Int": 2, "Bool": true], store: store)
        #expect(prefs.lastError == nil)
        #expect(prefs["Int"] as? Int == 2)
        #expect(prefs["String"] as? String == "One")
        #expect(prefs["Bool"] as? Bool == true)
    }

    @Test("a refused merge in init leaves the stored set untouched and sets lastError")
    func initRefusedMerge() throws {
        let store = InMemoryStore()
        _ = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        let refusedValue = MixedPrefs(key: "k", values: ["Int": 2, "Other": NotStorableClass()], store: store)
        #expect(refusedValue.lastError == .valuesNotPlistCompatible(invalidElements: ["Other"]))
        let refusedKey = MixedPrefs(key: "k", values: ["Int": 3, "Nope": 1], store: store)
        #expect(refusedKey.lastError == .incorrectKeys(invalidElements: ["Nope"]))
        #expect(refusedKey.int == 1)
        #expect(refusedKey.lastError == nil)
        #expect(try store.load(root: "k")?["Int"] as? Int == 1)
    }

    // MARK: - Sharing

    @Test("instances with the same root key share writes at once; other roots are untouched")
    func instancesShare() {
        let store = InMemoryStore()
        let a = MixedPrefs(key: "shared", values: ["Int": 1], store: store)
        let b = MixedPrefs(key: "shared", store: store)
        let other = MixedPrefs(key: "other", values: ["Int": 100], store: store)
        b.int = 2
        #expect(a.int == 2)
        a["String"] = "from a"
        #expect(b["String"] as? String == "from a")
        _ = MixedPrefs(key: "shared", values: ["Int": 3], store: store)
        #expect(a.int == 3 && b.int == 3)
        #expect(other.int == 100)
        #expect(other["String"] == nil)
    }

    @Test("two stores that wrap the same suite share one set")
    func sameSuiteShares() {
        let suite = TestSuite()
        defer { suite.remove() }
        let a = MixedPrefs(key: "r", values: ["Int": 1], store: suite.store)
        let b = MixedPrefs(key: "r", store: UserDefaultsStore(suiteName: suite.name)!)
        let c = MixedPrefs(key: "r", store: UserDefaultsStore(userDefaults: suite.store.userDefaults))
        b.int = 2
        #expect(a.int == 2)
        #expect(c.int == 2)
    }

    // MARK: - flush, clear, deleteAll

    @Test("flush reloads from the store")
    func flushReloads() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        try store.save(["Int": NSNumber(value: 9)], root: "k")
        #expect(prefs.int == 1)  // served from memory
        prefs.flush()
        #expect(prefs.lastError == nil)
        #expect(prefs.int == 9)
        #expect(MixedPrefs(key: "k", store: store).int == 9)
    }

    @Test("clear and deleteAll empty the set and remove it from the store")
    func clearAndDeleteAll() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        let keep = MixedPrefs(key: "keep", values: ["Int": 1], store: store)
        prefs.clear()
        #expect(prefs.values.isEmpty)
        #expect(try store.roots() == ["keep"])
        prefs.int = 5
        prefs.deleteAll()
        #expect(prefs.lastError == nil)
        #expect(prefs.count == 0)
        #expect(try store.roots() == ["keep"])
        #expect(keep.int == 1)
    }

    // MARK: - Throwing API

    @Test("the throwing API throws what the non-throwing API records")
    func throwingAPI() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", store: store)
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["X"])) {
            try prefs.setValues(["X": 1])
        }
        #expect(throws: PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: ["Int"])) {
            try prefs.set(NSNull(), forKey: "Int")
        }
        try prefs.setValues(["Int": 4])
        try prefs.set("s", forKey: "String")
        #expect(prefs.values.count == 2)
        try prefs.set(nil, forKey: "String")
        #expect(try prefs.reload().count == 1)
    }

    @Test("addMissingValues fills only keys that hold nothing, with the usual checks")
    func addMissingValues() throws {
        let store = InMemoryStore()
        let prefs = MixedPrefs(key: "k", values: ["Int": 1], store: store)
        try prefs.addMissingValues(["Int": 99, "String": "default"])
        #expect(prefs.int == 1)
        #expect(prefs["String"] as? String == "default")
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["Nope"])) {
            try prefs.addMissingValues(["Nope": 1])
        }
        #expect(throws: PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: ["Bool"])) {
            try prefs.addMissingValues(["Bool": NSNull()])
        }
        #expect(try store.load(root: "k")?.count == 2)
    }

    // MARK: - Stored data that is not a set

    @Test("a root key holding a non-dictionary reads as empty, reports it, and is left alone")
    func invalidStoredValue() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        suite.store.userDefaults.set("not a dictionary", forKey: "r")
        _ = suite.store.userDefaults.synchronize()  // on Linux, unsynchronised writes never reach the file
        let prefs = MixedPrefs(key: "r", store: suite.store)
        #expect(prefs.lastError == .invalidStoredValue(key: "r"))
        #expect(prefs.values.isEmpty)
        prefs["Int"] = 1  // a one-key change builds on the set, which cannot be read
        #expect(prefs.lastError == .invalidStoredValue(key: "r"))
        #expect(suite.store.userDefaults.string(forKey: "r") == "not a dictionary")
        prefs.values = ["Int": 2]  // a whole-set write replaces it
        #expect(prefs.lastError == nil)
        #expect(prefs.int == 2)
    }

    // MARK: - Errors

    @Test("every error has a sentence naming what went wrong")
    func errorDescriptions() {
        let cases: [(PersistentPrefs.PrefsError, String)] = [
            (.incorrectKeys(invalidElements: ["A", "B"]), "\"A\", \"B\""),
            (.valuesNotPlistCompatible(invalidElements: ["C"]), "\"C\""),
            (.noStoredPrefsForKey(key: "root"), "\"root\""),
            (.unknownError(error: nil), "no details"),
            (.userDefaultsUnavailable, "UserDefaults"),
            (.invalidStoredValue(key: "r"), "\"r\""),
            (.corruptStore(path: "/p.plist", reason: "garbage"), "/p.plist"),
            (.ioError(path: "/q.plist", reason: "disk full"), "disk full"),
        ]
        for (error, fragment) in cases {
            #expect(error.description.contains(fragment))
            #expect(error.localizedDescription == error.description)
            #expect(error == error)
        }
        #expect(PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["A"]) != .incorrectKeys(invalidElements: ["B"]))
        #expect(PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["A"]) != .valuesNotPlistCompatible(invalidElements: ["A"]))
    }
}

@Suite("Sharing and its lifetime")
struct SharingLifetimeTests {
    @Test("while no instance of a set is alive, a new instance reads the store afresh")
    func reloadsWhenUnused() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        do {
            let prefs = MixedPrefs(key: "r", values: ["Int": 1], store: suite.store)
            #expect(prefs.int == 1)
        }
        // Changed behind the library's back, e.g. a test resetting its suite.
        suite.store.userDefaults.removeObject(forKey: "r")
        _ = suite.store.userDefaults.synchronize()
        #expect(MixedPrefs(key: "r", store: suite.store).values.isEmpty)
    }

    @Test("while an instance is alive, new instances share its set without reading the store")
    func sharesWhileAlive() throws {
        let store = InMemoryStore()
        let keeper = MixedPrefs(key: "r", values: ["Int": 1], store: store)
        try store.save(["Int": NSNumber(value: 2)], root: "r")
        #expect(MixedPrefs(key: "r", store: store).int == 1)
        keeper.flush()
        #expect(MixedPrefs(key: "r", store: store).int == 2)
    }
}

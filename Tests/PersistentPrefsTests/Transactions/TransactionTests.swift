import Foundation
import PersistentPrefs
import Testing

/// A set for the transaction tests: a counter, a list, and keys k0…k99.
final class LedgerPrefs: PersistentPrefs {
    static let wideKeys = (0..<100).map { "k\($0)" }
    override var keys: [String] { ["Count", "Items", "Name"] + Self.wideKeys + (0..<1000).map { "w\($0)" } }

    @Pref("Count") var counter = 0
    @Pref("Items") var items: [String] = []
    @Pref("Name") var name = "none"

    /// A computed property over two keys, for the typed update.
    var labelled: String {
        get { "\(name)#\(counter)" }
        set {
            let parts = newValue.split(separator: "#")
            name = String(parts[0])
            counter = Int(parts[1]) ?? 0
        }
    }
}

/// An `InMemoryStore` that counts the writes it is asked for, and can be made to fail them.
/// Each write reads and replaces a set under one lock, as a store's file lock does.
final class CountingStore: PrefsStore, @unchecked Sendable {  // `counts` and `failing` are only touched under `lock`
    private let inner = InMemoryStore()
    private let lock = NSLock()
    /// Held across each read-modify-write of a set.
    private let writing = NSLock()
    private var counts = (apply: 0, save: 0, remove: 0, attempts: 0)
    private var failing = false

    var identifier: String { inner.identifier }
    var applyCount: Int { lock.withLock { counts.apply } }
    /// How many times `apply` was called, stored or not.
    var applyAttempts: Int { lock.withLock { counts.attempts } }
    var writeCount: Int { lock.withLock { counts.apply + counts.save + counts.remove } }
    /// Whether writes fail with an I/O error (a full disk), storing nothing.
    var fails: Bool {
        get { lock.withLock { failing } }
        set { lock.withLock { failing = newValue } }
    }

    func load(root: String) throws -> [String: Any]? { try inner.load(root: root) }
    func save(_ values: [String: Any], root: String) throws {
        try checkFailing(root)
        lock.withLock { counts.save += 1 }
        try writing.withLock { try inner.save(values, root: root) }
    }
    func remove(root: String) throws {
        try checkFailing(root)
        lock.withLock { counts.remove += 1 }
        try writing.withLock { try inner.remove(root: root) }
    }
    func apply(_ change: PrefsChange, root: String) throws -> [String: Any] {
        lock.withLock { counts.attempts += 1 }
        try checkFailing(root)
        let updated = try writing.withLock {
            let updated = try change.applied(to: try inner.load(root: root) ?? [:])
            if updated.isEmpty { try inner.remove(root: root) } else { try inner.save(updated, root: root) }
            return updated
        }
        lock.withLock { counts.apply += 1 }  // counted once something was stored
        return updated
    }
    func roots() throws -> [String] { try inner.roots() }

    /// Writes one value behind the library's back, as another process would.
    func writeBehind(_ key: String, _ value: Any?, root: String) throws {
        try writing.withLock {
            var set = try inner.load(root: root) ?? [:]
            set[key] = value
            try inner.save(set, root: root)
        }
    }

    private func checkFailing(_ root: String) throws {
        if fails { throw PersistentPrefs.PrefsError.ioError(path: "/counting/\(root)", reason: "the disk is full") }
    }
}

/// A store of someone else's that implements only the four basic requirements, so it gets the
/// protocol's default `apply`.
final class BasicStore: PrefsStore, @unchecked Sendable {  // `sets` is only touched under `lock`
    private let lock = NSLock()
    private var sets: [String: [String: Any]] = [:]
    let identifier = "basic:\(UUID().uuidString)"
    func load(root: String) throws -> [String: Any]? { lock.withLock { sets[root] } }
    func save(_ values: [String: Any], root: String) throws { lock.withLock { sets[root] = values } }
    func remove(root: String) throws { _ = lock.withLock { sets.removeValue(forKey: root) } }
    func roots() throws -> [String] { lock.withLock { sets.keys.sorted() } }
}

struct SomeFailure: Error, Equatable {}

@Suite("Transactions: batch and update", waitLimit)
struct TransactionTests {
    // MARK: batch

    @Test("a batch of 1,000 sets is one store write, and reads inside it see its changes")
    func batchIsOneWrite() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Batch", store: store)
        let before = store.writeCount
        var seenInside: Int?
        prefs.batch { prefs in
            for n in 0..<1000 { prefs["w\(n)"] = n }
            prefs.counter = 7
            seenInside = prefs.counter
            #expect(prefs["w999"] as? Int == 999)
            #expect(prefs.values.count == 1001)
        }
        #expect(seenInside == 7)
        #expect(prefs.lastError == nil)
        #expect(store.writeCount - before == 1)
        #expect(store.applyCount == 1)
        let stored = try #require(try store.load(root: "Batch"))
        #expect(stored.count == 1001)
        #expect(stored["w500"] as? Int == 500)
    }

    @Test("other instances do not see a batch until it is written")
    func batchIsInvisibleUntilWritten() throws {
        let store = InMemoryStore()
        let prefs = LedgerPrefs(key: "Hidden", store: store)
        let other = LedgerPrefs(key: "Hidden", store: store)
        prefs.batch { prefs in
            prefs.counter = 3
            #expect(other.counter == 0)
        }
        #expect(other.counter == 3)
    }

    @Test("a batch whose body throws writes nothing, reports the error and rethrows it")
    func throwingBodyWritesNothing() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Throws", store: store)
        prefs.counter = 1
        let writes = store.writeCount
        #expect(throws: SomeFailure.self) {
            try prefs.batch { prefs in
                prefs.counter = 2
                prefs.name = "changed"
                throw SomeFailure()
            }
        }
        guard case .unknownError(let error)? = prefs.lastError else {
            Issue.record("lastError is \(String(describing: prefs.lastError))")
            return
        }
        #expect(error is SomeFailure)
        #expect(store.writeCount == writes)
        #expect(prefs.counter == 1)
        #expect(prefs.name == "none")
    }

    @Test("one refused value among 99 good ones: nothing written, the refused key named")
    func oneRefusedValue() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Refused", store: store)
        let writes = store.writeCount
        prefs.batch { prefs in
            for n in 0..<100 where n != 57 { prefs["k\(n)"] = n }
            prefs["k57"] = NotStorableStruct()
        }
        #expect(store.writeCount == writes)
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["k57"]))
        #expect(prefs.values.isEmpty)
        #expect(try store.load(root: "Refused") == nil)
    }

    @Test("refused keys of one kind are all named; a refused @Pref value spoils the batch too")
    func refusalsAreMerged() throws {
        let prefs = LedgerPrefs(key: "Merged", store: InMemoryStore())
        prefs.batch { prefs in
            prefs["k1"] = 1
            prefs["nope"] = 1
            prefs["also nope"] = 2
        }
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["also nope", "nope"]))
        #expect(prefs.values.isEmpty)
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["bad"])) {
            try prefs.transaction { prefs in
                prefs.counter = 5
                try? prefs.set(1, forKey: "bad")  // the throwing setter refuses and spoils the batch
            }
        }
        #expect(prefs.counter == 0)
    }

    @Test("a nested batch joins the outer one; a throwing inner batch drops only its own changes")
    func nestedBatches() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Nested", store: store)
        let writes = store.writeCount
        prefs.batch { prefs in
            prefs.counter = 1
            prefs.batch { inner in inner.name = "inner" }
            #expect(store.writeCount == writes)  // the inner batch did not write
            do {
                try prefs.batch { inner in
                    inner.items = ["dropped"]
                    throw SomeFailure()
                }
            } catch {}
            #expect(prefs.items == [])
        }
        #expect(store.writeCount == writes + 1)
        #expect(prefs.lastError == nil)
        #expect(prefs.counter == 1)
        #expect(prefs.name == "inner")
        #expect(prefs.items == [])
    }

    @Test("update inside a batch is refused with transactionInProgress; the batch still writes")
    func updateInsideBatch() throws {
        let prefs = LedgerPrefs(key: "UpdateInBatch", store: InMemoryStore())
        var thrown: (any Error)?
        prefs.batch { prefs in
            prefs.counter = 2
            do { try prefs.update { $0["Count"] = 9 } } catch { thrown = error }
        }
        #expect(thrown as? PersistentPrefs.PrefsError == .transactionInProgress(root: "UpdateInBatch"))
        #expect(prefs.counter == 2)
    }

    @Test("values =, reset, clear and addMissingValues inside a batch, in order")
    func wholeSetChangesInBatch() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Whole", store: store)
        prefs.values = ["Count": 1, "Name": "old", "k1": 1]
        prefs.batch { prefs in
            prefs.values = ["Count": 5, "k2": 2]
            prefs.reset("k2")
            try? prefs.addMissingValues(["Name": "filled", "Count": 99])
            #expect(prefs.name == "filled")
        }
        #expect(prefs.lastError == nil)
        #expect(prefs.values.count == 2)
        #expect(prefs.counter == 5)
        #expect(prefs.name == "filled")
        prefs.batch { $0.clear() }
        #expect(try store.load(root: "Whole") == nil)
    }

    @Test("an empty batch writes nothing")
    func emptyBatch() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Empty", store: store)
        let writes = store.writeCount
        prefs.batch { _ in }
        #expect(store.writeCount == writes)
        #expect(prefs.lastError == nil)
    }

    @Test("observers get one event naming every key the batch changed")
    func oneEventPerBatch() throws {
        let prefs = LedgerPrefs(key: "Observed", store: InMemoryStore())
        prefs.name = "same"
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }
        prefs.batch { prefs in
            prefs.counter = 1
            prefs.items = ["a"]
            prefs.name = "same"  // unchanged: not named
            for n in 0..<10 { prefs["k\(n)"] = n }
        }
        prefs.name = "after"  // the marker: heard after every event the batch causes
        #expect(log.wait { $0.keys.last == ["Name"] })
        #expect(log.keys == [Set(["Count", "Items"] + (0..<10).map { "k\($0)" }), ["Name"]])
    }

    // MARK: update

    @Test("update vets what it changes: an unknown key or an unstorable value writes nothing")
    func updateVetting() throws {
        let store = InMemoryStore()
        try store.save(["Old Key": "kept", "Count": 1], root: "Vet")
        let prefs = LedgerPrefs(key: "Vet", store: store)
        #expect(throws: PersistentPrefs.PrefsError.incorrectKeys(invalidElements: ["Stray"])) {
            try prefs.update { $0["Stray"] = 1; $0["Count"] = 2 }
        }
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Stray"]))
        #expect(throws: PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: ["Name"])) {
            try prefs.update { $0["Name"] = NotStorableClass() }
        }
        #expect(prefs.counter == 1)
        // A stored key the whitelist no longer lists passes when the body leaves it alone.
        try prefs.update { $0["Count"] = ($0["Count"] as? Int ?? 0) + 1 }
        #expect(prefs.lastError == nil)
        #expect(try store.load(root: "Vet")?["Old Key"] as? String == "kept")
        #expect(prefs.counter == 2)
    }

    @Test("update hands back the body's own error unchanged, and writes nothing")
    func updateBodyError() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "BodyError", store: store)
        let writes = store.writeCount
        #expect(throws: SomeFailure.self) {
            try prefs.update { set in
                set["Count"] = 5
                throw SomeFailure()
            }
        }
        #expect(store.writeCount == writes)
        #expect(prefs.counter == 0)
    }

    @Test("typed update: \\.count += 1, a list append, and a computed property")
    func typedUpdate() throws {
        let store = CountingStore()
        let prefs = LedgerPrefs(key: "Typed", store: store)
        try prefs.update(\.counter) { $0 += 1 }
        try prefs.update(\.counter) { $0 += 1 }
        try prefs.update(\.items) { $0.append("x") }
        #expect(prefs.counter == 2)
        #expect(prefs.items == ["x"])
        #expect(store.applyCount == 3)
        #expect(throws: PersistentPrefs.PrefsError.transactionInProgress(root: "Typed")) {
            try prefs.update(\.counter) { _ in try prefs.update(\.counter) { $0 += 1 } }
        }
        #expect(prefs.counter == 2)
        try prefs.update(\.labelled) { $0 = "renamed#" + String(Int($0.split(separator: "#")[1])! * 10) }
        #expect(prefs.name == "renamed")
        #expect(prefs.counter == 20)
        #expect(store.applyCount == 4)
    }

    @Test("inside an update body, writing the set through another instance is refused, reading works")
    func reentrantWrite() throws {
        let store = InMemoryStore()
        let prefs = LedgerPrefs(key: "Reentrant", store: store)
        let other = LedgerPrefs(key: "Reentrant", store: store)
        other.counter = 4
        var readInside = -1
        var inner: (any Error)?
        try prefs.update { set in
            readInside = other.counter
            do { try other.set(1, forKey: "Count") } catch { inner = error }
            set["Name"] = "outer"
        }
        #expect(readInside == 4)
        #expect(inner as? PersistentPrefs.PrefsError == .transactionInProgress(root: "Reentrant"))
        #expect(other.name == "outer")
        #expect(other.counter == 4)
    }

    @Test(
        "8 threads × 100 updates of one counter in one process: exactly 800",
        arguments: ["memory", "basic", "suite", "apple", "files"])
    func threadsIncrement(storeKind: String) throws {
        let suite = TestSuite("threads\(storeKind)", applePath: storeKind == "apple")
        let directory = TemporaryDirectory()
        defer {
            suite.remove()
            directory.remove()
        }
        let store: any PrefsStore
        switch storeKind {
        case "memory": store = InMemoryStore()
        case "basic": store = BasicStore()
        case "files": store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        default: store = suite.store
        }
        let failures = Flag()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let prefs = LedgerPrefs(key: "Counter", store: store)
            for _ in 0..<100 {
                do { try prefs.update(\.counter) { $0 += 1 } } catch { failures.set() }
            }
        }
        #expect(!failures.isSet)
        let prefs = LedgerPrefs(key: "Counter", store: store)
        prefs.flush()
        #expect(prefs.counter == 800)
    }

    @Test("a custom store with only load/save/remove gets a working default: batch and update")
    func defaultApply() throws {
        let store = BasicStore()
        let prefs = LedgerPrefs(key: "Basic", store: store)
        prefs.batch { prefs in
            prefs.counter = 3
            prefs.items = ["a", "b"]
        }
        try prefs.update(\.counter) { $0 *= 2 }
        #expect(prefs.lastError == nil)
        let stored = try #require(try store.load(root: "Basic"))
        #expect(stored["Count"] as? Int == 6)
        #expect(stored["Items"] as? [String] == ["a", "b"])
    }
}

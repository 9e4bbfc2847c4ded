import Foundation
@testable import PersistentPrefs
import Testing

/// A set whose setters coalesce: its changes reach the store within `interval`.
class SliderPrefs: PersistentPrefs {
    override class var coalescingInterval: TimeInterval? { 0.1 }
    @Pref("Position") var position = 0
    @Pref("Label") var label = ""
    @Pref("Count") var counter = 0
    @Pref("Level", in: 0...10) var level = 5
}

/// The same keys, waiting a minute: only `synchronize()`, another write, the last instance going
/// away or the process exiting writes its changes in a test's time.
final class SlowSliderPrefs: SliderPrefs {
    override class var coalescingInterval: TimeInterval? { 60 }
}

/// The same keys, durable when each setter returns.
final class DurableSliderPrefs: SliderPrefs {
    override class var coalescingInterval: TimeInterval? { nil }
}

/// At most one write per interval of a coalescing set, plus the one after the last change, in
/// `elapsed` seconds of changes.
private func writesBound(_ elapsed: TimeInterval) -> Int {
    Int((elapsed / SliderPrefs.coalescingInterval!).rounded(.up)) + 1
}

/// Stores position 1; then a newer version of the app stores the set at schema version 5 behind
/// the library's back (the in-memory store tells no one), and position 2 is staged. Returns the
/// refusal the staged change's write meets.
private func stageBeforeNewerVersion(_ prefs: SliderPrefs, _ store: CountingStore) throws -> PersistentPrefs.PrefsError {
    prefs.position = 1
    try prefs.synchronize()
    try store.writeBehind(PersistentPrefs.schemaVersionKey, 5, root: "Main")
    prefs.position = 2
    #expect(prefs.lastError == nil && prefs.position == 2)
    return .newerSchemaVersion(root: "Main", stored: 5, supported: 0)
}

@Suite("Coalesced writes: setters in memory at once, on disk within the interval", waitLimit)
struct CoalescedWriteTests {
    @Test("a setter changes every instance and observer at once; the store only at synchronize()")
    func inMemoryAtOnce() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        let other = SlowSliderPrefs(key: "Main", store: store)
        let heard = Locked<[Set<String>]>([])
        let observation = other.observeChanges { event in heard.withLock { $0.append(event.keys) } }
        defer { observation.cancel() }
        let before = store.writeCount
        prefs.position = 7
        #expect(prefs.lastError == nil)
        #expect(other.position == 7 && prefs.values["Position"] as? Int == 7)
        #expect(heard.withLock { $0 } == [["Position"]], "the observer hears of it when the setter returns")
        #expect(store.writeCount == before, "nothing is written before the interval")
        #expect(try store.load(root: "Main")?["Position"] == nil)
        try prefs.synchronize()
        #expect(store.writeCount == before + 1)
        #expect(try store.load(root: "Main")?["Position"] as? Int == 7)
        try prefs.synchronize()
        #expect(store.writeCount == before + 1, "synchronize() with nothing waiting writes nothing")
    }

    @Test("1,000 setter calls, then synchronize(): one store write holding the last value of each key")
    func burstIsOneWrite() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        let before = store.writeCount
        for n in 1...1000 {
            prefs.position = n
            if n % 10 == 0 { prefs.label = "at \(n)" }
        }
        #expect(store.writeCount == before)
        try prefs.synchronize()
        #expect(store.writeCount == before + 1)
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Position"] as? Int == 1000 && stored["Label"] as? String == "at 1000")
    }

    @Test("without synchronize(), the changes of an interval reach the store in one write, soon after")
    func backgroundWrite() throws {
        let store = CountingStore()
        let prefs = SliderPrefs(key: "Main", store: store)
        let before = store.writeCount
        let started = Date()
        for n in 1...300 { prefs.position = n }
        #expect(eventually { (try? store.load(root: "Main")?["Position"] as? Int) == 300 })
        let elapsed = Date().timeIntervalSince(started)
        #expect(store.writeCount - before <= writesBound(elapsed), "\(store.writeCount - before) writes in \(elapsed) s")
        #expect(prefs.problems.isEmpty)
    }

    @Test("changes spread over half a second make at most one write per interval, plus one")
    func spreadBurst() throws {
        let store = CountingStore()
        let prefs = SliderPrefs(key: "Main", store: store)
        let before = store.writeCount
        let started = Date()
        for n in 1...100 {
            prefs.position = n
            usleep(5_000)
        }
        try prefs.synchronize()
        let elapsed = Date().timeIntervalSince(started)
        let writes = store.writeCount - before
        #expect(writes >= 2, "a write within each interval, not only at the end (\(writes) in \(elapsed) s)")
        #expect(writes <= writesBound(elapsed), "\(writes) writes in \(elapsed) s")
        #expect(try store.load(root: "Main")?["Position"] as? Int == 100)
    }

    @Test("a refused value is refused when it is set, and nothing is staged")
    func refusedAtOnce() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        prefs.level = 12
        #expect(prefs.lastError == .invalidValue(key: "Level", reason: "12 is outside the range 0...10"))
        prefs["Nope"] = 1
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Nope"]))
        #expect(throws: PersistentPrefs.PrefsError.self) { try prefs.set(Date.distantFuture as Any, forKey: "Level") }
        #expect(prefs.level == 5 && prefs.values.isEmpty)
        let before = store.writeCount
        try prefs.synchronize()
        #expect(store.writeCount == before, "nothing was staged")
    }

    @Test("a key the system layers lock is refused when it is set; a lock set later wins at the write")
    func lockedKeys() throws {
        let fixture = try LayerFixture()
        defer { fixture.remove() }
        try fixture.writeVendor(["Volume": 7, "PersistentPrefs.locked": ["Volume"]])
        final class Layered: PersistentPrefs {
            override class var coalescingInterval: TimeInterval? { 60 }
            @Pref("Volume") var volume = 5
            @Pref("Name") var name = "code"
        }
        let prefs = Layered(key: fixture.root, store: fixture.store)
        prefs.volume = 3
        #expect(prefs.lastError == .keyLocked(key: "Volume"))
        #expect(prefs.volume == 7)
        prefs.name = "mine"
        #expect(prefs.lastError == nil && prefs.name == "mine")
        // The administrator locks Name before the staged change is written.
        try fixture.writeVendor(["Volume": 7, "Name": "site", "PersistentPrefs.locked": ["Volume", "Name"]])
        try prefs.synchronize()
        #expect(prefs.name == "site")
        #expect(try fixture.store.load(root: fixture.root)?["Name"] == nil, "the locked key is not written")
        prefs.reset("Name")
        try prefs.synchronize()  // nothing left waiting to write into the removed folders
        #expect(prefs.problems.isEmpty, "\(prefs.problems)")
    }

    @Test("a batch, a transaction and an update write the staged changes first, in the same write")
    func durableRoadsWriteStagedFirst() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        var before = store.writeCount
        prefs.position = 1
        prefs.batch { $0.label = "batch" }
        #expect(prefs.lastError == nil)
        #expect(store.writeCount == before + 1)
        #expect(try store.load(root: "Main")?["Position"] as? Int == 1)
        before = store.writeCount
        prefs.position = 2
        try prefs.update(\.counter) { $0 += 1 }
        #expect(store.writeCount == before + 1)
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Position"] as? Int == 2 && stored["Count"] as? Int == 1 && stored["Label"] as? String == "batch")
        before = store.writeCount
        prefs.position = 3
        #expect(throws: SomeFailure.self) {
            try prefs.transaction { prefs in
                prefs.label = "never"
                throw SomeFailure()
            }
        }
        #expect(prefs.position == 3 && prefs.label == "batch", "a failed transaction leaves the staged change staged")
        try prefs.synchronize()
        #expect(try store.load(root: "Main")?["Position"] as? Int == 3)
        #expect(store.writeCount == before + 1)
    }

    @Test("another writer's change of another key is kept; a reload never steps a staged value back")
    func mergedPerKey() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        prefs.counter = 1
        try prefs.synchronize()
        prefs.position = 42
        try store.writeBehind("Count", 9, root: "Main")
        try store.writeBehind("Position", 1, root: "Main")
        try prefs.reload()
        #expect(prefs.counter == 9, "the other writer's key is read")
        #expect(prefs.position == 42, "the staged value stays what readers see")
        try prefs.synchronize()
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Count"] as? Int == 9 && stored["Position"] as? Int == 42)
    }

    @Test("a failed background write keeps the values, is listed in problems, thrown by synchronize(), retried")
    func failedWriteIsRetried() throws {
        let store = CountingStore()
        let prefs = SliderPrefs(key: "Main", store: store)
        store.fails = true
        prefs.position = 5
        #expect(prefs.lastError == nil, "the setter does not wait for the write")
        #expect(eventually { prefs.problems.contains { if case .ioError = $0 { return true } else { return false } } })
        #expect(prefs.position == 5, "the value is kept in memory")
        #expect(throws: PersistentPrefs.PrefsError.ioError(path: "/counting/Main", reason: "the disk is full")) { try prefs.synchronize() }
        store.fails = false
        #expect(eventually { (try? store.load(root: "Main")?["Position"] as? Int) == 5 }, "retried an interval later")
        #expect(eventually { prefs.problems.isEmpty })
        try prefs.synchronize()
    }

    @Test("after its last instance goes away the set stays until its changes are written, then is dropped")
    func outlivesLastInstance() throws {
        let store = CountingStore()
        // In a function of its own, so both instances are gone when it returns.
        func stage() {
            let prefs = SliderPrefs(key: "Main", store: store)
            let second = SliderPrefs(key: "Main", store: store)
            prefs.position = 11
            withExtendedLifetime(second) {}
        }
        stage()
        #expect(eventually { (try? store.load(root: "Main")?["Position"] as? Int) == 11 })
        #expect(eventually { SharedSet.existing(storeIdentifier: store.identifier, root: "Main") == nil }, "the written set is let go")
        #expect(SliderPrefs(key: "Main", store: store).position == 11)
    }

    @Test("an instance made for each change coalesces too")
    func instancePerChange() throws {
        let store = CountingStore()
        let before = store.writeCount
        let started = Date()
        for n in 1...200 { SliderPrefs(key: "Main", store: store).position = n }
        let elapsed = Date().timeIntervalSince(started)
        #expect(eventually { (try? store.load(root: "Main")?["Position"] as? Int) == 200 })
        #expect(store.writeCount - before <= writesBound(elapsed), "\(store.writeCount - before) writes in \(elapsed) s")
    }

    @Test("a write the store refuses for good drops the waiting changes and reads the set again")
    func refusedWriteIsDropped() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        let newer = try stageBeforeNewerVersion(prefs, store)
        #expect(throws: newer) { try prefs.synchronize() }
        #expect(prefs.position == 1, "the refused change is dropped; the set reads as stored")
        #expect(prefs.problems.contains(newer))
        try prefs.synchronize()  // reported once, by the call that met it
        prefs.position = 3
        #expect(prefs.lastError == newer, "refused when set, now the set is known newer")
        #expect(prefs.position == 1)
    }

    @Test("a background write the store refuses is not retried, stays in problems, and synchronize() reports it once")
    func refusedBackgroundWrite() throws {
        let store = CountingStore()
        let prefs = SliderPrefs(key: "Main", store: store)
        let newer = try stageBeforeNewerVersion(prefs, store)
        #expect(eventually { prefs.position == 1 }, "the background write met the refusal and dropped the change")
        let attempts = store.applyAttempts
        usleep(400_000)
        #expect(store.applyAttempts == attempts, "not retried")
        #expect(prefs.problems.filter { $0 == newer }.count == 1, "listed once, though both the write and the schema say it")
        #expect(throws: newer) { try prefs.synchronize() }
        try prefs.synchronize()
    }

    @Test("while a migration waits (it failed when the set was opened), a setter is a durable write that reports it")
    func pendingMigrationIsDurable() throws {
        final class Versioned: PersistentPrefs {
            override class var coalescingInterval: TimeInterval? { 60 }
            override class var schemaVersion: Int { 1 }
            override class var migrations: [PrefsMigration] { [PrefsMigration("refuses") { _ in throw SomeFailure() }] }
            @Pref("Position") var position = 0
        }
        let store = CountingStore()
        try store.writeBehind("Position", 1, root: "Main")
        let prefs = Versioned(key: "Main", store: store)
        prefs.lastError = nil
        prefs.position = 2
        guard case .migrationFailed? = prefs.lastError else {
            Issue.record("expected the migration's refusal when set, got \(String(describing: prefs.lastError))")
            return
        }
        #expect(prefs.position == 1)
        #expect(try store.load(root: "Main")?["Position"] as? Int == 1)
    }

    @Test("a versioned class's first setter on a set not yet stamped is durable (it stamps the version); the next is staged")
    func unstampedSetIsStampedFirst() throws {
        final class Versioned: PersistentPrefs {
            override class var coalescingInterval: TimeInterval? { 60 }
            override class var schemaVersion: Int { 2 }
            @Pref("Position") var position = 0
        }
        let store = CountingStore()
        let prefs = Versioned(key: "Main", store: store)
        prefs.position = 1
        #expect(prefs.lastError == nil)
        #expect(store.writeCount == 1, "the first setter writes at once")
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Position"] as? Int == 1 && stored[PersistentPrefs.schemaVersionKey] as? Int == 2, "\(stored)")
        prefs.position = 2
        #expect(prefs.position == 2)
        #expect(store.writeCount == 1, "the set is stamped now: the next setter waits for the interval")
        try prefs.synchronize()
        #expect(store.writeCount == 2)
        #expect(try store.load(root: "Main")?["Position"] as? Int == 2)
    }

    @Test("synchronize() inside an update of the same set is refused and leaves no problem behind")
    func synchronizeInsideUpdate() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        prefs.position = 1
        #expect(throws: SomeFailure.self) {
            try prefs.update(\.counter) { counter in
                counter += 1
                #expect(throws: PersistentPrefs.PrefsError.transactionInProgress(root: "Main")) { try prefs.synchronize() }
                throw SomeFailure()  // the update writes nothing, so nothing clears a problem
            }
        }
        #expect(prefs.problems.isEmpty, "\(prefs.problems)")
        try prefs.synchronize()
        #expect(try store.load(root: "Main")?["Position"] as? Int == 1)
    }

    @Test("setters on several threads beside updates, reloads and another writer: the store ends as the set reads")
    func threadsAgree() throws {
        let store = CountingStore()
        let prefs = SliderPrefs(key: "Main", store: store)
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            let mine = SliderPrefs(key: "Main", store: store)
            for n in 1...100 {
                switch lane {
                case 0: mine.position = n
                case 1: try? mine.update(\.counter) { $0 += 1 }
                case 2: if n % 4 == 0 { mine.flush() }
                default: try? store.writeBehind("Label", "outside \(n)", root: "Main")
                }
            }
        }
        try prefs.synchronize()
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Position"] as? Int == 100 && stored["Count"] as? Int == 100)
        prefs.flush()
        #expect(prefs.position == 100 && prefs.counter == 100 && prefs.label == "outside 100")
    }

    @Test("durable sets still write at return; a plain instance of a coalescing set sees its staged values")
    func mixedClasses() throws {
        let store = CountingStore()
        let durable = DurableSliderPrefs(key: "Main", store: store)
        let before = store.writeCount
        durable.position = 3
        #expect(store.writeCount == before + 1)
        let slow = SlowSliderPrefs(key: "Main", store: store)
        slow.label = "staged"
        #expect(durable.label == "staged")
        durable.position = 4  // a durable write writes what is staged first
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored["Label"] as? String == "staged" && stored["Position"] as? Int == 4)
    }

    @Test("whole-set writes and removals coalesce too")
    func wholeSetWrites() throws {
        let store = CountingStore()
        let prefs = SlowSliderPrefs(key: "Main", store: store)
        prefs.values = ["Position": 1, "Label": "x"]
        prefs.reset("Label")
        #expect(prefs.values.count == 1 && prefs.position == 1)
        try prefs.synchronize()
        let stored = try #require(try store.load(root: "Main"))
        #expect(stored.count == 1 && stored["Position"] as? Int == 1)
        prefs.clear()
        #expect(prefs.values.isEmpty)
        try prefs.synchronize()
        #expect(try store.load(root: "Main") == nil)
    }
}

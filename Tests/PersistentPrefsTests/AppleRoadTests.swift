import Foundation
import PersistentPrefsSample
import Testing

@testable import PersistentPrefs

/// The `UserDefaults` road of ``UserDefaultsStore`` (the road Apple platforms take), run on Linux
/// through `UserDefaultsStore.throughUserDefaults(suiteName:)` where it is plain Foundation: a
/// set is read from the suite's persistent domain only, a nested write is refused instead of
/// waiting for itself, and `didChangeNotification` drives the watch where there is no file.
@Suite("Apple road: UserDefaults", waitLimit)
struct AppleRoadTests {
    static let key = SamplePrefs.Key.int.rawValue

    @Test("swift-corelibs-foundation: persistentDomain(forName:) after set and synchronize() holds what was written")
    func persistentDomainAfterSet() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let defaults = suite.store.userDefaults
        defaults.set(["a": 1], forKey: "Root")
        #expect(defaults.synchronize())
        let stored = defaults.persistentDomain(forName: suite.name)?["Root"]
        #expect(stored.flatMap(PlistValue.stringKeyedDictionary).map { $0["a"] as? Int } == 1)
    }

    @Test("registered defaults are not read as stored, not listed as roots, and not written back")
    func registeredDefaultsStayLayers() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        try Self.checkRegisteredDefaultsStayLayers(suite.store, suite: suite)
    }

    /// Whether this Foundation shows registered defaults in
    /// `volatileDomain(forName: registrationDomain)` (Apple's does; swift-corelibs-foundation
    /// keeps them to itself).
    static let registrationDomainIsVisible: Bool = {
        let defaults = UserDefaults.standard
        let key = "RegistrationProbe-\(UUID().uuidString)"
        defaults.register(defaults: [key: 1])
        return defaults.volatileDomain(forName: UserDefaults.registrationDomain)[key] != nil
    }()

    @Test(
        "an object whose suite name Foundation hides (any but .standard on Apple platforms): registered defaults are not read as stored, not listed as roots, and not written back",
        .enabled(if: registrationDomainIsVisible, "the object's search list is all there is to read, and only a Foundation that shows its registered defaults lets the library leave them out; swift-corelibs-foundation keeps them to itself")
    )
    func registeredDefaultsStayLayersWithoutASuiteName() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let object = try #require(UserDefaults(suiteName: suite.name))
        // Apple's road: the library cannot learn the object's suite name.
        let store = PlatformChoices.$current.withValue(.apple) { UserDefaultsStore(userDefaults: object) }
        #expect(store.suiteName == nil)
        try Self.checkRegisteredDefaultsStayLayers(store, suite: suite)
    }

    @Test("an object whose suite name Foundation hides: a set written reads back whole and is listed as a root")
    func setsRoundTripWithoutASuiteName() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let object = try #require(UserDefaults(suiteName: suite.name))
        let store = PlatformChoices.$current.withValue(.apple) { UserDefaultsStore(userDefaults: object) }
        let values: [String: Any] = ["Int": 7, "String": "seven", "List": [1, 2], "Nested": ["a": true]]
        try store.save(values, root: "Set")
        // As the engine loads it: swift-corelibs-foundation hands values back wrapped.
        let loaded = try PlistValue.normalizedSet(try #require(try store.load(root: "Set")), for: .loading).get()
        #expect(PlistValue.same(loaded, values), "\(loaded)")
        #expect(try store.roots().contains("Set"))
        let prefs = SamplePrefs(key: "Sample", store: store)
        prefs.int = 9
        #expect(prefs.lastError == nil)
        let stored = try PlistValue.normalizedSet(try #require(try store.load(root: "Sample")), for: .loading).get()
        #expect(stored[SamplePrefs.Key.int.rawValue] as? Int == 9, "\(stored)")
    }

    /// Registers a set and a plain value of the test's own, then checks that `store` neither
    /// reads nor lists them as stored, and that a write of the set stores its own key only.
    static func checkRegisteredDefaultsStayLayers(_ store: UserDefaultsStore, suite: TestSuite) throws {
        // The registration domain is the process's: keys of this test's own.
        let root = "Registered-\(UUID().uuidString)"
        let plain = "Plain-\(UUID().uuidString)"
        store.userDefaults.register(defaults: [root: ["registered": 1, "other": 2], plain: 3])
        #expect(store.userDefaults.object(forKey: root) != nil, "UserDefaults itself sees the registered set")

        #expect(try store.load(root: root) == nil)
        #expect(try !store.roots().contains(root))
        #expect(try store.object(plain) == nil)

        _ = try store.apply(.set(key: "own", value: 5), root: root)
        let written = suite.store.userDefaults.persistentDomain(forName: suite.name)?[root].flatMap(PlistValue.stringKeyedDictionary)
        #expect(written?.keys.sorted() == ["own"], "\(String(describing: written))")
        #expect(try store.load(root: root)?.keys.sorted() == ["own"])
        #expect(try store.roots().contains(root))
    }

    @Test("writing another set of the same UserDefaults inside a migration step is refused; the migration runs")
    func writeInsideMigration() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        try suite.store.save(["Old": 5], root: "M")
        NestingMigrationPrefs.store = suite.store
        let log = StepLog()
        NestingMigrationPrefs.log = log
        let migrated = finishing(within: 20) { () -> Int in
            NestingMigrationPrefs(key: "M", store: suite.store).size
        }
        #expect(migrated == 5, "the migration hung or did not run")
        #expect(log.all == ["refused: transactionInProgress(root: \"M\")"], "\(log.all)")
        #expect(try suite.store.load(root: "B") == nil, "the nested write stored nothing")
    }

    @Test("another thread reads the suite while an update body runs: a read never waits for the body")
    func readFromAnotherThreadDuringUpdate() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        try suite.store.save([Self.key: 41], root: "B")
        let outer = SamplePrefs(key: "A", store: suite.store)
        let seen = Locked<Int?>(nil)
        let inTime = Locked(false)
        let done = finishing(within: 20) { () -> Bool in
            (try? outer.update { values in
                // As the watcher's reload of another set does, on its own thread; the body waits for it.
                let read = DispatchSemaphore(value: 0)
                Thread {
                    seen.withLock { $0 = (try? suite.store.load(root: "B"))?[Self.key] as? Int }
                    read.signal()
                }.start()
                inTime.withLock { $0 = read.wait(timeout: .now() + 5) == .success }
                values[Self.key] = 1
            }) != nil
        }
        #expect(done == true, "the update hung")
        #expect(inTime.withLock { $0 }, "the read waited for the update body")
        #expect(seen.withLock { $0 } == 41)
    }

    @Test("a write waits at most lockTimeout for another thread's write of the suite, then gives up naming the suite; nothing is written")
    func writeLockEndsAWait() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let prefs = SamplePrefs(key: "R", store: suite.store)
        prefs.int = 1
        try #require(prefs.lastError == nil)
        // Another thread inside a write of the suite that does not end (a stuck update body).
        let (release, ended) = Self.holdingAWrite(of: suite.store.handle)
        let started = Date()
        let gaveUp = finishing(within: PersistentPrefs.lockTimeout + 20) { () -> PersistentPrefs.PrefsError? in
            prefs.int = 2
            return prefs.lastError
        }
        let waited = Date().timeIntervalSince(started)
        release.signal()
        ended.wait()
        guard case .lockTimeout(let path, let holder, let reported)?? = gaveUp else {
            Issue.record("expected lockTimeout, got \(String(describing: gaveUp))")
            return
        }
        #expect(path == "UserDefaults suite \"\(suite.name)\"")
        #expect(holder == getpid())
        #expect(reported >= PersistentPrefs.lockTimeout - 0.05 && waited >= reported)
        #expect(gaveUp??.description.contains("its write lock") == true)
        // Nothing was written; once the other write ends, writes go through.
        #expect(try suite.store.load(root: "R")?[Self.key] as? Int == 1)
        prefs.int = 3
        #expect(prefs.lastError == nil)
        #expect(SamplePrefs(key: "R", store: suite.store).int == 3)
    }

    @Test("a write with no bound on its wait waits for another thread's write however long, and then goes through")
    func unboundedWaitEnds() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let handle = suite.store.handle
        let (release, ended) = Self.holdingAWrite(of: handle)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
        let ran = finishing(within: 20) { (try? handle.withWrite(root: "Waiting", waitingAtMost: .infinity) { true }) ?? false }
        #expect(ran == true)
        ended.wait()
    }

    /// Starts a thread that is inside a write of `handle`'s suite once this returns, and stays
    /// there until `release` is signalled; `ended` is signalled when it has left.
    static func holdingAWrite(of handle: DefaultsHandle) -> (release: DispatchSemaphore, ended: DispatchSemaphore) {
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        Thread {
            _ = try? handle.withWrite(root: "Held") {
                holding.signal()
                release.wait()
            }
            ended.signal()
        }.start()
        holding.wait()
        return (release, ended)
    }

    @Test("the suite is named in errors where Foundation names it, and said to be unnamed where it does not")
    func suiteNamesInErrors() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        #expect(suite.store.handle.displayName == "UserDefaults suite \"\(suite.name)\"")
        let object = try #require(UserDefaults(suiteName: suite.name))
        let hidden = PlatformChoices.$current.withValue(.apple) { UserDefaultsStore(userDefaults: object) }
        #expect(hidden.handle.displayName == "a UserDefaults object whose suite Foundation does not name")
    }

    @Test("the didChangeNotification watcher reports its object's notifications until stopped")
    func notificationWatcher() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let defaults = suite.store.userDefaults
        let calls = DispatchSemaphore(value: 0)
        let stop = DefaultsChangeWatcher.start(defaults) { calls.signal() }
        // swift-corelibs-foundation posts the notification for persistent-domain changes, not for
        // `set`: post it as Apple platforms do after a change.
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: defaults)
        #expect(calls.wait(timeout: .now() + 10) == .success, "the watcher did not report the change")

        let another = UserDefaults(suiteName: suite.name + "-other")!
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: another)
        #expect(calls.wait(timeout: .now() + 0.5) == .timedOut, "another object's change was reported")

        stop()
        stop()  // a second stop does nothing
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: defaults)
        #expect(calls.wait(timeout: .now() + 0.5) == .timedOut, "a change was reported after stop")
    }

    @Test("no call of the didChangeNotification watcher's handler starts after stop() returns, though notifications were queued")
    func notificationWatcherStopsQueuedCalls() throws {
        let suite = TestSuite(applePath: true)
        defer { suite.remove() }
        let defaults = suite.store.userDefaults
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let stopped = Locked(false)
        let lateCalls = Locked(0)
        let stop = DefaultsChangeWatcher.start(defaults) {
            if stopped.withLock({ $0 }) { lateCalls.withLock { $0 += 1 } }
            entered.signal()
            release.wait()  // the first call holds the queue while more notifications queue up
        }
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: defaults)
        #expect(entered.wait(timeout: .now() + 10) == .success, "the watcher did not report the change")
        for _ in 0..<20 { NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: defaults) }
        stop()
        stopped.withLock { $0 = true }
        for _ in 0..<21 { release.signal() }
        Thread.sleep(forTimeInterval: 0.3)  // the queued calls get their turn
        #expect(lateCalls.withLock { $0 } == 0, "calls started after stop() returned")
    }
}

/// A set whose migration step writes another set of the same store.
final class NestingMigrationPrefs: PersistentPrefs {
    nonisolated(unsafe) static var store: UserDefaultsStore?
    nonisolated(unsafe) static var log = StepLog()

    @Pref("Size") var size = 1
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] {
        let (store, log) = (Self.store, Self.log)
        return [
            PrefsMigration("write another set") { set in
                set["Size"] = set.removeValue(forKey: "Old")
                guard let store else { return }
                do {
                    try store.save(["Other": 1], root: "B")
                    log.add("stored")
                } catch let error as PersistentPrefs.PrefsError {
                    if case .transactionInProgress(let root) = error { log.add("refused: transactionInProgress(root: \"\(root)\")") } else { log.add("\(error)") }
                } catch {
                    log.add("\(error)")
                }
            }
        ]
    }
}

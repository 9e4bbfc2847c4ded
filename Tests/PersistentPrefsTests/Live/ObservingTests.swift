import Foundation
import Observation
@testable import PersistentPrefs
import Testing

/// Observing a set in one process: closures, async sequences, the Observation framework.
@Suite("Observing changes in this process", waitLimit)
struct ObservingTests {
    @Test("an observer hears exactly the keys whose stored value changed, and nothing for equal values")
    func exactKeys() {
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }

        prefs.a = 1  // delivered before the setter returns: this thread made the change
        #expect(log.keys == [["A"]])
        #expect(log.events.first?.root == "Root")
        prefs.a = 1  // an equal value: no change
        #expect(log.keys == [["A"]])
        prefs.values = ["A": 1, "B": "x", "C": ["y"]]
        #expect(log.keys == [["A"], ["B", "C"]])
        prefs.reset("B")
        #expect(log.keys == [["A"], ["B", "C"], ["B"]])
        prefs["A"] = 1.0  // same number, another kind: a change
        #expect(log.keys.last == ["A"])

        // Another root key is another set.
        LivePrefs(key: "Other", store: store).a = 7
        #expect(log.keys.count == 4)
        // A refused write changes nothing.
        prefs["Nope"] = 1
        #expect(prefs.lastError != nil)
        #expect(log.keys.count == 4)
    }

    @Test("another instance of the set, and a filter on keys")
    func otherInstanceAndFilter() {
        let store = InMemoryStore()
        let watched = LivePrefs(key: "Root", store: store)
        let onlyB = EventLog()
        let all = EventLog()
        let first = watched.observeChanges(to: ["B"]) { onlyB.append($0) }
        let second = watched.observeChanges { all.append($0) }
        defer {
            first.cancel()
            second.cancel()
        }
        let writer = LivePrefs(key: "Root", store: store)
        writer.a = 3
        writer.b = "b"
        writer.values = ["A": 4, "B": "c"]
        #expect(all.keys == [["A"], ["B"], ["A", "B"]])
        #expect(onlyB.keys == [["B"], ["A", "B"]])  // every key that changed, when one of the watched did
        #expect(watched.a == 4 && watched.b == "c")
    }

    @Test("cancel and deallocation stop delivery; the observation keeps the set live without the instance")
    func cancelAndDeallocate() {
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        let cancelled = EventLog()
        let dropped = EventLog()
        let kept = EventLog()
        let observation = prefs.observeChanges { cancelled.append($0) }
        var temporary: PrefsObservation? = prefs.observeChanges { dropped.append($0) }
        let lasting = LivePrefs(key: "Root", store: store).observeChanges { kept.append($0) }  // its instance is gone at once
        prefs.a = 1
        observation.cancel()
        observation.cancel()  // twice is fine
        #expect(observation.isCancelled)
        temporary = nil
        prefs.a = 2
        #expect(cancelled.keys.count == 1)
        #expect(dropped.keys.count == 1)
        #expect(kept.keys.count == 2)
        lasting.cancel()
        _ = temporary
    }

    @Test("a handler that writes to the set and cancels itself does not deadlock")
    func handlerWrites() {
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        let log = EventLog()
        let holder = ObservationHolder()
        holder.observation = prefs.observeChanges { event in
            log.append(event)
            let inner = LivePrefs(key: "Root", store: store)
            if event.keys.contains("A") {
                inner.b = "answered \(inner.a)"  // a write from inside the handler
            } else {
                holder.observation?.cancel()  // and cancelling itself
            }
        }
        prefs.a = 5
        #expect(log.keys == [["A"], ["B"]])
        #expect(prefs.b == "answered 5")
        prefs.a = 6
        #expect(log.keys.count == 2)
    }

    /// The watcher finding the process's own write posts nothing but still asks the feed to
    /// deliver, between the write posting its event and delivering it.
    @Test("a thread that posted nothing never delivers another thread's event: the writer's handler runs on the writer's thread, before it returns")
    func deliveredByThePoster() throws {
        let feed = ChangeFeed(root: "Root", storeIdentifier: "test")
        let threads = Locked<[ObjectIdentifier]>([])
        let id = feed.subscribe(keys: []) { _ in threads.withLock { $0.append(ObjectIdentifier(Thread.current)) } }
        defer { feed.unsubscribe(id) }

        feed.post(["A"])
        let done = DispatchSemaphore(value: 0)
        Thread {
            feed.deliver()  // posted nothing: delivers nothing
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(threads.withLock { $0 }.isEmpty)

        feed.deliver()
        #expect(threads.withLock { $0 } == [ObjectIdentifier(Thread.current)])
    }

    @Test("an async sequence delivers the events and ends when its task is cancelled")
    func asyncSequence() async {
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        let stream = prefs.changes(to: ["A", "C"])
        let ended = Flag()
        let reader = Task {
            var seen: [Set<String>] = []
            for await event in stream {
                seen.append(event.keys)
                if seen.count == 2 { break }
            }
            return seen
        }
        prefs.b = "not watched"
        prefs.a = 1
        prefs.c = ["x"]
        #expect(await reader.value == [["A"], ["C"]])

        let second = prefs.changes()
        let endless = Task {
            for await _ in second {}
            ended.set()
        }
        endless.cancel()
        _ = await endless.value
        #expect(ended.isSet)
    }

    @Test("withObservationTracking: a @Pref read is tracked by key, values by the whole set")
    func observationTracking() {
        // `withObservationTracking` needs macOS 14 (the package supports macOS 12).
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        let fired = Flag()
        withObservationTracking {
            _ = prefs.a
        } onChange: {
            fired.set()
        }
        prefs.b = "another key"
        #expect(!fired.isSet)
        LivePrefs(key: "Root", store: store).a = 9  // another instance of the set
        #expect(fired.isSet)

        let wholeSet = Flag()
        withObservationTracking {
            _ = prefs.values
        } onChange: {
            wholeSet.set()
        }
        prefs.c = ["any key"]
        #expect(wholeSet.isSet)

        let subscripted = Flag()
        withObservationTracking {
            _ = prefs["B"]
        } onChange: {
            subscripted.set()
        }
        prefs.b = "changed"
        #expect(subscripted.isSet)
    }

    @Test("a key observed by its @Pref is still heard after the table of key paths forgot its path")
    func keyPathsForgotten() {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let prefs = LivePrefs(key: "Root", store: InMemoryStore())
        let fired = Flag()
        withObservationTracking {
            _ = prefs.a
        } onChange: {
            fired.set()
        }
        // More key paths than the table keeps: it forgets the one the tracking holds.
        for n in 0...16_384 { _ = PrefsKeySpace.keyPath("forgotten \(n)") }
        prefs.a = 41
        #expect(fired.isSet)
    }

    @Test("16 threads observing and writing one set: every change is heard, nothing deadlocks")
    func manyThreads() async {
        let store = InMemoryStore()
        let logs = (0..<16).map { _ in EventLog() }
        let observations = logs.map { log in LivePrefs(key: "Root", store: store).observeChanges { log.append($0) } }
        defer { observations.forEach { $0.cancel() } }
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<16 {
                group.addTask {
                    let prefs = LivePrefs(key: "Root", store: store)
                    let own = prefs.observeChanges(to: ["C"]) { _ in _ = LivePrefs(key: "Root", store: store).a }
                    for step in 1...25 { prefs.a = thread * 100 + step }
                    own.cancel()
                }
            }
        }
        // Every write stored a new value, so each observer heard 400 changes of "A".
        for log in logs { #expect(log.keys.count == 400 && log.keys.allSatisfy { $0 == ["A"] }) }
    }

    @Test("a store of one's own announces an outside change with setDidChange(root:)")
    func customStoreAnnounces() throws {
        let store = InMemoryStore()
        let prefs = LivePrefs(key: "Root", store: store)
        prefs.a = 1
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }
        try store.save(["A": NSNumber(value: 2), "B": "outside"], root: "Root")  // behind the library's back
        #expect(prefs.a == 1)  // the store did not say so yet
        store.setDidChange(root: "Root")
        #expect(log.keys == [["A", "B"]])
        #expect(prefs.a == 2 && prefs.b == "outside")
        store.setDidChange(root: "Other")  // a set nobody uses: nothing
        #expect(log.keys.count == 1)
    }

    @Test("the watcher runs while something is watched, and stops shortly after the last registration")
    func watcherLifecycle() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let watcher = ChangeWatcher(linger: 0.1)
        #expect(!watcher.isRunning)
        let heard = Flag()
        let file = URL(fileURLWithPath: directory.path + "/missing/deeper/file.plist")
        let token = watcher.watch(file) { heard.set() }
        #expect(watcher.isRunning)
        // The folder does not exist yet: creating it and the file is still heard.
        try FileManager.default.createDirectory(atPath: directory.path + "/missing/deeper", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: file)
        #expect(heard.wait())
        watcher.unwatch(token)
        #expect(watcher.isRunning)  // it lingers a moment, in case another set comes
        let stopBy = Date().addingTimeInterval(5)
        while watcher.isRunning && Date() < stopBy { usleep(2_000) }
        #expect(!watcher.isRunning)
    }
}

/// Holds an observation a handler can reach (to cancel itself).
final class ObservationHolder: @unchecked Sendable {  // set once before any event
    var observation: PrefsObservation?
}

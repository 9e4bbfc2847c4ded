import Foundation
import Testing

@testable import PersistentPrefs

/// The library's lock order (`LockLevel`), which debug builds check on every acquisition: these
/// tests run the check itself, and the library's busiest roads under it (a breach stops the
/// process, so the rest of the suite also runs under it).
@Suite("Lock order")
struct LockOrderTests {
    /// Runs `body` on a thread of its own, so the levels it holds are its own.
    static func onThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        done.wait()
    }

    @Test("a lock of a later level may be taken; one of the same or an earlier level may not; turns may nest")
    func order() {
        Self.onThread {
            #expect(LockLevel.breach(taking: .cell) == nil)
            LockLevel.entering(.cell)
            #expect(LockLevel.breach(taking: .feed) == nil)
            #expect(LockLevel.breach(taking: .turn) == "lock order broken: a turn lock taken while this thread holds a cell lock (see LockLevel)")
            #expect(LockLevel.breach(taking: .cell) != nil, "two sets' cells never nest")
            LockLevel.entering(.feed)
            #expect(LockLevel.breach(taking: .instance) == nil)
            #expect(LockLevel.breach(taking: .cell) != nil)
            LockLevel.leaving(.feed)
            LockLevel.leaving(.cell)
            LockLevel.entering(.instance)
            #expect(LockLevel.breach(taking: .cell) != nil, "an instance's lock takes no other lock inside")
            LockLevel.leaving(.instance)
            LockLevel.entering(.turn)
            #expect(LockLevel.breach(taking: .turn) == nil)
            #expect(LockLevel.breach(taking: .cell) == nil)
            LockLevel.leaving(.turn)
            #expect(LockLevel.breach(taking: .turn) == nil)
        }
    }

    @Test("a Locked counts itself as held while its body runs, and not after; under a lock outside the order, no lock of it is taken")
    func lockedCounts() {
        Self.onThread {
            let cell = Locked(0, level: .cell)
            cell.withLock { _ in
                #expect(LockLevel.breach(taking: .turn) != nil)
                #expect(LockLevel.breach(taking: .feed) == nil)
            }
            #expect(LockLevel.breach(taking: .turn) == nil)
            let table = Locked(0)  // a table's lock is outside the order: taken under any lock, none under it
            cell.withLock { _ in table.withLock { _ in } }
            table.withLock { _ in
                #expect(LockLevel.breach(taking: .turn) == "lock order broken: a turn lock taken while this thread holds a lock outside the order (see LockLevel)")
                #expect(LockLevel.breach(taking: .instance) != nil)
                Locked(1).withLock { _ in }  // two locks outside the order may nest
            }
            #expect(LockLevel.breach(taking: .turn) == nil)
        }
    }

    @Test("writes, observed changes, batches and typed reads keep the order")
    func roadsKeepTheOrder() throws {
        final class Ordered: PersistentPrefs, @unchecked Sendable {  // an instance may be used from any thread
            @Pref("Volume") var volume = 5
        }
        let store = InMemoryStore()
        let prefs = Ordered(key: "O", store: store)
        let heard = Flag()
        let observation = prefs.observeChanges { _ in
            heard.set()
            _ = prefs.volume  // a handler reads the set: no lock is held while it runs
        }
        defer { observation.cancel() }
        prefs.volume = 6
        prefs.batch { $0.volume = 7 }
        try prefs.update { $0["Volume"] = 8 }
        #expect(prefs.volume == 8 && heard.isSet && prefs.lastError == nil)
    }
}

/// The one reentrancy rule (`WriteScope`): a write never waits for itself.
@Suite("Write scope")
struct WriteScopeTests {
    @Test("a resource this thread holds is refused naming the outer write; another thread, or the same after, is not")
    func scope() throws {
        #expect(WriteScope.label(holding: "r") == nil)
        try WriteScope.holding("r", label: "Outer") {
            #expect(throws: PersistentPrefs.PrefsError.transactionInProgress(root: "Outer")) { try WriteScope.check("r") }
            try WriteScope.check("other")
            WriteScope.holding("other", label: "Inner") {
                #expect(WriteScope.label(holding: "r") == "Outer" && WriteScope.label(holding: "other") == "Inner")
            }
            #expect(WriteScope.label(holding: "other") == nil)
            LockOrderTests.onThread { #expect(WriteScope.label(holding: "r") == nil) }
        }
        #expect(WriteScope.label(holding: "r") == nil)
        try WriteScope.check("r")
    }

    @Test("an update body that writes its own set is refused with transactionInProgress; one that writes a set of another file is not")
    func nestedWrites() throws {
        final class Nested: PersistentPrefs {
            @Pref("Volume") var volume = 5
        }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = Nested(key: "A", store: store)
        let other = Nested(key: "B", store: store)
        #expect(throws: PersistentPrefs.PrefsError.transactionInProgress(root: "A")) {
            try prefs.update { _ in try prefs.set(7, forKey: "Volume") }
        }
        try prefs.update { _ in try other.set(8, forKey: "Volume") }  // another file: no wait for itself
        #expect(prefs.volume == 5 && other.volume == 8)
    }
}

/// Writes started inside other writes: observers and lease ends wait until no lock is held, and a
/// write that would wait for its own thread's store lock is refused before it waits for anyone.
@Suite("Nested writes")
struct NestedWriteTests {
    final class Nested: PersistentPrefs, @unchecked Sendable {  // an instance may be used from any thread
        @Pref("Volume") var volume = 5
    }

    @Test("a set written from an update body of another is heard once the outer write has let go of its locks")
    func observersRunOutsideLocks() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let outer = Nested(key: "A", store: store)
        let inner = Nested(key: "B", store: store)
        let heard = Locked<[String]>([])
        let observation = inner.observeChanges { _ in
            heard.withLock { $0.append(WriteScope.isInsideWrite ? "inside a write" : "outside") }
        }
        defer { observation.cancel() }
        try outer.update { values in
            values["Volume"] = 1
            inner.volume = 2  // another file: written now, heard after the outer write
            #expect(heard.withLock { $0 }.isEmpty, "not while the outer write holds its turn and lock")
        }
        #expect(heard.withLock { $0 } == ["outside"])
        #expect(outer.volume == 1 && inner.volume == 2 && inner.lastError == nil)
    }

    @Test("a write of the same suite from an update body is refused at once, even while another thread waits in that set's turn")
    func sameSuiteRefusedBeforeTheTurn() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let outer = Nested(key: "A", store: suite.store)
        let inner = Nested(key: "B", store: suite.store)
        let other = Nested(key: "B", store: suite.store)
        let otherDone = DispatchSemaphore(value: 0)
        let otherError = Locked<PersistentPrefs.PrefsError?>(nil)
        var refusal: PersistentPrefs.PrefsError?
        var waited: TimeInterval = 0
        try outer.update { values in
            values["Volume"] = 1
            // Another thread takes B's turn and waits for the suite's lock, which this write holds.
            Thread {
                do { try other.set(3, forKey: "Volume") } catch { otherError.withLock { $0 = error as? PersistentPrefs.PrefsError } }
                otherDone.signal()
            }.start()
            Thread.sleep(forTimeInterval: 0.2)
            let started = Date()
            do { try inner.set(2, forKey: "Volume") } catch { refusal = error as? PersistentPrefs.PrefsError }
            waited = Date().timeIntervalSince(started)
        }
        otherDone.wait()
        #expect(refusal == .transactionInProgress(root: "A"))
        #expect(waited < 1, "refused before it waits for the other thread's turn (\(waited) s)")
        #expect(otherError.withLock { $0 } == nil, "the other thread's write goes through once the update ends")
        #expect(Nested(key: "B", store: suite.store).volume == 3 && outer.volume == 1)
    }
}

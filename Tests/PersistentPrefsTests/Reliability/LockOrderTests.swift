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

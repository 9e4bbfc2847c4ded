import Foundation
import PersistentPrefsSample
import Testing

@testable import PersistentPrefs

/// No in-process wait is endless: writes that cross between sets of two files inside
/// `update` bodies, and a store's load that meets a lock of the store's own. Every test runs its
/// threads under a deadline, so a hang fails instead of stalling the run.
@Suite("Locks: no in-process wait is endless")
struct EndlessWaitTests {
    static let key = SamplePrefs.Key.int.rawValue

    // MARK: - Crossed writes

    @Test("two threads updating sets of two files, each writing the other's set inside, both return; one inner write is refused",
          waitLimit)
    func crossedUpdates() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let a1 = SamplePrefs(key: "A", store: store)
        let b1 = SamplePrefs(key: "B", store: store)
        let a2 = SamplePrefs(key: "A", store: store)
        let b2 = SamplePrefs(key: "B", store: store)
        let firstInside = DispatchSemaphore(value: 0)
        let secondInside = DispatchSemaphore(value: 0)
        /// A thread updating `outer`'s set that writes `inner`'s inside, once the other thread is inside its own update.
        func crossing(_ outer: SamplePrefs, _ inner: SamplePrefs, value: Int, inside: DispatchSemaphore, other: DispatchSemaphore)
            -> Background<(Result<Void, any Error>, PersistentPrefs.PrefsError?)>
        {
            Background {
                var refusal: PersistentPrefs.PrefsError?
                let result = Result {
                    try outer.update { values in
                        values[Self.key] = value
                        inside.signal()
                        _ = other.wait(timeout: .now() + 10)
                        inner[Self.key] = value + 1
                        refusal = inner.lastError
                    }
                }
                return (result, refusal)
            }
        }
        let first = crossing(a1, b1, value: 10, inside: firstInside, other: secondInside)
        let second = crossing(b2, a2, value: 20, inside: secondInside, other: firstInside)
        let firstResult = first.value(within: 20)
        let secondResult = second.value(within: 20)
        let (firstOuter, firstInner) = try #require(firstResult, "the first thread is still waiting")
        let (secondOuter, secondInner) = try #require(secondResult, "the second thread is still waiting")
        #expect((try? firstOuter.get()) != nil, "the first update: \(firstOuter)")
        #expect((try? secondOuter.get()) != nil, "the second update: \(secondOuter)")
        // Exactly one inner write is refused, naming the set its thread is updating.
        switch (firstInner, secondInner) {
        case (.transactionInProgress(root: "A")?, nil):
            #expect(a1.int == 21 && b1.int == 20, "A \(a1.int), B \(b1.int)")
        case (nil, .transactionInProgress(root: "B")?):
            #expect(a1.int == 10 && b1.int == 11, "A \(a1.int), B \(b1.int)")
        default:
            Issue.record("inner writes: \(String(describing: firstInner)), \(String(describing: secondInner))")
        }
    }

    // MARK: - A store's load

    /// An in-memory store whose `load` takes a lock of its own, as a store guarding its state
    /// does; `loading` is signalled as each load begins.
    final class GatedStore: PrefsStore, @unchecked Sendable {  // `inner` is a Locked-backed store; the locks are thread-safe
        let inner = InMemoryStore()
        let identifier = "gated:\(UUID().uuidString)"
        let gate = NSRecursiveLock()
        let loading = DispatchSemaphore(value: 0)

        func load(root: String) throws -> [String: Any]? {
            loading.signal()
            gate.lock()
            defer { gate.unlock() }
            return try inner.load(root: root)
        }

        func save(_ values: [String: Any], root: String) throws { try inner.save(values, root: root) }
        func remove(root: String) throws { try inner.remove(root: root) }
        func roots() throws -> [String] { try inner.roots() }
    }

    @Test("a thread holding the store's own lock can read a set whose first load waits for that lock", waitLimit)
    func loadOutsideTheCacheLock() throws {
        let store = GatedStore()
        try store.inner.save([Self.key: 7], root: "A")
        let (firstRead, innerRead) = try #require(
            finishing(within: 20) { () -> (Background<Int>, Int?) in
                store.gate.lock()
                defer { store.gate.unlock() }
                let first = Background { SamplePrefs(key: "A", store: store).int }
                guard store.loading.wait(timeout: .now() + 10) == .success else { return (first, nil) }
                // This thread holds the store's lock; the first load waits for it.
                return (first, SamplePrefs(key: "A", store: store).int)
            }, "the read from the thread holding the store's lock hung")
        #expect(innerRead == 7)
        #expect(firstRead.value(within: 20) == 7, "the first read hung or read wrong")
    }
}

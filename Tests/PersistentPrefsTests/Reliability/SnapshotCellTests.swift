import Foundation
import PersistentPrefsSample
import Testing

@testable import PersistentPrefs

/// The read path: readers use published snapshots, and a replaced snapshot lives exactly as
/// long as a reader may use it.
@Suite("Snapshot cells: published reads", .serialized, waitLimit)
struct SnapshotCellTests {
    /// An object that counts how many of its kind are alive, and holds two fields a torn or
    /// freed object would not keep equal.
    final class Probe: @unchecked Sendable {  // immutable after init
        static let alive = Locked(0)
        let first: Int
        let second: Int

        init(_ value: Int) {
            first = value
            second = value
            Self.alive.withLock { $0 += 1 }
        }

        deinit { Self.alive.withLock { $0 -= 1 } }
    }

    @Test("readers see nil, then each published object; a cell lets go of what it replaced")
    func publishAndRead() {
        let before = Probe.alive.withLock { $0 }
        do {
            let cell = SnapshotCell<Probe>()
            #expect(cell.read { $0?.first } == nil)
            for value in 1...100 {
                cell.publish(Probe(value))
                #expect(cell.read { $0?.first } == value)
            }
            // Every replaced object is released at once.
            #expect(Probe.alive.withLock { $0 } == before + 1)
            cell.publish(nil)
            #expect(cell.read { $0?.first } == nil)
            #expect(Probe.alive.withLock { $0 } == before)
            cell.publish(Probe(7))
        }
        // The cell released the object it held when it went away.
        #expect(Probe.alive.withLock { $0 } == before)
    }

    @Test("threads reading while a writer publishes 5,000 objects never see a torn or freed one")
    func readersAndWriter() {
        let cell = SnapshotCell<Probe>()
        cell.publish(Probe(0))
        let stop = Locked(false)
        let bad = Locked(0)
        let done = DispatchSemaphore(value: 0)
        // Threads, not tasks: readers that never suspend would hold the cooperative pool.
        for _ in 0..<3 {
            Thread {
                var seen = 0
                while !stop.withLock({ $0 }) {
                    for _ in 0..<1000 {
                        let (first, second) = cell.read { ($0?.first ?? -1, $0?.second ?? -2) }
                        if first != second || first < seen { bad.withLock { $0 += 1 } }
                        seen = first
                    }
                }
                done.signal()
            }.start()
        }
        for value in 1...5_000 { cell.publish(Probe(value)) }
        stop.withLock { $0 = true }
        for _ in 0..<3 { done.wait() }
        #expect(bad.withLock { $0 } == 0)
        #expect(cell.read { $0?.first } == 5_000)
    }

    @Test("typed reads on the published path follow writes, errors, batches and a new root key")
    func typedReadsFollowTheSet() {
        let store = InMemoryStore()
        let prefs = SamplePrefs(key: "fast", store: store)
        let other = SamplePrefs(key: "fast", store: store)
        prefs.int = 1
        #expect(other.int == 1)
        other.int = 2
        #expect(prefs.int == 2, "another instance's write, seen at once")
        // A refused write sets lastError; a typed read leaves it for the next line to see, and an
        // untyped read (RVS's rule) clears it.
        prefs["Not A Key"] = 1
        #expect(prefs.lastError != nil)
        #expect(prefs.int == 2)
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["Not A Key"]))
        #expect(prefs["Integer Value"] as? Int == 2)
        #expect(prefs.lastError == nil)
        // Inside a batch, reads see the batch's pending value.
        prefs.batch { batched in
            batched.int = 3
            #expect(batched.int == 3)
            #expect(other.int == 2)
        }
        #expect(other.int == 3)
        // A new root key: reads follow it at once.
        prefs.key = "fast-2"
        #expect(prefs.int == 12345, "the declared default of a set that holds nothing")
        prefs.string = "new"
        #expect(prefs.string == "new")
        #expect(other.string == "Any String")
    }

    @Test("a string read from the answers worked out once follows every change, and a number is never read as a string")
    func stringAnswersFollowTheSet() {
        let store = InMemoryStore()
        let prefs = SamplePrefs(key: "strings", store: store)
        let other = SamplePrefs(key: "strings", store: store)
        prefs.string = "one"
        #expect(other.string == "one" && other.value(forKey: "String Value", as: String.self) == "one")
        #expect(other.string == "one", "read again from the answer worked out by the first read")
        prefs.string = "two"
        #expect(other.string == "two", "a change drops the answer")
        prefs.int = 5
        #expect(other.value(forKey: "Integer Value", as: String.self) == nil, "a number is not a string")
        #expect(other.value(forKey: "Integer Value", as: Int.self) == 5)
        #expect(other.value(forKey: "Integer Value", as: String.self) == nil, "asked again: still not, by the slow way")
        prefs["String Value"] = nil
        #expect(other.value(forKey: "String Value", as: String.self) == nil && other.string == "Any String", "removed: the default")
        prefs.batch { batched in
            batched.string = "pending"
            #expect(batched.string == "pending" && batched.value(forKey: "String Value", as: String.self) == "pending")
            #expect(other.string == "Any String")
        }
        #expect(other.string == "pending")
    }
}

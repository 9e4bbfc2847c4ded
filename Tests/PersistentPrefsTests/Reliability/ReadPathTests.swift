import Foundation
import PersistentPrefsSample
import Testing

@testable import PersistentPrefs

/// The read path: readers take the shared set's state whole, and typed reads follow every change.
@Suite("Read path: whole states and typed answers", .serialized, waitLimit)
struct ReadPathTests {
    @Test("threads reading while a writer replaces the set 2,000 times always see one whole state")
    func readersAndWriter() {
        let store = InMemoryStore()
        let writer = SamplePrefs(key: "whole", store: store)
        writer.values = ["Integer Value": 0, "String Value": "0"]
        let stop = Locked(false)
        let bad = Locked(0)
        let done = DispatchSemaphore(value: 0)
        // Threads, not tasks: readers that never suspend would hold the cooperative pool.
        for _ in 0..<3 {
            Thread {
                let reader = SamplePrefs(key: "whole", store: store)
                var seen = 0
                while !stop.withLock({ $0 }) {
                    for _ in 0..<100 {
                        let values = reader.values
                        let number = values["Integer Value"] as? Int ?? -1
                        if values["String Value"] as? String != String(number) || number < seen { bad.withLock { $0 += 1 } }
                        seen = number
                    }
                }
                done.signal()
            }.start()
        }
        for value in 1...2_000 { writer.values = ["Integer Value": value, "String Value": String(value)] }
        stop.withLock { $0 = true }
        for _ in 0..<3 { done.wait() }
        #expect(bad.withLock { $0 } == 0)
        #expect(writer.int == 2_000)
    }

    @Test("typed reads served at once follow writes, errors, batches and a new root key")
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

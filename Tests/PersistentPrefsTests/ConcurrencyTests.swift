import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

@Suite("Concurrency: many threads, one set", waitLimit)
struct ConcurrencyTests {
    /// 16 tasks, each with its own instance of one root key, each writing its own key of a
    /// 16-key set and reading all the others. No crash, and every last write survives.
    static func hammer(store: any PrefsStore, writesPerTask: Int) async throws {
        let keys = (0..<16).map { "k\($0)" }
        final class WidePrefs: PersistentPrefs {
            override var keys: [String] { (0..<16).map { "k\($0)" } }
        }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    let prefs = WidePrefs(key: "wide", store: store)
                    for n in 1...writesPerTask {
                        prefs["k\(task)"] = n
                        for key in keys { _ = prefs.value(forKey: key, as: Int.self) }
                        _ = prefs.values.count
                    }
                }
            }
        }
        let final = WidePrefs(key: "wide", store: store)
        for key in keys {
            #expect(final.value(forKey: key, as: Int.self) == writesPerTask, "\(key)")
        }
        final.flush()
        for key in keys {
            #expect(final.value(forKey: key, as: Int.self) == writesPerTask, "after reload: \(key)")
        }
    }

    @Test("16 tasks × 500 writes and reads, in memory")
    func inMemory() async throws {
        try await Self.hammer(store: InMemoryStore(), writesPerTask: 500)
    }

    @Test("16 tasks × 25 durable writes and reads, UserDefaults (Linux road, Apple road)", arguments: [false, true])
    func userDefaults(applePath: Bool) async throws {
        let suite = TestSuite(applePath: applePath)
        defer { suite.remove() }
        try await Self.hammer(store: suite.store, writesPerTask: 25)
    }

    @Test("instances created and dropped concurrently on many root keys")
    func manyRoots() async {
        let store = InMemoryStore()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for n in 0..<100 {
                        let prefs = SamplePrefs(key: "root-\(n % 8)", store: store)
                        prefs.int = task
                        _ = prefs.string
                    }
                }
            }
        }
        for n in 0..<8 {
            let value = SamplePrefs(key: "root-\(n)", store: store).int
            #expect((0..<16).contains(value))
        }
    }
}

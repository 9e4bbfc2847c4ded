import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// Inside an `update` body of one set, touching another set kept in the same file (another root
/// key of the same suite) must never hang: reads work, writes are refused with
/// `transactionInProgress(root:)` naming the set being updated. Each case runs under a deadline,
/// so a regression fails instead of stalling the run.
@Suite("Edges: another set of the same file inside an update", waitLimit)
struct CrossSetTests {
    static let key = SamplePrefs.Key.int.rawValue

    @Test("reading an unloaded set of the same suite inside an update works, on both roads of UserDefaultsStore",
          arguments: [false, true])
    func readInside(applePath: Bool) throws {
        let suite = TestSuite(applePath: applePath)
        defer { suite.remove() }
        do {
            let other = SamplePrefs(key: "B", store: suite.store)
            other.int = 41
        }  // B is no longer loaded in this process
        let outer = SamplePrefs(key: "A", store: suite.store)
        let read = finishing(within: 20) { () -> Int? in
            var seen: Int?
            try? outer.update { values in
                seen = SamplePrefs(key: "B", store: suite.store).int
                values[Self.key] = (seen ?? 0) + 1
            }
            return seen
        }
        #expect(read == .some(41), "the read hung or failed")
        #expect(outer.int == 42)
    }

    /// Each way of writing another set, on the suite-file road and on the `UserDefaults` road
    /// (Apple platforms' road, run here through `throughUserDefaults`; a container wraps the
    /// `UserDefaults` object on this platform's road, so it is checked on the suite-file road).
    static let nestedWrites: [(how: String, applePath: Bool)] =
        ["subscript", "update", "values", "container", "store"].map { ($0, false) } + ["subscript", "update", "values", "store"].map { ($0, true) }

    @Test("writing or updating another set of the same suite inside an update is refused, naming the set being updated",
          arguments: nestedWrites)
    func writeInside(how: String, applePath: Bool) throws {
        let suite = TestSuite(applePath: applePath)
        defer { suite.remove() }
        let outer = SamplePrefs(key: "A", store: suite.store)
        let other = SamplePrefs(key: "B", store: suite.store)
        other.int = 1
        let refusal = finishing(within: 20) { () -> (any Error)? in
            var inner: (any Error)?
            try? outer.update { values in
                values[Self.key] = 2
                switch how {
                case "subscript":
                    other[Self.key] = 3
                    inner = other.lastError
                case "update":
                    do { try other.update { $0[Self.key] = 3 } } catch { inner = error }
                case "values":
                    other.values = [Self.key: 3]
                    inner = other.lastError
                case "store":
                    do { try suite.store.save([Self.key: 3], root: "C") } catch { inner = error }
                default:
                    let container = UserDefaultsContainer(keyedBy: PlainKey.self, userDefaults: suite.store.userDefaults)
                    container[PlainKey(stringValue: "Loose")] = 3
                    inner = container.lastError
                }
            }
            return inner
        }
        guard let refusal else {
            Issue.record("the nested write hung or stored")
            return
        }
        #expect(refusal as? PersistentPrefs.PrefsError == .transactionInProgress(root: "A"), "\(String(describing: refusal))")
        #expect(outer.int == 2, "the outer update still succeeds")
        #expect(other.int == 1, "the nested write stored nothing")
        #expect(suite.store.userDefaults.object(forKey: "Loose") == nil)
        #expect(try suite.store.load(root: "C") == nil)
        // After the update returns, the other set writes as usual.
        other.int = 3
        #expect(other.lastError == nil && other.int == 3)
    }

    @Test("sets in separate files (PlistFileStore) can be updated one inside the other")
    func separateFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let outer = SamplePrefs(key: "A", store: store)
        let other = SamplePrefs(key: "B", store: store)
        let done = finishing(within: 20) { () -> Bool in
            (try? outer.update { values in
                values[Self.key] = 1
                try other.update { $0[Self.key] = 2 }
            }) != nil
        }
        #expect(done == true)
        #expect(outer.int == 1 && other.int == 2)
    }
}

/// A `CodingKey` made from any string, for ``UserDefaultsContainer`` calls in tests.
struct PlainKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

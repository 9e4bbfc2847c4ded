import Foundation
import Testing

@testable import PersistentPrefs

/// A set that accepts "k0" … "k1999".
final class ScalePrefs: PersistentPrefs {
    static let allKeys = (0..<2000).map { "k\($0)" }
    override var keys: [String] { Self.allKeys }
}

/// The shortcuts that keep writes into large sets fast (issue #22) must never change what is
/// written or read: each is checked against the slow road it replaces.
@Suite("Large sets: the write path's shortcuts")
struct ScaleTests {
    // MARK: - XML fragments for the ledger

    @Test("a value's XML cut from the suite's document is the ledger's own encoding of it", arguments: Array(0..<XMLWriterTests.kinds().count))
    func fragments(index: Int) throws {
        let (name, value) = XMLWriterTests.kinds()[index]
        guard let normalized = PlistValue.normalized(value) else { return }  // refused values are never written
        let suite: [String: Any] = ["a": 1, "m": normalized, "z": ["x": normalized] as [String: Any]]
        guard let (data, ranges) = PlistXML.document(ranging: suite) else {
            // Left to Foundation (a control character): the ledger encodes it itself.
            #expect(PlistXML.document(["v": normalized]) == nil, "\(name)")
            return
        }
        for key in suite.keys {
            let range = try #require(ranges[key], "\(name): \(key)")
            #expect(PlistXML.wrapped(data[range]) == SuiteLedger.xml(suite[key]), "\(name): \(key)")
        }
        #expect(data == PlistXML.document(suite), "\(name)")
    }

    @Test("sorted keys are reused only for the same keys")
    func sortedKeyMemo() {
        var first: [String: Any] = [:]
        var second: [String: Any] = [:]
        for n in 0..<100 {
            first["a\(n)"] = n
            second["b\(99 - n)"] = n
        }
        #expect(PlistXML.sortedKeys(of: first) == first.keys.sorted())
        #expect(PlistXML.sortedKeys(of: second) == second.keys.sorted())  // same count, other keys
        second["b0"] = nil
        second["a0"] = 1  // same count again, one key differs
        #expect(PlistXML.sortedKeys(of: second) == second.keys.sorted())
        #expect(PlistXML.sortedKeys(of: first) == first.keys.sorted())
    }

    // MARK: - Identity

    @Test("identical: the same object or storage only; same: equality of stored values")
    func identity() {
        let number = NSNumber(value: 5)
        let twin = NSNumber(value: 5)
        let text = String(repeating: "long text ", count: 10)
        let array: [Any] = [1, 2]
        #expect(PlistValue.identical(number, number))
        #expect(!PlistValue.identical(number, NSNumber(value: 6)))
        #expect(!PlistValue.identical(number, 5))  // another type
        #expect(PlistValue.identical(text, text))
        #expect(PlistValue.identical(array, array))
        #expect(!PlistValue.identical(nil, nil))
        #expect(!PlistValue.identical(number, nil))
        #expect(PlistValue.same(number, twin))
        #expect(!PlistValue.same(NSNumber(value: 1), NSNumber(value: true)))  // kind counts
        #expect(PlistValue.same(["a": number] as [String: Any], ["a": twin] as [String: Any]))
        #expect(!PlistValue.same(["a": number] as [String: Any], ["a": NSNumber(value: 6)] as [String: Any]))
        #expect(!PlistValue.same(["a": number] as [String: Any], number))
    }

    // MARK: - Parse cache

    @Test("a file rewritten by someone else is read again, not taken from the cache")
    func parseCacheSeesOtherWriters() throws {
        let suite = TestSuite("scale")
        defer { suite.remove() }
        let prefs = ScalePrefs(key: "R", store: suite.store)
        prefs.batch { for n in 0..<200 { $0["k\(n)"] = n } }
        #expect(prefs.lastError == nil)
        // Another program rewrites the file in place: same size, one value changed.
        let url = URL(fileURLWithPath: suite.path)
        var text = try String(contentsOf: url, encoding: .utf8)
        let old = "<key>k150</key>\n\t\t<integer>150</integer>"
        #expect(text.contains(old))
        text = text.replacingOccurrences(of: old, with: "<key>k150</key>\n\t\t<integer>999</integer>")
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
        // The next write starts from their file, keeping their value.
        prefs["k0"] = -1
        #expect(prefs.lastError == nil)
        let reread = ScalePrefs(key: "R", store: try #require(UserDefaultsStore(suiteName: suite.name)))
        _ = try reread.reload()
        #expect(reread.value(forKey: "k150", as: Int.self) == 999)
        #expect(reread.value(forKey: "k0", as: Int.self) == -1)
        #expect(reread.value(forKey: "k199", as: Int.self) == 199)
    }

    @Test("typed answers worked out on first read match as? after writes and batches")
    func lazyNumbers() throws {
        let suite = TestSuite("scale")
        defer { suite.remove() }
        let prefs = ScalePrefs(key: "R", store: suite.store)
        prefs.batch { for n in 0..<300 { $0["k\(n)"] = n } }
        #expect(prefs.value(forKey: "k7", as: Int.self) == 7)
        prefs["k7"] = 2.5
        #expect(prefs.value(forKey: "k7", as: Int.self) == (prefs["k7"] as? Int))
        #expect(prefs.value(forKey: "k7", as: Double.self) == 2.5)
        prefs["k8"] = true
        #expect(prefs.value(forKey: "k8", as: Bool.self) == true)
        #expect(prefs.value(forKey: "k8", as: Int.self) == (prefs["k8"] as? Int))
        prefs["k9"] = "text"
        #expect(prefs.value(forKey: "k9", as: Int.self) == nil)
        prefs.batch { for n in 0..<300 { $0["k\(n)"] = n * 2 } }
        for n in [0, 7, 8, 9, 299] { #expect(prefs.value(forKey: "k\(n)", as: Int.self) == n * 2) }
        #expect(prefs.lastError == nil)
    }

    // MARK: - Own writes

    @Test("a set beside one this process writes keeps its version, and still sees others' changes")
    func ownWritesChain() async throws {
        let suite = TestSuite("scale")
        defer { suite.remove() }
        let written = ScalePrefs(key: "Written", store: suite.store)
        let beside = ScalePrefs(key: "Beside", store: suite.store)
        beside["k1"] = 1
        let events = LockedEvents()
        let observation = beside.observeChanges { events.append($0.keys) }
        defer { observation.cancel() }
        for n in 0..<20 { written["k0"] = n }
        #expect(beside.value(forKey: "k1", as: Int.self) == 1)
        // Someone else changes the set beside: seen, as before.
        let other = ScalePrefs(key: "Beside", store: try #require(UserDefaultsStore(suiteName: suite.name)))
        other["k1"] = 2
        try await waitUntil { beside.value(forKey: "k1", as: Int.self) == 2 }
        #expect(beside.value(forKey: "k1", as: Int.self) == 2)
        #expect(events.all.contains(["k1"]))
        #expect(written.lastError == nil && beside.lastError == nil)
    }

    @Test("the chain of own writes: only writes that left a key alone prove it unchanged")
    func ownWritesLinks() {
        let url = URL(fileURLWithPath: "/nonexistent/own-writes-\(UUID().uuidString).plist")
        PlistFile.OwnWrites.record(url, from: 1, to: 2, keys: ["A"])
        PlistFile.OwnWrites.record(url, from: 2, to: 3, keys: ["A"])
        PlistFile.OwnWrites.record(url, from: 3, to: 4, keys: ["B"])
        #expect(PlistFile.OwnWrites.untouched("B", in: url, from: 1, to: 3))
        #expect(!PlistFile.OwnWrites.untouched("B", in: url, from: 1, to: 4))  // B was written on the way
        #expect(!PlistFile.OwnWrites.untouched("A", in: url, from: 1, to: 2))
        #expect(PlistFile.OwnWrites.untouched("C", in: url, from: 1, to: 4))
        #expect(!PlistFile.OwnWrites.untouched("C", in: url, from: 1, to: 9))  // a version no own write made
        #expect(!PlistFile.OwnWrites.untouched("C", in: url, from: 4, to: 1))  // never backwards
    }
}

/// Keys of change events, collected from any thread.
final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [Set<String>] = []
    func append(_ keys: Set<String>) {
        lock.lock()
        events.append(keys)
        lock.unlock()
    }
    var all: [Set<String>] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }
}

/// Waits up to 10 s for `condition`.
func waitUntil(_ condition: () -> Bool) async throws {
    for _ in 0..<1000 where !condition() { try await Task.sleep(nanoseconds: 10_000_000) }
}

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
@Suite("Large sets: the write path's shortcuts", waitLimit)
struct ScaleTests {
    // MARK: - XML fragments for the ledger

    @Test("a value's XML cut from the suite's document is the ledger's own encoding of it", arguments: Array(0..<XMLWriterTests.kinds().count))
    func fragments(index: Int) throws {
        let (name, value) = XMLWriterTests.kinds()[index]
        guard let normalized = PlistValue.normalized(value) else { return }  // refused values are never written
        let suite: [String: Any] = ["a": 1, "m": normalized, "z": ["x": normalized] as [String: Any]]
        guard let (data, ranges, _) = PlistXML.document(ranging: suite) else {
            // Refused by the writer (a date CoreFoundation cannot read back): so is the ledger's encoding.
            #expect(PlistXML.document(["v": normalized]) == nil, "\(name)")
            return
        }
        for key in suite.keys {
            let span = try #require(ranges[key], "\(name): \(key)")
            #expect(PlistXML.wrapped(data[span]) == SuiteLedger.xml(suite[key]), "\(name): \(key)")
        }
        #expect(data == PlistXML.document(suite), "\(name)")
    }

    @Test("a large dictionary's lines are reused for the same storage only, and never when it holds an object that can change")
    func rememberedLines() throws {
        var set: [String: Any] = [:]
        for n in 0..<100 { set["k\(n)"] = n % 2 == 0 ? NSNumber(value: n) : "text \(n)" }
        let first = try #require(PlistXML.document(["Big": set]))
        #expect(PlistXML.document(["Big": set, "a": 1]) != nil)  // the same storage again, beside another key
        #expect(PlistXML.document(["Big": set]) == first)
        // Equal contents in another storage: the same bytes.
        #expect(PlistXML.document(["Big": Dictionary(uniqueKeysWithValues: set.map { ($0.key, $0.value) })]) == first)
        // A changed value: another storage, written with the new value.
        var changed = set
        changed["k0"] = NSNumber(value: -1)
        let written = try #require(PlistXML.document(["Big": changed]))
        #expect(String(decoding: written, as: UTF8.self).contains("<integer>-1</integer>"))
        // An object that changes while the dictionary holding it stays the same storage.
        let text = NSMutableString(string: "before")
        var holding = set
        holding["k1"] = text
        let before = try #require(PlistXML.document(["Big": holding]))
        text.setString("after")
        let after = try #require(PlistXML.document(["Big": holding]))
        #expect(String(decoding: before, as: UTF8.self).contains("<string>before</string>"))
        #expect(String(decoding: after, as: UTF8.self).contains("<string>after</string>"))
    }

    @Test("a large dictionary with values changed is written byte for byte as its fresh encoding")
    func rememberedEntries() throws {
        var set: [String: Any] = [:]
        for n in 0..<120 { set["n\(n)"] = NSNumber(value: n) }
        _ = try #require(PlistXML.document(["Big": set]))
        var changed = set
        changed["n5"] = NSNumber(value: 12_345)
        changed["n77"] = "now a string"
        let derived = try #require(PlistXML.document(["Big": changed]))
        // The same values in new objects: no memo can serve them, so every line is encoded.
        let copy = changed.mapValues { value -> Any in (value as? NSNumber).map { NSNumber(value: $0.intValue) } ?? value }
        #expect(try #require(PlistXML.document(["Big": copy])) == derived)
        let parsed = try #require(try PropertyListSerialization.propertyList(from: derived, format: nil) as? [String: Any])
        #expect(PlistValue.changedKeys(PlistValue.loadedOrAsIs(try #require(parsed["Big"] as? [String: Any])), changed).isEmpty)

        // A key spelled in another normalisation of the same characters is written as it is held.
        var precomposed = set
        precomposed["\u{E9}"] = NSNumber(value: 1)
        _ = try #require(PlistXML.document(["Big": precomposed]))
        var decomposed = set
        decomposed["e\u{301}"] = precomposed["\u{E9}"]  // the same object
        let written = try #require(PlistXML.document(["Big": decomposed]))
        #expect(written.range(of: Data("<key>e\u{301}</key>".utf8)) != nil)
        #expect(written.range(of: Data("<key>\u{E9}</key>".utf8)) == nil)
    }

    // MARK: - Large sets in a suite file

    /// A suite holding a 1,000-key set, "k0" … "k999" = 0 … 999, under the root key "Wide".
    static func wideSet(_ name: String) -> (TestSuite, ScalePrefs) {
        let suite = TestSuite(name)
        let prefs = ScalePrefs(key: "Wide", store: suite.store)
        prefs.batch { prefs in for n in 0..<1000 { prefs["k\(n)"] = n } }
        return (suite, prefs)
    }

    @Test("one-key writes and batches into a 1,000-key set leave the file as Foundation reads it", .linuxSuiteFiles)
    func largeSetFile() throws {
        let (suite, prefs) = Self.wideSet("scale")
        defer { suite.remove() }
        for round in 0..<5 {
            prefs["k\(round * 7)"] = "round \(round)"
            prefs["k999"] = round
            prefs.batch { prefs in for n in 0..<12 { prefs["k\(n * 50)"] = Double(round) + 0.5 } }
            try prefs.addMissingValues(["k1000": "new"])
        }
        #expect(prefs.lastError == nil)
        let file = URL(fileURLWithPath: suite.path)
        let parsed = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil) as? [String: Any])
        let stored = try #require(parsed["Wide"] as? [String: Any])
        #expect(stored.count == 1001)
        #expect(PlistValue.changedKeys(PlistValue.loadedOrAsIs(stored), prefs.values).isEmpty)
        #expect(stored["k28"] as? String == "round 4")
        #expect(stored["k999"] as? Int == 4)
        #expect(stored["k550"] as? Double == 4.5)
        #expect(try Data(contentsOf: file) == PlistXML.document(parsed))
    }

    @Test("a batch tells observers exactly the keys it changed, and writes its set as Foundation reads it", .linuxSuiteFiles)
    func batchReportsItsChanges() throws {
        let (suite, prefs) = Self.wideSet("scale-report")
        defer { suite.remove() }
        let log = EventLog()
        let observation = prefs.observeChanges { log.append($0) }
        defer { observation.cancel() }
        func stored() throws -> [String: Any] {
            let data = try Data(contentsOf: URL(fileURLWithPath: suite.path))
            #expect(data == PlistXML.document(try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])))
            let parsed = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
            return PlistValue.loadedOrAsIs(try #require(parsed["Wide"] as? [String: Any]))
        }

        // Every key written, the even ones with the values they hold: only the odd ones changed.
        prefs.batch { prefs in for n in 0..<1000 { prefs["k\(n)"] = n % 2 == 0 ? n : n + 1 } }
        #expect(log.keys.last == Set((0..<1000).filter { $0 % 2 == 1 }.map { "k\($0)" }))
        #expect(PlistValue.changedKeys(try stored(), prefs.values).isEmpty)
        // The same number of another kind is a change; an equal one is not.
        prefs.batch { prefs in
            prefs["k0"] = 0.0
            prefs["k2"] = 2
        }
        #expect(log.keys.last == ["k0"])
        // Keys removed and added beside the values replaced: each of them, and nothing else.
        prefs.batch { prefs in
            for n in 0..<1000 { prefs["k\(n)"] = n + 2 }
            prefs["k5"] = nil
            prefs["k1500"] = nil  // not stored: no change
            prefs["k1000"] = "new"
        }
        #expect(log.keys.last == Set((0...1000).map { "k\($0)" }))
        let after = try stored()
        #expect(after.count == 1000 && after["k5"] == nil && after["k1000"] as? String == "new")
        #expect(PlistValue.changedKeys(after, prefs.values).isEmpty)
        #expect(log.events.count == 3)
        #expect(prefs.lastError == nil)
    }

    @Test("exactly: a value of exactly that type, read in place; nil for any other")
    func exactly() {
        let object = ExactlyBase()
        #expect(PlistValue.exactly(object, ExactlyBase.self) === object)
        #expect(PlistValue.exactly(ExactlySubclass(), ExactlyBase.self) == nil)  // a subclass is another type
        // `NSNumber(value:)` is exactly an NSNumber in corelibs Foundation; on Apple platforms it is
        // a private subclass (`__NSCFNumber`), which `exactly` declines like any subclass.
        let number = NSNumber(value: 42)
        #expect((PlistValue.exactly(number, NSNumber.self) === number) == (type(of: number) == NSNumber.self))
        #if !canImport(ObjectiveC)
            #expect(PlistValue.exactly(number, NSNumber.self) === number)
        #endif
        #expect(PlistValue.exactly(7, Int.self) == 7)
        #expect(PlistValue.exactly(-2.5, Double.self) == -2.5)
        #expect(PlistValue.exactly(true, Bool.self) == true)
        #expect(PlistValue.exactly(false, Bool.self) == false)
        #expect(PlistValue.exactly(String(repeating: "long ", count: 20), String.self) == String(repeating: "long ", count: 20))
        let big: Any = ["a": NSNumber(value: 1)] as [String: Any]
        #expect(PlistValue.exactly(big, [String: Any].self)?.count == 1)
        #expect(PlistValue.exactly(7, NSNumber.self) == nil)  // an Int is no NSNumber here
        #expect(PlistValue.exactly(number, Int.self) == nil)
        #expect(PlistValue.exactly(Int32(7), Int.self) == nil)
        #expect(PlistValue.exactly("7", Int.self) == nil)
        #expect(PlistValue.exactly(NSString(string: "x"), String.self) == nil)
    }

    // MARK: - Identity

    @Test("identical: known equal without looking inside (the same object or storage); same: equality of stored values")
    func identity() {
        let number = NSNumber(value: 5)
        let twin = NSNumber(value: 5)
        let text = String(repeating: "long text ", count: 10)
        let array: [Any] = [1, 2]
        #expect(PlistValue.identical(number, number))
        #expect(!PlistValue.identical(number, NSNumber(value: 6)))
        #expect(!PlistValue.identical(number, 5))  // another type
        #expect(PlistValue.identical(text, text))
        #expect(PlistValue.same(array, array))  // `identical` does not look into an array of Any
        #expect(PlistValue.identical(["a", "b"], ["a", "b"]))
        #expect(PlistValue.identical(["k": array] as [String: Any], ["k": array] as [String: Any]) == false)  // two storages
        #expect(!PlistValue.identical(nil, nil))
        #expect(!PlistValue.identical(number, nil))
        #expect(PlistValue.same(number, twin))
        #expect(!PlistValue.same(NSNumber(value: 1), NSNumber(value: true)))  // kind counts
        #expect(PlistValue.same(["a": number] as [String: Any], ["a": twin] as [String: Any]))
        #expect(!PlistValue.same(["a": number] as [String: Any], ["a": NSNumber(value: 6)] as [String: Any]))
        #expect(!PlistValue.same(["a": number] as [String: Any], number))
    }

    // MARK: - Parse cache

    @Test("a file rewritten by someone else is read again, not taken from the cache", .linuxSuiteFiles)
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
        PlistFile.OwnWrites.follow()
        PlistFile.OwnWrites.remember(url.path, from: 1, to: 2, keys: ["A"])
        PlistFile.OwnWrites.remember(url.path, from: 2, to: 3, keys: ["A"])
        PlistFile.OwnWrites.remember(url.path, from: 3, to: 4, keys: ["B"])
        #expect(PlistFile.OwnWrites.untouched("B", in: url.path, from: 1, to: 3))
        #expect(!PlistFile.OwnWrites.untouched("B", in: url.path, from: 1, to: 4))  // B was written on the way
        #expect(!PlistFile.OwnWrites.untouched("A", in: url.path, from: 1, to: 2))
        #expect(PlistFile.OwnWrites.untouched("C", in: url.path, from: 1, to: 4))
        #expect(!PlistFile.OwnWrites.untouched("C", in: url.path, from: 1, to: 9))  // a version no own write made
        #expect(!PlistFile.OwnWrites.untouched("C", in: url.path, from: 4, to: 1))  // never backwards
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

/// A class and a subclass, for ``ScaleTests/exactly()``: exact types the same on every platform.
private class ExactlyBase {}
private final class ExactlySubclass: ExactlyBase {}

import Foundation
import PersistentPrefs
import Testing

/// Values read back cast with `as?` the way they do from Apple's UserDefaults, in this
/// process (from memory) and after a round trip through a store.
@Suite("Values read back: Apple's as? rules on every platform")
struct ValueShapeTests {
    static var mixed: [String: Any] {
        [
            "Int": 10, "String": "Ten", "Float": Float(12.3), "Double": 45.6, "Bool": true,
            "Array": [1, 2, 3], "Dictionary": ["One": 1, "Two": 2],
            "Date": Date(timeIntervalSince1970: 1_700_000_000), "Data": Data([1, 2, 255]),
            "Nested": ["a": ["b": ["x", "y"]]],
        ]
    }

    static func check(_ values: [String: Any]) {
        #expect(values["Int"] as? Int == 10)
        #expect(values["Int"] as? Double == 10)
        #expect(values["String"] as? String == "Ten")
        #expect(values["Float"] as? Float == Float(12.3))
        #expect(values["Double"] as? Double == 45.6)
        #expect(values["Bool"] as? Bool == true)
        #expect(values["Array"] as? [Int] == [1, 2, 3])
        #expect(values["Dictionary"] as? [String: Int] == ["One": 1, "Two": 2])
        #expect(values["Date"] as? Date == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(values["Data"] as? Data == Data([1, 2, 255]))
        #expect(values["Nested"] as? [String: [String: [String]]] == ["a": ["b": ["x", "y"]]])
    }

    @Test("from memory, right after the write")
    func inMemory() {
        let prefs = MixedPrefs(key: "k", values: Self.mixed, store: InMemoryStore())
        #expect(prefs.lastError == nil)
        Self.check(prefs.values)
        #expect(prefs.float == Float(12.3))
    }

    @Test("after a reload from a UserDefaults suite")
    func afterReload() {
        let suite = TestSuite()
        defer { suite.remove() }
        let prefs = MixedPrefs(key: "k", values: Self.mixed, store: suite.store)
        #expect(prefs.lastError == nil)
        prefs.flush()
        #expect(prefs.lastError == nil)
        Self.check(prefs.values)
    }

    @Test("RVS scenario: instances and root keys see each other's typed values")
    func rvsMixedScenario() {
        let store = InMemoryStore()
        let initial: [String: Any] = ["Int": 10, "String": "Ten", "Float": Float(12.3), "Double": 45.6, "Bool": true]
        let first = MixedPrefs(values: initial, store: store)
        let second = MixedPrefs(store: store)
        #expect(second.float == Float(12.3))
        _ = MixedPrefs(values: ["Int": 20, "String": "Twenty"], store: store)
        #expect(first.int == 20 && second.int == 20)
        #expect(first.float == Float(12.3))
        let third = MixedPrefs(key: "third", values: initial, store: store)
        #expect(third.int == 10)
        #expect(first.int == 20)
    }

    static let numbers: [Sample] = [
        Sample("0", 0), Sample("1", 1), Sample("-1", -1), Sample("true", true), Sample("false", false),
        Sample("12.5", 12.5), Sample("5.0", 5.0), Sample("Float 12.3", Float(12.3)), Sample("Float 0.1", Float(0.1)),
        Sample("Double 0.1", 0.1), Sample("Int.max", Int.max), Sample("Int.min", Int.min),
        Sample("2^53", 9_007_199_254_740_992), Sample("2^53 + 1", 9_007_199_254_740_993),
        Sample("UInt64.max", UInt64.max), Sample("1e300", 1e300), Sample("-0.0", -0.0),
        Sample("infinity", Double.infinity), Sample("Int8 -8", Int8(-8)), Sample("9.3e18", 9.3e18),
    ]

    @Test("value(forKey:as:) answers exactly as `as?` does", arguments: numbers)
    func typedReadAgreesWithCast(sample: Sample) {
        let prefs = MixedPrefs(key: "k", values: ["Int": sample.value], store: InMemoryStore())
        let raw = prefs["Int"]
        #expect(prefs.value(forKey: "Int", as: Int.self) == raw as? Int)
        #expect(prefs.value(forKey: "Int", as: Double.self) == raw as? Double)
        #expect(prefs.value(forKey: "Int", as: Float.self) == raw as? Float)
        #expect(prefs.value(forKey: "Int", as: Bool.self) == raw as? Bool)
        #expect(prefs.value(forKey: "Int", as: String.self) == nil)
        #expect(prefs.value(forKey: "Missing", as: Int.self) == nil)
    }

    @Test("value(forKey:as:) reads non-numeric types")
    func typedReadOtherTypes() {
        let prefs = MixedPrefs(key: "k", values: Self.mixed, store: InMemoryStore())
        #expect(prefs.value(forKey: "String", as: String.self) == "Ten")
        #expect(prefs.value(forKey: "Array", as: [Int].self) == [1, 2, 3])
        #expect(prefs.value(forKey: "Dictionary", as: [String: Int].self) == ["One": 1, "Two": 2])
        #expect(prefs.value(forKey: "String", as: Int.self) == nil)
        #expect(prefs.value(forKey: "Date", as: Date.self) == Date(timeIntervalSince1970: 1_700_000_000))
    }
}

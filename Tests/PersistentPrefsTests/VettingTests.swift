import Foundation
import PersistentPrefs
import Testing

/// A subclass that accepts any key named "k" or "a"…"e", for vetting tables.
private final class AnyValuePrefs: PersistentPrefs {
    override var keys: [String] { ["k", "a", "b", "c", "d", "e"] }
}

/// A labelled value, so parameterised test names say what was stored.
struct Sample: CustomTestStringConvertible, @unchecked Sendable {
    let label: String
    let value: Any
    init(_ label: String, _ value: Any) {
        self.label = label
        self.value = value
    }
    var testDescription: String { label }
}

@Suite("Vetting: what a set accepts and refuses")
struct VettingTests {
    static let storable: [Sample] = [
        Sample("String", "text"), Sample("empty String", ""), Sample("Unicode String", "ünï 🎉"),
        Sample("Bool", true), Sample("Int", 42), Sample("Int.min", Int.min), Sample("Int.max", Int.max),
        Sample("Int8", Int8(-8)), Sample("Int16", Int16(16)), Sample("Int32", Int32(-32)),
        Sample("Int64", Int64(64)), Sample("UInt", UInt(7)), Sample("UInt8", UInt8(8)),
        Sample("UInt16", UInt16(16)), Sample("UInt32", UInt32(32)), Sample("UInt64.max", UInt64.max),
        Sample("Double", 45.6), Sample("Float", Float(12.3)), Sample("Date", Date()),
        Sample("Data", Data([1, 2, 3])), Sample("empty Data", Data()),
        Sample("NSNumber", NSNumber(value: 3)), Sample("NSString", NSString(string: "ns")),
        Sample("[String]", ["a", "b"]), Sample("[Int]", [1, 2]), Sample("empty array", [Any]()),
        Sample("[String: Int]", ["a": 1]), Sample("empty dictionary", [String: Any]()),
        Sample("nested 5 deep", ["a": [["b": [["c": 1]]]]]),
        Sample("mixed array", [1, "two", 3.0, true, Date(), Data()] as [Any]),
        Sample("Optional.some", Optional(5) as Any),
        Sample("[AnyHashable: Any] with String keys", [AnyHashable("a"): 1] as [AnyHashable: Any]),
    ]

    static let unstorable: [Sample] = [
        Sample("struct", NotStorableStruct()), Sample("class", NotStorableClass()),
        Sample("enum", NotStorableEnum.value), Sample("NSNull", NSNull()),
        Sample("Optional.none", Optional<Int>.none as Any), Sample("URL", URL(string: "https://x.org/a")!),
        Sample("UUID", UUID()), Sample("Decimal", Decimal(1.25)), Sample("NSDecimalNumber", NSDecimalNumber(value: 1.25)),
        Sample("[Int: String]", [1: "one"]), Sample("Set", Set([1, 2])), Sample("Character", Character("c")),
        Sample("Substring", "abc".dropFirst()), Sample("closure", { () -> Void in }),
        Sample("tuple", (1, 2)), Sample("nil inside an array", [1, nil, 3] as [Int?]),
        Sample("NSNull inside a dictionary", ["a": NSNull()]),
        Sample("struct 4 levels down", ["a": ["b": [["c": NotStorableStruct()]]]]),
        Sample("URL inside an array", [URL(fileURLWithPath: "/tmp")]),
        Sample("non-String key inside", ["a": [1: 2]]),
        Sample("NSDictionary with a number key", NSDictionary(dictionary: [NSNumber(value: 1): "x"])),
    ]

    @Test("a storable value is written, top level and nested", arguments: storable)
    func acceptsStorable(sample: Sample) throws {
        let prefs = AnyValuePrefs(key: "root", store: InMemoryStore())
        prefs.values = ["k": sample.value]
        #expect(prefs.lastError == nil)
        #expect(prefs.count == 1)
        prefs["a"] = ["inner": sample.value]
        #expect(prefs.lastError == nil)
        #expect(prefs.count == 2)
    }

    @Test("an unstorable value is refused, nothing changes, the key is named", arguments: unstorable)
    func refusesUnstorable(sample: Sample) throws {
        let store = InMemoryStore()
        let prefs = AnyValuePrefs(key: "root", values: ["a": 1], store: store)
        prefs.values = ["k": sample.value, "a": 2]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["k"]))
        #expect(prefs["a"] as? Int == 1)
        #expect(try store.load(root: "root")?["a"] as? Int == 1)

        prefs["b"] = [sample.value]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["b"]))
        #expect(prefs["b"] == nil)
        #expect(throws: PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: ["c"])) {
            try prefs.set(["deep": [sample.value]], forKey: "c")
        }
        #expect(try store.load(root: "root")?.count == 1)
    }

    @Test("several refused keys are reported sorted, by their top-level key")
    func refusedKeysSorted() {
        let prefs = AnyValuePrefs(key: "root", store: InMemoryStore())
        prefs.values = ["e": NSNull(), "a": [["x": UUID()]], "c": 1, "b": NotStorableEnum.value]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["a", "b", "e"]))
        #expect(prefs.values.isEmpty)
    }

    @Test("unknown keys are checked before values and reported sorted")
    func unknownKeysFirst() {
        let prefs = AnyValuePrefs(key: "root", store: InMemoryStore())
        prefs.values = ["zeta": 1, "alpha": NSNull(), "k": NSNull()]
        #expect(prefs.lastError == .incorrectKeys(invalidElements: ["alpha", "zeta"]))
    }
}

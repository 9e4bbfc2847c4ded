import Foundation
import PersistentPrefs
import Testing

/// SplitMix64: a small, seeded generator, so a failing tree can be reproduced from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random value trees, storable and not, depth ≤ 5, with edge values mixed in: the first and
/// last storable dates, dates no store reads back (NaN, infinite, beyond the year 9999),
/// non-finite numbers, and chains nested exactly to the depth limit and one beyond.
struct TreeMaker {
    var random: SeededGenerator
    private struct Opaque { let x = 1 }

    /// A value and whether a property list can hold it.
    mutating func value(depth: Int) -> (Any, Bool) {
        let roll = Int.random(in: 0..<110, using: &random)
        if depth < 5 && roll < 12 {
            var array: [Any] = []
            var storable = true
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let (element, ok) = value(depth: depth + 1)
                array.append(element)
                storable = storable && ok
            }
            return (array, storable)
        }
        if depth < 5 && roll < 24 {
            var dictionary: [String: Any] = [:]
            var storable = true
            for index in 0..<Int.random(in: 0...4, using: &random) {
                let (element, ok) = value(depth: depth + 1)
                dictionary["k\(index)-\(text())"] = element
                storable = storable && ok
            }
            return (dictionary, storable)
        }
        switch roll {
        case 24..<34: return ([Int64.min, Int64.max, 0, -1, Int64.random(in: .min ... .max, using: &random)].randomElement(using: &random)!, true)
        case 34..<42: return ([0.0, -0.0, 1e308, -1e-308, Double.random(in: -1e9...1e9, using: &random)].randomElement(using: &random)!, true)
        case 42..<46: return (Float.random(in: -1e6...1e6, using: &random), true)
        case 46..<52: return (Bool.random(using: &random), true)
        case 52..<66: return (text(), true)
        case 66..<72: return (Date(timeIntervalSince1970: Double.random(in: -1e9...4e9, using: &random)), true)
        case 72..<78: return (Data((0..<Int.random(in: 0...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }), true)
        case 78..<80: return (UInt8.random(in: 0...255, using: &random), true)
        case 80..<84: return (NSNull(), false)
        case 84..<87: return (Opaque(), false)
        case 87..<90: return (URL(fileURLWithPath: "/tmp/\(text())"), false)
        case 90..<92: return (UUID(), false)
        case 92..<95: return ([1, nil, 3] as [Int?], false)
        case 95..<97: return ([1: "one"], false)
        case 97..<100: return (Decimal(Double.random(in: 0...10, using: &random)), false)
        case 100..<103:
            let seconds = [-63_113_904_000, 252_423_993_599, 0.5, -0.25].randomElement(using: &random)!
            return (Date(timeIntervalSinceReferenceDate: seconds), true)
        case 103..<105:
            let seconds = [Double.nan, .infinity, -.infinity, 1e300, -1e17, 252_423_993_600].randomElement(using: &random)!
            return (Date(timeIntervalSinceReferenceDate: seconds), false)
        case 105..<107: return ([Double.nan, .infinity, -.infinity].randomElement(using: &random)!, true)
        // A value at `depth` is inside `depth - 1` containers: the chain ends at the limit (100), or one beyond.
        case 107: return (Self.chain(depth: 101 - depth, dictionaries: false), true)
        case 108: return (Self.chain(depth: 102 - depth, dictionaries: Bool.random(using: &random)), false)
        default: return (Self.chain(depth: 101 - depth, dictionaries: true), true)
        }
    }

    /// A set with a random value under each of `keys`, or `nil` when some value cannot be
    /// stored (the caller draws again).
    mutating func storableSet(keys: [String]) -> [String: Any]? {
        var set: [String: Any] = [:]
        var storable = true
        for key in keys {
            let (value, ok) = value(depth: 1)
            set[key] = value
            storable = storable && ok
        }
        return storable ? set : nil
    }

    /// Arrays (or dictionaries) nested `depth` deep around a string.
    static func chain(depth: Int, dictionaries: Bool) -> Any {
        var value: Any = "leaf"
        for _ in 0..<depth { value = dictionaries ? ["k": value] as [String: Any] : [value] }
        return value
    }

    mutating func text() -> String {
        let pool = Array("abcXYZ 09_-./\\\"'<>&é日本🎉\n\t")
        return String((0..<Int.random(in: 0...8, using: &random)).map { _ in pool.randomElement(using: &random)! })
    }
}

/// Exact equality of property-list values as the library hands them back.
func plistEqual(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (a as String, b as String): return a == b
    case let (a as Date, b as Date): return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
    case let (a as Data, b as Data): return a == b
    case let (a as NSNumber, b as NSNumber):
        let (x, y) = (a as Any, b as Any)
        return x as? Int == y as? Int && (x as? Double)?.bitPattern == (y as? Double)?.bitPattern
            && x as? Bool == y as? Bool && (x as? UInt64) == (y as? UInt64)
    case let (a as [Any], b as [Any]): return a.count == b.count && zip(a, b).allSatisfy { plistEqual($0, $1) }
    case let (a as [String: Any], b as [String: Any]):
        return a.count == b.count && a.allSatisfy { key, value in b[key].map { plistEqual(value, $0) } ?? false }
    default: return false
    }
}

final class TreePrefs: PersistentPrefs {
    override var keys: [String] { ["a", "b", "c", "d", "e"] }
}

@Suite("Random value trees")
struct RandomTreeTests {
    /// `PREFS_RANDOM_SEED` and `PREFS_RANDOM_TREES` run other seeds and longer runs.
    static let seed = ProcessInfo.processInfo.environment["PREFS_RANDOM_SEED"].flatMap { UInt64($0) } ?? 20_261_123
    static let trees = ProcessInfo.processInfo.environment["PREFS_RANDOM_TREES"].flatMap { Int($0) } ?? 10_000

    @Test("every accepted tree round-trips exactly through PlistFileStore; every refused one names the right keys")
    func randomTrees() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = TreePrefs(key: "tree", store: store)
        var maker = TreeMaker(random: SeededGenerator(state: Self.seed))
        var accepted = 0
        var refused = 0
        var failures = 0
        for index in 0..<Self.trees {
            var tree: [String: Any] = [:]
            var unstorable: [String] = []
            for key in ["a", "b", "c", "d", "e"] where Bool.random(using: &maker.random) {
                let (value, storable) = maker.value(depth: 1)
                tree[key] = value
                if !storable { unstorable.append(key) }
            }
            prefs.values = tree
            if unstorable.isEmpty {
                accepted += 1
                let reloaded = prefs.lastError == nil ? try prefs.reload() : [:]
                let expected = tree.mapValues { value -> Any in
                    // What the tree means as a property list: the library's own normalised form.
                    TreePrefs(key: "normal", values: ["a": value], store: InMemoryStore()).values["a"] as Any
                }
                if prefs.lastError != nil || !plistEqual(reloaded, expected) {
                    failures += 1
                    if failures <= 3 { print("[random trees] seed \(Self.seed) tree \(index): \(tree) came back as \(reloaded)") }
                }
            } else {
                refused += 1
                if prefs.lastError != .valuesNotPlistCompatible(invalidElements: unstorable.sorted()) {
                    failures += 1
                    if failures <= 3 { print("[random trees] seed \(Self.seed) tree \(index): expected \(unstorable.sorted()) refused, got \(String(describing: prefs.lastError))") }
                }
            }
        }
        print("[random trees] seed \(Self.seed): \(Self.trees) trees, \(accepted) accepted and round-tripped, \(refused) refused, \(failures) wrong")
        #expect(failures == 0)
    }
}

// An RVS_PersistentPrefs subclass written exactly the way RVS documents one (its README and its
// test harnesses' shared subclass), with only the base class renamed. Built in Swift 5 mode:
// if a change to PersistentPrefs breaks such a subclass, this target stops compiling.

import Foundation
import PersistentPrefs

/// The RVS "common preferences" shape: explicit keys, defaults, typed accessors that cast
/// `values`, a keyed initialiser that writes defaults, and the overrides RVS allows.
public class RVSStyleTestSet: PersistentPrefs {
    private static let _myKeys: [String] = ["Integer Value", "String Value", "Array Value", "Dictionary Value", "Date Value"]

    private static let _myValues: [String: Any] = [
        "Integer Value": 12345, "String Value": "Any String", "Array Value": ["One", "Two", "Three"],
        "Dictionary Value": ["One": "1", "Two": "2"], "Date Value": Date(timeIntervalSince1970: 1_600_000_000),
    ]

    private enum _ValueIndexes: Int {
        case int, string, array, dictionary, date
    }

    /// Tests point every instance at a suite of their own (RVS documents overriding
    /// `userDefaults` "to inject a particular store, for example an isolated suite for testing").
    @TaskLocal static var isolatedSuite: String?

    /// The test's suite object, one per name (instances share their sets by object).
    static var isolatedDefaults: UserDefaults? {
        guard let name = isolatedSuite else { return nil }
        suitesLock.lock()
        defer { suitesLock.unlock() }
        if let existing = suites[name] { return existing }
        let opened = UserDefaults(suiteName: name)
        suites[name] = opened
        return opened
    }

    private static var suites: [String: UserDefaults] = [:]
    private static let suitesLock = NSLock()

    override public var keys: [String] {
        return type(of: self)._myKeys
    }

    override open var userDefaults: UserDefaults? {
        return RVSStyleTestSet.isolatedDefaults ?? super.userDefaults
    }

    /// RVS lets a subclass override `count`.
    override open var count: Int {
        return super.count
    }

    public var int: Int {
        get {
            if let ret = values[keys[_ValueIndexes.int.rawValue]] as? Int {
                return ret
            } else {
                return 0
            }
        }

        set {
            return values[keys[_ValueIndexes.int.rawValue]] = newValue
        }
    }

    public var string: String {
        get {
            let value = values[keys[_ValueIndexes.string.rawValue]] as? String ?? ""
            return value
        }

        set {
            return values[keys[_ValueIndexes.string.rawValue]] = newValue
        }
    }

    public var array: [String] {
        get { return values[keys[_ValueIndexes.array.rawValue]] as? [String] ?? [] }
        set { return values[keys[_ValueIndexes.array.rawValue]] = newValue }
    }

    public var dictionary: [String: String] {
        get { return values[keys[_ValueIndexes.dictionary.rawValue]] as? [String: String] ?? [:] }
        set { return values[keys[_ValueIndexes.dictionary.rawValue]] = newValue }
    }

    public var date: Date {
        get { return values[keys[_ValueIndexes.date.rawValue]] as? Date ?? Date() }
        set { return values[keys[_ValueIndexes.date.rawValue]] = newValue }
    }

    /// The RVS README's keyed initialiser: load, then write the defaults if nothing was stored.
    public init(key inKey: String) {
        super.init(key: inKey)
        if values.isEmpty {
            values = type(of: self)._myValues
        }
    }

    /// RVS's designated initialiser, overridden with its implicitly unwrapped parameters and
    /// forwarded to `super` unchanged (`nil` included).
    override public init(key inKey: String! = nil, values inValues: [String: Any]! = [:]) {
        super.init(key: inKey, values: inValues)
    }

    /// RVS's own unit tests declare their subclass without initialisers and read `values` directly.
    public override init() {
        super.init()
    }
}

/// RVS's unit-test subclass shape: keys only, read-only accessors.
class RVSStyleSimpleSet: PersistentPrefs {
    override public var keys: [String] {
        _ = super.keys
        return ["First", "Next", "Test", "Last"]
    }

    override open var userDefaults: UserDefaults? {
        return RVSStyleTestSet.isolatedDefaults ?? super.userDefaults
    }

    var first: Int { return values["First"] as? Int ?? 0 }
    var next: String { return values["Next"] as? String ?? "" }
    var test: Bool { return values["Test"] as? Bool ?? false }
    var last: Double { return values["Last"] as? Double ?? 0.0 }
}

import Foundation
import PersistentPrefs

/// An RVS-style subclass: explicit keys, hand-written accessors.
final class MixedPrefs: PersistentPrefs {
    override var keys: [String] {
        ["Int", "String", "Float", "Double", "Bool", "Array", "Dictionary", "Date", "Data", "Nested", "Other"]
    }

    var int: Int {
        get { values["Int"] as? Int ?? 0 }
        set { values["Int"] = newValue }
    }

    var float: Float {
        get { values["Float"] as? Float ?? .nan }
        set { values["Float"] = newValue }
    }
}

/// A subclass that overrides the initialiser the way RVS_PersistentPrefs' own tests do,
/// with implicitly unwrapped parameters.
final class RVSStylePrefs: PersistentPrefs {
    override var keys: [String] { ["Int", "String"] }

    override init(key inKey: String! = nil, values inValues: [String: Any]! = [:]) {
        super.init(key: inKey, values: inValues)
    }

    var int: Int {
        get {
            if let ret = values["Int"] as? Int { return ret }
            return 0
        }
        set { values["Int"] = newValue }
    }
}

/// A subclass whose root key is fixed by an override.
final class FixedKeyPrefs: PersistentPrefs {
    override var keys: [String] { ["A"] }
    override var key: String {
        get { "Fixed Root" }
        set { super.key = newValue }
    }
}

/// Values no property list can hold.
struct NotStorableStruct { let value = 1 }
final class NotStorableClass {}
enum NotStorableEnum: String { case value }

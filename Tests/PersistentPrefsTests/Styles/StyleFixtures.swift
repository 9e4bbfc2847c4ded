import Foundation
import PersistentPrefs
import Testing

enum Planet: String { case mercury, venus, earth, mars }

struct Flags: OptionSet {
    let rawValue: Int
    static let a = Flags(rawValue: 1)
    static let b = Flags(rawValue: 4)
}

/// The article's `UserSettings`, on a suite of the test's own instead of `.standard`.
struct UserSettings {
    private enum SettingsKey: CodingKey {
        case age
        case name
        case planet
    }

    private let storage: UserDefaultsContainer<SettingsKey>

    init(userDefaults: UserDefaults) {
        storage = UserDefaultsContainer(keyedBy: SettingsKey.self, userDefaults: userDefaults)
    }

    var age: Int? {
        get { storage[.age] }
        set { storage[.age] = newValue }
    }

    var name: String? {
        get { storage[.name] }
        set { storage[.name] = newValue }
    }

    var planet: Planet {
        get { storage[.planet] ?? .earth }
        set { storage[.planet] = newValue }
    }
}

enum AnyKey: String, CodingKey {
    case flags, point, nothing, text, url, number
}

struct NotStorable { let x = 1 }


import Foundation
import PersistentPrefsSample

/// The keys of ``SamplePrefs`` as the harness knows them: full name, short alias, type.
public enum SampleKey: String, CaseIterable, Sendable {
    /// "Integer Value" (`Int`).
    case int
    /// "String Value" (`String`).
    case string
    /// "Array Value" (`[String]`).
    case array
    /// "Dictionary Value" (`[String: String]`).
    case dict
    /// "Date Value" (`Date`).
    case date

    /// The key in the set ("Integer Value", …).
    public var name: String {
        switch self {
        case .int: return SamplePrefs.Key.int.rawValue
        case .string: return SamplePrefs.Key.string.rawValue
        case .array: return SamplePrefs.Key.array.rawValue
        case .dict: return SamplePrefs.Key.dictionary.rawValue
        case .date: return SamplePrefs.Key.date.rawValue
        }
    }

    /// The type the key holds, as shown by `list`.
    public var typeName: String {
        switch self {
        case .int: return "Int"
        case .string: return "String"
        case .array: return "[String]"
        case .dict: return "[String: String]"
        case .date: return "Date"
        }
    }

    /// The key named by a full name or an alias (case-insensitive), or `nil`.
    ///
    /// - Parameter text: "Integer Value", "int", "dictionary", …
    public init?(named text: String) {
        let lowered = text.lowercased()
        if let key = SampleKey.allCases.first(where: { $0.name.lowercased() == lowered || $0.rawValue == lowered }) {
            self = key
        } else if lowered == "dictionary" || lowered == "integer" {
            self = lowered == "dictionary" ? .dict : .int
        } else {
            return nil
        }
    }

    /// Looks a key up, or throws a usage error that lists the keys.
    static func named(_ text: String) throws -> SampleKey {
        guard let key = SampleKey(named: text) else {
            let known = allCases.map { "\($0.rawValue) (\($0.name))" }.joined(separator: ", ")
            throw HarnessError.usage("unknown key '\(text)'; the keys are \(known)")
        }
        return key
    }
}

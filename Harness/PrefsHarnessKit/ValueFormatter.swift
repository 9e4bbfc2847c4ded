import Foundation
import PersistentPrefs

/// Shows stored values: as text a `set` command accepts back, and as JSON.
public enum ValueFormatter {
    /// A value as text, in the form `set` parses for its type (JSON where commas or `=`
    /// inside items would make the short form ambiguous).
    ///
    /// - Parameter value: A stored value.
    /// - Returns: One line of text.
    public static func text(_ value: Any) -> String {
        switch value {
        case let string as String:
            return string
        case let date as Date:
            return iso8601(date)
        case let data as Data:
            return "<\(data.count) bytes: \(data.base64EncodedString())>"
        case let number as NSNumber:
            return numberText(number)
        case let strings as [String] where !strings.contains(where: { $0.contains(",") || $0 != $0.trimmingCharacters(in: .whitespaces) || $0.hasPrefix("[") }):
            return strings.joined(separator: ", ")
        case let pairs as [String: String] where !pairs.contains(where: { $0.key.contains(where: { ",=".contains($0) }) || $0.value.contains(",") || $0.key.hasPrefix("{") }):
            return pairs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        default:
            return jsonText(value)
        }
    }

    /// The name of the type `value` holds: the expected name when it is of that type,
    /// otherwise what it actually is.
    ///
    /// - Parameters:
    ///   - value: A stored value.
    ///   - key: The key it is stored under.
    public static func typeName(_ value: Any, for key: SampleKey) -> String {
        let matches: Bool
        switch key {
        case .int: matches = value is NSNumber && value as? Int != nil
        case .string: matches = value is String
        case .array: matches = value as? [String] != nil
        case .dict: matches = value as? [String: String] != nil
        case .date: matches = value is Date
        }
        if matches { return key.typeName }
        return "\(actualTypeName(value)) (expected \(key.typeName))"
    }

    /// A value as JSON, as every `--json` output writes it: one line, object keys sorted, `/`
    /// not escaped; dates as ISO 8601 strings, data as base64.
    ///
    /// - Parameter value: A stored value.
    public static func jsonText(_ value: Any) -> String {
        JSONText.text(jsonValue(value), pretty: false, escapingSlashes: false)
    }

    /// `date` as ISO 8601, with milliseconds when it has a fraction of a second.
    public static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        if date.timeIntervalSince1970.rounded() != date.timeIntervalSince1970 {
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        }
        return formatter.string(from: date)
    }

    // MARK: - Private

    static func jsonValue(_ value: Any) -> Any {
        switch value {
        case let date as Date: return iso8601(date)
        case let data as Data: return data.base64EncodedString()
        case let number as NSNumber:
            // A property-list boolean as JSON's true or false, never 1 or 0.
            if PrefsSchema.kind(of: number) == "boolean" { return number.boolValue }
            if let int = value as? Int { return int }
            if let double = number as? Double, double.isFinite { return double }
            return numberText(number)
        case let array as [Any]: return array.map(jsonValue)
        case let dictionary as [String: Any]: return dictionary.mapValues(jsonValue)
        default: return value
        }
    }

    private static func numberText(_ number: NSNumber) -> String {
        if PrefsSchema.kind(of: number) == "boolean" { return number.boolValue ? "true" : "false" }
        if let int = number as? Int { return String(int) }
        if let double = number as? Double { return String(double) }
        return number.description
    }

    private static func actualTypeName(_ value: Any) -> String {
        switch value {
        case is String: return "String"
        case is Date: return "Date"
        case is Data: return "Data"
        case let number as NSNumber: return PrefsSchema.kind(of: number) == "boolean" ? "Bool" : number as? Int != nil ? "Int" : "Double"
        case is [Any]: return "Array"
        case is [String: Any]: return "Dictionary"
        default: return String(describing: type(of: value))
        }
    }
}

import Foundation
import PersistentPrefs

/// Parses a command-line VALUE for a key's type.
///
/// | Type | Accepted |
/// |---|---|
/// | `Int` | a decimal integer, optionally signed: `42`, `-7` |
/// | `String` | anything |
/// | `[String]` | comma-separated (`a, b, c`; spaces around items trimmed; empty: `[]`) or a JSON array of strings |
/// | `[String: String]` | `k=v,k=v` (or empty) or a JSON object of strings |
/// | `Date` | ISO 8601 (`2024-05-01T12:00:00Z`, with or without fractional seconds, or `2024-05-01`) or `now` |
public enum ValueParser {
    /// `text` (spaces around it ignored) as an `Int`.
    ///
    /// - Parameters:
    ///   - what: What the integer is for, as messages name it (`Volume`, `-int`).
    ///   - example: How to write one, added to the message (`42 or -7`).
    /// - Throws: ``HarnessError/usage(_:)`` saying why (see ``integerProblem(_:)``).
    static func integer(_ text: String, for what: String, example: String? = nil) throws -> Int {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let value = Int(trimmed) { return value }
        let hint = example.map { " (write it as \($0))" } ?? ""
        throw HarnessError.usage("\(integerProblem(trimmed) ?? "'\(text)' is not an integer") for \(what)\(hint)")
    }

    /// `text` (spaces around it and case ignored) as a `Bool`: `true`, `yes`, `on` or `1`;
    /// `false`, `no`, `off` or `0` — in `set`, `batch`, `settings set` and at the prompt.
    /// (`defaults write -bool` takes what macOS's `defaults` takes: `true`, `false`, `yes`, `no`,
    /// `1` or `0`.)
    ///
    /// - Throws: ``HarnessError/usage(_:)`` naming the spellings.
    static func boolean(_ text: String, for what: String) throws -> Bool {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw HarnessError.usage("'\(text)' is not true or false for \(what) (write true, false, yes, no, on, off, 1 or 0)")
        }
    }

    /// Why `text` is not an `Int`: not an integer at all, or an integer outside the range an
    /// integer key holds (the range said); `nil` when it is one.
    static func integerProblem(_ text: String) -> String? {
        guard Int(text) == nil else { return nil }
        let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }) else { return "'\(text)' is not an integer" }
        return "\(text) is outside the range of an integer (\(Int.min) to \(Int.max))"
    }

    /// The value `text` stands for, as the type `key` holds.
    ///
    /// - Parameters:
    ///   - text: The VALUE argument.
    ///   - key: The key it is for.
    ///   - now: The date `now` stands for.
    /// - Returns: A value of the key's type.
    /// - Throws: ``HarnessError/usage(_:)`` naming the value and the key.
    public static func parse(_ text: String, for key: SampleKey, now: Date = Date()) throws -> Any {
        switch key {
        case .int:
            return try integer(text, for: key.name, example: "42 or -7")
        case .string:
            return text
        case .array:
            return try parseArray(text, key: key)
        case .dict:
            return try parseDictionary(text, key: key)
        case .date:
            return try parseDate(text, key: key, now: now)
        }
    }

    private static func parseArray(_ text: String, key: SampleKey) throws -> [String] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("[") {
            guard let array = json(trimmed) as? [Any], let strings = array as? [String] else {
                throw HarnessError.usage("'\(text)' is not a JSON array of strings for \(key.name) (write it as a, b, c or '[\"a\",\"b\"]', quoted whole as in a shell)")
            }
            return strings
        }
        if trimmed.isEmpty { return [] }
        return trimmed.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    private static func parseDictionary(_ text: String, key: SampleKey) throws -> [String: String] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("{") {
            guard let object = json(trimmed) as? [String: Any], let strings = object as? [String: String] else {
                throw HarnessError.usage("'\(text)' is not a JSON object of strings for \(key.name) (write it as k=v, k2=v2 or '{\"k\":\"v\"}', quoted whole as in a shell)")
            }
            return strings
        }
        var result: [String: String] = [:]
        if trimmed.isEmpty { return result }
        for pair in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            guard parts.count == 2, !name.isEmpty else {
                throw HarnessError.usage("'\(pair)' is not a k=v pair in '\(text)' for \(key.name) (write it as k=v, k2=v2 or '{\"k\":\"v\"}', quoted whole as in a shell)")
            }
            guard result[name] == nil else {
                throw HarnessError.usage("'\(name)' appears twice in '\(text)' for \(key.name)")
            }
            result[name] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        return result
    }

    private static func parseDate(_ text: String, key: SampleKey, now: Date) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "now" { return now }
        let hint = "(write it as 2024-05-01 or 2024-05-01T12:00:00Z)"
        guard let date = PlistDates.iso8601(trimmed) else {
            throw HarnessError.usage("'\(text)' is not an ISO 8601 date (or 'now') for \(key.name) \(hint)")
        }
        guard PlistDates.isStorable(date) else {
            throw HarnessError.usage("'\(text)' is outside the dates a set can store (years 1 to 9999) for \(key.name) \(hint)")
        }
        return date
    }

    private static func json(_ text: String) -> Any? {
        try? JSONText.value(of: Data(text.utf8))
    }
}

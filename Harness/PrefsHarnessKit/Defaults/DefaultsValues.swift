import Foundation
import PersistentPrefs

/// The values of `defaults write`'s type flags (`-int 5`, `-bool yes`, `-array a b`, …), parsed
/// before anything is written.
public enum DefaultsValues {
    /// The type flags of `defaults write`, with the aliases macOS accepts (an array: a dozen
    /// words are found as fast in it, and a fresh process builds no hashed set for one command).
    public static let typeFlags: [String] = [
        "-string", "-int", "-integer", "-float", "-bool", "-boolean", "-date", "-data",
        "-array", "-array-add", "-dict", "-dict-add",
    ]

    /// The flags that type one word (all but the array and dictionary ones).
    static let scalarFlags: [String] = ["-string", "-int", "-integer", "-float", "-bool", "-boolean", "-date", "-data"]

    /// The value of `word` typed by `flag` (`-string`, `-int`, …).
    ///
    /// - Throws: ``HarnessError/usage(_:)`` naming the flag and the word when it does not parse.
    public static func scalar(_ word: String, flag: String) throws -> Any {
        switch flag {
        case "-string":
            return word
        case "-int", "-integer":
            return NSNumber(value: try ValueParser.integer(word, for: flag))
        case "-float":
            guard let double = Double(word), double.isFinite else { throw HarnessError.usage("'\(word)' is not a number for -float") }
            return NSNumber(value: double)
        case "-bool", "-boolean":
            switch word.lowercased() {
            case "true", "yes", "1": return NSNumber(value: true)
            case "false", "no", "0": return NSNumber(value: false)
            default: throw HarnessError.usage("'\(word)' is not a boolean for \(flag) (use true, false, yes, no, 1 or 0)")
            }
        case "-date":
            let hint = "(use 2024-05-01, 2024-05-01T12:00:00Z or \"2024-05-01 12:00:00 +0000\")"
            guard let date = date(word) else { throw HarnessError.usage("'\(word)' is not a date for -date \(hint)") }
            guard PlistDates.isStorable(date) else {
                throw HarnessError.usage("'\(word)' is outside the dates a set can store (years 1 to 9999) for -date \(hint)")
            }
            return date
        case "-data":
            guard let data = data(hex: word.filter { !$0.isWhitespace }) else {
                throw HarnessError.usage("'\(word)' is not data for -data (an even number of hex digits, such as 0fbd77)")
            }
            return data
        default:
            throw HarnessError.usage("unknown type flag '\(flag)'")
        }
    }

    /// The elements after `-array` or `-array-add`: each a word of property-list text (a bare
    /// word is a string), or a type flag and its word (`-int 5`).
    ///
    /// - Throws: ``HarnessError/usage(_:)`` for a word that does not parse, or a flag without a word.
    public static func elements(_ words: [String]) throws -> [Any] {
        var result: [Any] = []
        var rest = words[...]
        while let word = rest.popFirst() {
            result.append(try element(word, &rest))
        }
        return result
    }

    /// The pairs after `-dict` or `-dict-add`: a key, then its value as for ``elements(_:)``.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` for a key without a value, or a value that does not parse.
    public static func pairs(_ words: [String]) throws -> [String: Any] {
        var result: [String: Any] = [:]
        var rest = words[...]
        while let key = rest.popFirst() {
            guard !rest.isEmpty else { throw HarnessError.usage("the key '\(key)' has no value (-dict takes KEY VALUE pairs)") }
            result[key] = try element(rest.removeFirst(), &rest)
        }
        return result
    }

    private static func element(_ word: String, _ rest: inout ArraySlice<String>) throws -> Any {
        if scalarFlags.contains(word) {
            guard let typed = rest.popFirst() else { throw HarnessError.usage("\(word) needs a value") }
            return try scalar(typed, flag: word)
        }
        return try text(word)
    }

    /// Property-list text (see ``PlistText/parse(_:)``). Text that does not parse but does not
    /// start like a collection, data or a quoted string (`hello world`) is that string, as
    /// `defaults` takes it; otherwise it is a usage error.
    public static func text(_ word: String) throws -> Any {
        do {
            return try PlistText.parse(word)
        } catch let error as PlistText.ParseError {
            let start = word.trimmingCharacters(in: .whitespacesAndNewlines).first
            if let start, !"({<\"'".contains(start) { return word }
            throw HarnessError.usage("'\(word)' is not property-list text: \(error.description)")
        }
    }

    /// A date in ISO 8601 (`2024-05-01`, `2024-05-01T12:00:00Z`, with a fraction or an offset),
    /// or as `defaults read` prints it (`2024-05-01 12:00:00 +0000`).
    static func date(_ text: String) -> Date? {
        // Every form above is ASCII, and Foundation's `DateFormatter` on Linux traps on some other text (a range it
        // counts in the wrong units, "Incorrect range CFRange"): such text is no date, and never reaches it.
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd HH:mm:ss"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text), formatter.string(from: date).count == text.count { return date }
        }
        return PlistDates.iso8601(text)
    }

    /// Bytes from hex digits; `nil` for an odd count or a non-hex character.
    static func data(hex: String) -> Data? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return Data(bytes)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

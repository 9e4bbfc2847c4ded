import Foundation

/// Property-list values as text, the way macOS `defaults` reads and prints them: the old-style
/// (OpenStep) syntax — `{ key = value; }`, `( a, b )`, `<0fbd>`, quoted or bare strings — and
/// XML property lists or XML fragments (`<integer>5</integer>`).
public enum PlistText {
    /// The kinds of property-list value, named as `defaults read-type` names them.
    public enum Kind: String, Sendable {
        /// A `String`.
        case string
        /// An integer.
        case integer
        /// A floating-point number.
        case float
        /// A `Bool`.
        case boolean
        /// A `Date`.
        case date
        /// `Data`.
        case data
        /// An array.
        case array
        /// A dictionary with `String` keys.
        case dictionary
    }

    /// Why a text does not parse: what was expected, and where.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        /// The problem, with its line and column.
        public let description: String

        /// A parse error saying `description`.
        public init(description: String) {
            self.description = description
        }
    }

    // MARK: - Kinds

    /// The kind of a property-list value, or `nil` for anything else.
    ///
    /// - Parameter value: A value as a property list holds it.
    /// - Returns: Its kind.
    public static func kind(of value: Any) -> Kind? {
        switch value {
        case is String: return .string
        case is Date: return .date
        case is Data: return .data
        case let number as NSNumber: return numberKind(number)
        case is [Any]: return .array
        case is [String: Any], is [AnyHashable: Any]: return .dictionary
        default: return nil
        }
    }

    private static func numberKind(_ number: NSNumber) -> Kind {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"): return .boolean
        case UInt8(ascii: "d"), UInt8(ascii: "f"): return .float
        default: return .integer
        }
    }

    // MARK: - Printing

    /// `value` as `defaults read` prints it: dictionaries as `{ key = value; }`, arrays as
    /// `( a, b )`, strings quoted when they hold anything but ASCII letters and digits, dates as
    /// `"2024-05-01 12:00:00 +0000"`, data as `{length = 4, bytes = 0x000102ff}`, booleans as
    /// `1` and `0`, nested collections indented four spaces a level.
    ///
    /// - Parameters:
    ///   - value: A property-list value.
    ///   - topLevel: Whether it is printed on its own (`defaults read DOMAIN KEY`): a string or
    ///     number is then printed as it is, without quotes.
    /// - Returns: The text, without a final newline.
    public static func describe(_ value: Any, topLevel: Bool = true) -> String {
        var output = ""
        append(value, level: 0, bare: topLevel, to: &output)
        return output
    }

    private static func append(_ value: Any, level: Int, bare: Bool, to output: inout String) {
        if let text = exactScalarText(value) {
            output += bare || type(of: value) == Data.self ? text : quoted(text)
            return
        }
        let indent = String(repeating: " ", count: 4 * level)
        if let dictionary = stringKeyed(value) {
            output += indent + "{\n"
            for key in dictionary.keys.sorted() {
                output += String(repeating: " ", count: 4 * (level + 1)) + quoted(key) + " = "
                append(dictionary[key]!, level: level + 1, bare: false, to: &output)
                output += ";\n"
            }
            output += indent + "}"
        } else if let array = value as? [Any] {
            output += indent + "(\n"
            for (index, element) in array.enumerated() {
                output += String(repeating: " ", count: 4 * (level + 1))
                append(element, level: level + 1, bare: false, to: &output)
                output += index == array.count - 1 ? "\n" : ",\n"
            }
            output += indent + ")"
        } else {
            let text = scalarText(value)
            output += bare || value is Data ? text : quoted(text)
        }
    }

    /// The text of a scalar of the types the library reads (`NSNumber`, `Bool`, `String`,
    /// `Date`, `Data`), told by exact type; `nil` for anything else (containers).
    private static func exactScalarText(_ value: Any) -> String? {
        let kind = type(of: value)
        if kind == NSNumber.self { return numberText(value as! NSNumber) }
        if kind == Bool.self { return value as! Bool ? "1" : "0" }
        if kind == String.self { return value as? String }
        if kind == Date.self { return dateText(value as! Date) }
        if kind == Data.self { return dataText(value as! Data) }
        return nil
    }

    private static func numberText(_ number: NSNumber) -> String {
        switch numberKind(number) {
        case .boolean: return number.boolValue ? "1" : "0"
        case .float: return floatText(number.doubleValue)
        default: return number.description
        }
    }

    /// A scalar's text before quoting.
    private static func scalarText(_ value: Any) -> String {
        switch value {
        case let string as String: return string
        case let date as Date: return dateText(date)
        case let data as Data: return dataText(data)
        case let number as NSNumber: return numberText(number)
        default: return String(describing: value)
        }
    }

    /// `text`, in double quotes with escapes unless it is non-empty ASCII letters and digits.
    static func quoted(_ text: String) -> String {
        if !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) {
            return text
        }
        var result = "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: result += "\\\""
            case 0x5C: result += "\\\\"
            case 0x0A: result += "\\n"
            case 0x09: result += "\\t"
            case 0x0D: result += "\\r"
            case 0x20..<0x7F: result.unicodeScalars.append(Unicode.Scalar(unit)!)
            default: result += String(format: "\\U%04x", unit)
            }
        }
        return result + "\""
    }

    /// A date as `defaults` prints it: `2024-05-01 12:00:00 +0000` (UTC, whole seconds); a date
    /// too far from now for a calendar (another program may store one) as its seconds from the
    /// reference date, `1e+300 s from 2001-01-01 00:00:00 +0000`.
    public static func dateText(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        let text = formatter.string(from: date)
        return text.isEmpty ? "\(date.timeIntervalSinceReferenceDate) s from 2001-01-01 00:00:00 +0000" : text
    }

    /// Data as `{length = 4, bytes = 0x000102ff}`; more than 24 bytes as the first 16 and the
    /// last 8, with `...` between.
    private static func dataText(_ data: Data) -> String {
        func hex<S: Sequence<UInt8>>(_ bytes: S) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        let bytes = data.count <= 24 ? hex(data) : hex(data.prefix(16)) + " ... " + hex(data.suffix(8))
        return "{length = \(data.count), bytes = 0x\(bytes)}"
    }

    /// A double as `defaults` prints it: `1.5`, `2`, `1e+20`.
    private static func floatText(_ double: Double) -> String {
        if double.rounded() == double, abs(double) < 1e15 { return String(Int64(double)) }
        return "\(double)"
    }

    private static func stringKeyed(_ value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] { return dictionary }
        guard let dictionary = value as? [AnyHashable: Any] else { return nil }
        var result: [String: Any] = [:]
        for (key, element) in dictionary {
            guard let key = key.base as? String else { return nil }
            result[key] = element
        }
        return result
    }

    // MARK: - Parsing

    /// Parses property-list text: old-style (`{ a = 1; b = (x, "y z"); }`, where a bare word
    /// is a string), a whole XML property list, or an XML fragment such as
    /// `<integer>5</integer>` or `<dict>…</dict>`. GNUstep's typed old-style forms
    /// (`<*I5>`, `<*R1.5>`, `<*BY>`, `<*D2024-05-01 12:00:00 +0000>`) give numbers, booleans and
    /// dates.
    ///
    /// - Parameter text: The text.
    /// - Returns: The value: `String`, `NSNumber` (integers, floats, booleans), `Date`, `Data`,
    ///   `[Any]` or `[String: Any]`.
    /// - Throws: ``ParseError`` saying what was expected where.
    public static func parse(_ text: String) throws -> Any {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("<?xml") || trimmed.hasPrefix("<!DOCTYPE") || trimmed.hasPrefix("<plist") {
            return try xml(trimmed, wrapped: false)
        }
        if trimmed.hasPrefix("<"), let next = trimmed.dropFirst().first, next.isLetter {
            return try xml(trimmed, wrapped: true)
        }
        var parser = Parser(text)
        let value = try parser.value()
        try parser.expectEnd()
        return value
    }

    private static func xml(_ text: String, wrapped: Bool) throws -> Any {
        let document = wrapped ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\">\(text)</plist>" : text
        do {
            return try PropertyListSerialization.propertyList(from: Data(document.utf8), format: nil)
        } catch {
            throw ParseError(description: "the XML property list does not parse: \((error as NSError).localizedDescription)")
        }
    }

    /// A recursive-descent parser of the old-style syntax.
    private struct Parser {
        let scalars: [Unicode.Scalar]
        var position = 0

        init(_ text: String) {
            scalars = Array(text.unicodeScalars)
        }

        /// Characters of a bare (unquoted) string.
        static func isBare(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "_$+/:.-".unicodeScalars.contains(scalar))
        }

        mutating func value(depth: Int = 0) throws -> Any {
            guard depth < 100 else { throw error("nesting deeper than 100 levels") }
            skipSpace()
            guard let scalar = peek() else { throw error("a value is missing") }
            switch scalar {
            case "{": return try dictionary(depth: depth)
            case "(": return try array(depth: depth)
            case "<": return try angled()
            case "\"", "'": return try quotedString()
            default:
                guard Self.isBare(scalar) else { throw error("unexpected '\(scalar)'") }
                return bare()
            }
        }

        mutating func expectEnd() throws {
            skipSpace()
            if let scalar = peek() { throw error("unexpected '\(scalar)' after the value") }
        }

        private mutating func dictionary(depth: Int) throws -> [String: Any] {
            var result: [String: Any] = [:]
            try collection(close: "}", separator: ";", name: "a dictionary") { parser in
                guard let key = try parser.value(depth: depth + 1) as? String else {
                    throw parser.error("a dictionary key must be a string")
                }
                parser.skipSpace()
                guard parser.peek() == "=" else { throw parser.error("'=' is missing after the key \"\(key)\"") }
                parser.position += 1
                result[key] = try parser.value(depth: depth + 1)
                return "';' is missing after the value of \"\(key)\""
            }
            return result
        }

        private mutating func array(depth: Int) throws -> [Any] {
            var result: [Any] = []
            try collection(close: ")", separator: ",", name: "an array") { parser in
                result.append(try parser.value(depth: depth + 1))
                return "',' or ')' is missing after an array element"
            }
            return result
        }

        /// Reads a dictionary's or an array's items up to `close`, after the opening character:
        /// each by `item` (which returns what to say when no separator follows it), separated by
        /// `separator`, which may also follow the last item.
        private mutating func collection(
            close: Unicode.Scalar, separator: Unicode.Scalar, name: String, _ item: (inout Parser) throws -> String
        ) throws {
            position += 1  // the opening character
            while true {
                skipSpace()
                if peek() == close {
                    position += 1
                    return
                }
                guard peek() != nil else { throw error("'\(close)' is missing at the end of \(name)") }
                let missingSeparator = try item(&self)
                skipSpace()
                if peek() == separator {
                    position += 1
                } else if peek() == nil {
                    throw error("'\(close)' is missing at the end of \(name)")
                } else if peek() != close {
                    throw error(missingSeparator)
                }
            }
        }

        /// `<hex digits>` (data) or GNUstep's `<*Ivalue>`, `<*R…>`, `<*B…>`, `<*D…>`.
        private mutating func angled() throws -> Any {
            let start = position
            position += 1  // <
            if peek() == "*" {
                position += 1
                guard let type = next() else { throw error("a typed value is cut short") }
                var body = ""
                while let scalar = peek(), scalar != ">" {
                    body.unicodeScalars.append(scalar)
                    position += 1
                }
                guard next() == ">" else { throw error("'>' is missing after a typed value") }
                switch type {
                case "I":
                    guard let int = Int(body) else { throw error(ValueParser.integerProblem(body) ?? "'\(body)' is not an integer", at: start) }
                    return NSNumber(value: int)
                case "R":
                    guard let double = Double(body), double.isFinite else { throw error("'\(body)' is not a number", at: start) }
                    return NSNumber(value: double)
                case "B":
                    guard body == "Y" || body == "N" else { throw error("a boolean is <*BY> or <*BN>", at: start) }
                    return NSNumber(value: body == "Y")
                case "D":
                    guard let date = DefaultsValues.date(body) else { throw error("'\(body)' is not a date", at: start) }
                    return date
                default:
                    throw error("unknown typed value '<*\(type)'", at: start)
                }
            }
            var hex = ""
            while let scalar = peek(), scalar != ">" {
                position += 1
                if scalar.properties.isWhitespace { continue }
                guard scalar.properties.isASCIIHexDigit else { throw error("'\(scalar)' is not a hex digit in data", at: position - 1) }
                hex.unicodeScalars.append(scalar)
            }
            guard next() == ">" else { throw error("'>' is missing at the end of data", at: start) }
            guard let data = DefaultsValues.data(hex: hex) else { throw error("data needs an even number of hex digits", at: start) }
            return data
        }

        private mutating func quotedString() throws -> String {
            let start = position
            let quote = next()!
            var result = ""
            while true {
                guard let scalar = next() else { throw error("the closing quote is missing", at: start) }
                if scalar == quote { return result }
                guard scalar == "\\" else {
                    result.unicodeScalars.append(scalar)
                    continue
                }
                guard let escaped = next() else { throw error("an escape is cut short", at: start) }
                switch escaped {
                case "n": result += "\n"
                case "t": result += "\t"
                case "r": result += "\r"
                case "a": result += "\u{7}"
                case "b": result += "\u{8}"
                case "f": result += "\u{C}"
                case "v": result += "\u{B}"
                case "U", "u":
                    guard let code = UInt32(hexDigits(), radix: 16) else { throw error("\\U needs hex digits") }
                    result += try scalarText(code)
                case "0"..."7":
                    var digits = String(escaped)
                    while digits.count < 3, let digit = peek(), ("0"..."7").contains(digit) {
                        digits.unicodeScalars.append(digit)
                        position += 1
                    }
                    result += try scalarText(UInt32(digits, radix: 8)!)
                default:
                    result.unicodeScalars.append(escaped)
                }
            }
        }

        /// The character for a `\U` or octal escape; a surrogate pair's first half takes the
        /// second from the escape that follows.
        private mutating func scalarText(_ code: UInt32) throws -> String {
            if (0xD800..<0xDC00).contains(code), peek() == "\\", position + 1 < scalars.count,
                scalars[position + 1] == "U" || scalars[position + 1] == "u"
            {
                let saved = position
                position += 2
                if let low = UInt32(hexDigits(), radix: 16), (0xDC00..<0xE000).contains(low),
                    let scalar = Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                {
                    return String(scalar)
                }
                position = saved
            }
            guard let scalar = Unicode.Scalar(code) else { throw error("\\U\(String(code, radix: 16)) is not a character") }
            return String(scalar)
        }

        /// Up to four hex digits (a `\\U` escape's), possibly none.
        private mutating func hexDigits() -> String {
            var digits = ""
            while digits.count < 4, let digit = peek(), digit.properties.isASCIIHexDigit {
                digits.unicodeScalars.append(digit)
                position += 1
            }
            return digits
        }

        private mutating func bare() -> String {
            var result = ""
            while let scalar = peek(), Self.isBare(scalar) {
                result.unicodeScalars.append(scalar)
                position += 1
            }
            return result
        }

        /// Skips white space and `//` and `/* */` comments.
        mutating func skipSpace() {
            while let scalar = peek() {
                if scalar.properties.isWhitespace {
                    position += 1
                } else if scalar == "/", position + 1 < scalars.count, scalars[position + 1] == "/" {
                    while let next = peek(), next != "\n" { position += 1 }
                } else if scalar == "/", position + 1 < scalars.count, scalars[position + 1] == "*" {
                    position += 2
                    while position < scalars.count, !(scalars[position] == "*" && position + 1 < scalars.count && scalars[position + 1] == "/") {
                        position += 1
                    }
                    position = min(position + 2, scalars.count)
                } else {
                    return
                }
            }
        }

        func peek() -> Unicode.Scalar? {
            position < scalars.count ? scalars[position] : nil
        }

        private mutating func next() -> Unicode.Scalar? {
            defer { position += 1 }
            return peek()
        }

        /// A parse error at `offset` (the current position by default), with its line and column.
        func error(_ message: String, at offset: Int? = nil) -> ParseError {
            let at = min(offset ?? position, scalars.count)
            let before = scalars[..<at]
            let line = before.filter { $0 == "\n" }.count + 1
            let column = at - (before.lastIndex(of: "\n").map { $0 + 1 } ?? 0) + 1
            return ParseError(description: "\(message) (line \(line), column \(column))")
        }
    }
}

import Foundation

/// JSON text of JSON-ready values, laid out as `JSONSerialization` does with `.sortedKeys` (compact, or pretty:
/// two-space indent and `"key" : value`), keys in code-point order, for schema files and `prefs-harness --json`. Not
/// `JSONSerialization`: on Linux its `.sortedKeys` uses a locale-aware comparison, far too slow for thousands of keys.
package enum JSONText {
    /// `value` (a string, number, boolean, `NSNull`, array or `[String: Any]` of these) as JSON text; anything else
    /// is written as the string of its description, a non-finite number as `null`.
    ///
    /// - Parameters:
    ///   - pretty: Whether to indent, one entry a line.
    ///   - escapingSlashes: Whether `/` is written `\/`, as `JSONSerialization` writes it (schema files); `false`
    ///     writes it as it is, as most JSON writers do.
    package static func text(_ value: Any, pretty: Bool, escapingSlashes: Bool = true) -> String {
        var text: [UInt8] = []
        append(value, indent: pretty ? 0 : nil, slashes: escapingSlashes, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// A JSON object whose entries are written in the order given (keys unique and sorted by the caller), for
    /// objects too large to build as a dictionary only to sort it again.
    struct Object {
        let entries: [(String, Any)]
    }

    /// `value` as a pretty JSON document, ending in a newline.
    static func document(_ value: Any) -> Data {
        var text: [UInt8] = []
        append(value, indent: 0, slashes: true, to: &text)
        text += "\n".utf8
        return Data(text)
    }

    /// Appends `value` at nesting depth `indent` (`nil`: compact) as UTF-8 bytes; `slashes`: whether `/` is escaped.
    private static func append(_ value: Any, indent: Int?, slashes: Bool, to text: inout [UInt8]) {
        // Exact types first: a Swift `Bool` would otherwise pass as a number.
        if type(of: value) == Bool.self {
            text += ((value as! Bool) ? "true" : "false").utf8
            return
        }
        switch value {
        case let string as String:
            appendString(string, slashes: slashes, to: &text)
        case let dictionary as [String: Any]:
            appendObject(dictionary.keys.sorted().map { ($0, dictionary[$0]!) }, indent: indent, slashes: slashes, to: &text)
        case let object as Object:
            appendObject(object.entries, indent: indent, slashes: slashes, to: &text)
        case let array as [Any]:
            appendContainer(Array(array.indices), open: UInt8(ascii: "["), close: UInt8(ascii: "]"), indent: indent, to: &text) { index, text in
                append(array[index], indent: indent.map { $0 + 1 }, slashes: slashes, to: &text)
            }
        case is NSNull:
            text += "null".utf8
        case let number as NSNumber:
            appendNumber(number, to: &text)
        default:
            appendString("\(value)", slashes: slashes, to: &text)
        }
    }

    private static func appendObject(_ entries: [(String, Any)], indent: Int?, slashes: Bool, to text: inout [UInt8]) {
        appendContainer(entries, open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), indent: indent, to: &text) { entry, text in
            appendString(entry.0, slashes: slashes, to: &text)
            text += (indent == nil ? ":" : " : ").utf8
            append(entry.1, indent: indent.map { $0 + 1 }, slashes: slashes, to: &text)
        }
    }

    private static func appendContainer<Element>(
        _ elements: [Element], open: UInt8, close: UInt8, indent: Int?, to text: inout [UInt8],
        _ appendElement: (Element, inout [UInt8]) -> Void
    ) {
        guard let indent, !elements.isEmpty else {
            text.append(open)
            for (position, element) in elements.enumerated() {
                if position > 0 { text.append(UInt8(ascii: ",")) }
                appendElement(element, &text)
            }
            text.append(close)
            return
        }
        text.append(open)
        for (position, element) in elements.enumerated() {
            if position > 0 { text.append(UInt8(ascii: ",")) }
            text.append(UInt8(ascii: "\n"))
            text += repeatElement(UInt8(ascii: " "), count: 2 * (indent + 1))
            appendElement(element, &text)
        }
        text.append(UInt8(ascii: "\n"))
        text += repeatElement(UInt8(ascii: " "), count: 2 * indent)
        text.append(close)
    }

    private static func appendNumber(_ number: NSNumber, to text: inout [UInt8]) {
        switch NumberKind(number) {
        case .boolean:
            text += (number.boolValue ? "true" : "false").utf8
        case .real:
            let double = number.doubleValue
            // JSON has no infinity or NaN; a whole number without ".0", as JSONSerialization writes it.
            let written = double.isFinite ? "\(double)" : "null"
            text += (written.hasSuffix(".0") ? written.dropLast(2) : Substring(written)).utf8
        case .unsigned:
            text += String(number.uint64Value).utf8
        case .signed, nil:
            text += String(number.int64Value).utf8
        }
    }

    private static func appendString(_ string: String, slashes: Bool, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                text.append(UInt8(ascii: "\\"))
                text.append(byte)
            case UInt8(ascii: "/") where slashes:  // as JSONSerialization writes it
                text.append(UInt8(ascii: "\\"))
                text.append(byte)
            case UInt8(ascii: "\n"): text += "\\n".utf8
            case UInt8(ascii: "\r"): text += "\\r".utf8
            case UInt8(ascii: "\t"): text += "\\t".utf8
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                text += "\\u".utf8
                text += repeatElement(UInt8(ascii: "0"), count: 4 - hex.utf8.count)
                text += hex.utf8
            default: text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
    }
}

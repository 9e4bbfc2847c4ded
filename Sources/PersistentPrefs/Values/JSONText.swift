import Foundation

/// JSON text of JSON-ready values (strings, numbers, booleans, `NSNull`, arrays and
/// string-keyed dictionaries), laid out as `JSONSerialization` lays it out with `.sortedKeys`
/// (compact, or pretty: two-space indent and `"key" : value`), object keys in code-point order.
///
/// Written here rather than by `JSONSerialization`: on Linux its `.sortedKeys` sorts through a
/// locale-aware string comparison of ~120,000 instructions a pair, so a 1,000-key set's schema
/// cost 0.3 s of its first write (2.8 billion instructions, measured with callgrind). Used for
/// schema files and by `prefs-harness` for its `--json` output.
@_spi(Tools)
public enum JSONText {
    /// `value` as JSON text.
    ///
    /// - Parameters:
    ///   - value: A string, number, boolean, `NSNull`, array or `[String: Any]` of these
    ///     (anything else is written as the string of its description; a non-finite number as
    ///     `null`, which is all JSON has for it).
    ///   - pretty: Whether to indent, one entry a line.
    public static func text(_ value: Any, pretty: Bool) -> String {
        var text = ""
        append(value, indent: pretty ? 0 : nil, to: &text)
        return text
    }

    /// `value` as a pretty JSON document, ending in a newline.
    static func document(_ value: Any) -> Data {
        Data((text(value, pretty: true) + "\n").utf8)
    }

    /// Appends `value` at nesting depth `indent` (`nil`: compact).
    private static func append(_ value: Any, indent: Int?, to text: inout String) {
        // Exact types first: a Swift `Bool` would otherwise pass as a number.
        if type(of: value) == Bool.self {
            text += (value as! Bool) ? "true" : "false"
            return
        }
        switch value {
        case let string as String:
            appendString(string, to: &text)
        case let dictionary as [String: Any]:
            appendContainer(dictionary.keys.sorted(), open: "{", close: "}", indent: indent, to: &text) { key, text in
                appendString(key, to: &text)
                text += indent == nil ? ":" : " : "
                append(dictionary[key]!, indent: indent.map { $0 + 1 }, to: &text)
            }
        case let array as [Any]:
            appendContainer(Array(array.indices), open: "[", close: "]", indent: indent, to: &text) { index, text in
                append(array[index], indent: indent.map { $0 + 1 }, to: &text)
            }
        case is NSNull:
            text += "null"
        case let number as NSNumber:
            appendNumber(number, to: &text)
        default:
            appendString("\(value)", to: &text)
        }
    }

    private static func appendContainer<Element>(
        _ elements: [Element], open: String, close: String, indent: Int?, to text: inout String,
        _ appendElement: (Element, inout String) -> Void
    ) {
        guard let indent, !elements.isEmpty else {
            text += open
            for (position, element) in elements.enumerated() {
                if position > 0 { text += "," }
                appendElement(element, &text)
            }
            text += close
            return
        }
        let inner = String(repeating: "  ", count: indent + 1)
        text += open
        for (position, element) in elements.enumerated() {
            text += position == 0 ? "\n" : ",\n"
            text += inner
            appendElement(element, &text)
        }
        text += "\n" + String(repeating: "  ", count: indent) + close
    }

    private static func appendNumber(_ number: NSNumber, to text: inout String) {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"):
            text += number.boolValue ? "true" : "false"
        case UInt8(ascii: "d"), UInt8(ascii: "f"):
            let double = number.doubleValue
            // JSON has no infinity or NaN; a whole number without ".0", as JSONSerialization writes it.
            let written = double.isFinite ? "\(double)" : "null"
            text += written.hasSuffix(".0") ? String(written.dropLast(2)) : written
        case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"), UInt8(ascii: "S"), UInt8(ascii: "C"):
            text += String(number.uint64Value)
        default:
            text += String(number.int64Value)
        }
    }

    private static func appendString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "/": text += "\\/"  // as JSONSerialization writes it
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}

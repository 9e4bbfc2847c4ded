import Foundation

/// The writer of XML property lists, for the values the library stores: Foundation's layout (header, tabs, sorted
/// keys, whole-second UTC dates, numbers that read back as the same `NSNumber` kind), spelled so that CoreFoundation
/// and XML parsers read back the same values (`-0.0` keeps its sign, a carriage return in text is `&#13;`). It
/// returns `nil` for what it cannot write exactly (an unknown type, a year beyond ±2,147,483,647, which
/// CoreFoundation cannot read back), and the caller refuses the write.
enum PlistXML {
    /// `value` as a whole XML property-list document, or `nil` when this writer does not handle it.
    static func document(_ value: Any) -> Data? {
        portableDocument(value)?.data
    }

    /// ``document(_:)``, and whether every reader reads it back exactly (see ``Writer/portable``).
    static func portableDocument(_ value: Any) -> (data: Data, portable: Bool)? {
        var writer = Writer()
        writer.append(header)
        guard writer.write(value, depth: 0) else { return nil }
        writer.put("</plist>\n")
        return (Data(writer.bytes), writer.portable)
    }

    /// `dictionary` as a whole document, with where each top-level value's XML lies in it: the bytes
    /// ``document(_:)`` writes for that value under any key, so ``wrapped(_:)`` makes the document of
    /// `["v": value]` without encoding the value again.
    static func document(ranging dictionary: [String: Any]) -> (data: Data, ranges: [String: Range<Int>], portable: Bool)? {
        var writer = Writer()
        writer.ranges = [:]
        writer.append(header)
        guard writer.write(dictionary, depth: 0) else { return nil }
        writer.put("</plist>\n")
        return (Data(writer.bytes), writer.ranges ?? [:], writer.portable)
    }

    /// The document of `["v": value]`, from the bytes of `value` written one level deep (a range of
    /// ``document(ranging:)``).
    static func wrapped(_ fragment: Data) -> Data {
        var bytes = [UInt8]()
        bytes.reserveCapacity(wrapperHead.count + fragment.count + wrapperTail.count)
        bytes.append(contentsOf: wrapperHead)
        bytes.append(contentsOf: fragment)
        bytes.append(contentsOf: wrapperTail)
        return Data(bytes)
    }

    private static let wrapperHead = Array((header + "<dict>\n\t<key>v</key>\n").utf8)
    private static let wrapperTail = Array("</dict>\n</plist>\n".utf8)

    /// The keys of `dictionary` in order, each with its index (its value is `dictionary[index].value`, no second
    /// look-up). Keys and indices are sorted rather than the entries: moving a value while sorting retains and
    /// releases it, and a large set is written whole on every write to it.
    static func sortedKeys(of dictionary: [String: Any]) -> [(key: String, index: [String: Any].Index)] {
        var keys: [(key: String, index: [String: Any].Index)] = []
        keys.reserveCapacity(dictionary.count)
        var index = dictionary.startIndex
        while index != dictionary.endIndex {
            keys.append((dictionary[index].key, index))
            dictionary.formIndex(after: &index)
        }
        keys.sort { $0.key < $1.key }
        return keys
    }

    /// The dictionaries at least this large have their lines remembered.
    private static let reuseThreshold = 64

    /// The lines of the entries of a large dictionary, as last encoded at one depth. Contract: they are copied only
    /// for the very storage they encode, and only when it holds no object but `NSNumber`s (see
    /// ``Writer/holdsOnlyValues``). A storage the memo holds is never changed in place (a change copies it first) and
    /// `NSNumber`s never change, so the copy is byte for byte what encoding it again gives.
    private struct Encoded {
        let dictionary: [String: Any]
        let depth: Int
        let lines: [UInt8]
        /// Whether the lines are portable (see ``Writer/portable``).
        let portable: Bool

        /// Whether these are the lines kept for a dictionary of `count` entries at `depth`.
        func isKept(count: Int, depth: Int) -> Bool { dictionary.count == count && self.depth == depth }
    }

    /// The last large dictionaries encoded, at most 8, one per entry count and depth: an array, searched along, as a
    /// dictionary keyed by a type of its own would cost a program's first write a scan of the runtime's conformance
    /// records when first made.
    private static let encodedMemo = Locked<[Encoded]>([])

    private static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    private struct Writer {
        var bytes: [UInt8] = []
        /// Where each top-level value was written, when asked for.
        var ranges: [String: Range<Int>]?
        /// Whether every value written since this was last set was a value type or an `NSNumber`: no object that
        /// could change while a dictionary holding it stays the same.
        var holdsOnlyValues = true
        /// Whether every property-list reader reads the document back as written: `false` once a key or string
        /// holds a character XML 1.0 cannot carry even as a reference (U+0000–U+0008, U+000B, U+000C,
        /// U+000E–U+001F, U+FFFE, U+FFFF) or starts with U+FEFF (which Foundation's XML reader on Linux drops), or a
        /// date has a fraction of a second or is minus zero seconds from 2001. Foundation writes such characters as
        /// they are and every XML parser then refuses the whole file, so what the library writes for others to read
        /// is binary when this is `false` (`PlistFile.encoded(_:format:for:)`, `PlistWriting.portableData(_:)`).
        var portable = true

        init() {
            bytes.reserveCapacity(1024)
        }

        mutating func append(_ text: String) {
            bytes.append(contentsOf: text.utf8)
        }

        /// Appends a fixed piece of markup: its bytes at once (a `String`'s UTF-8 view goes through a generic
        /// sequence, a few times dearer).
        mutating func put(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        mutating func indent(_ depth: Int) {
            for _ in 0..<depth { bytes.append(UInt8(ascii: "\t")) }
        }

        /// Writes one value on its own line(s) at `depth`; `false` when it cannot.
        mutating func write(_ value: Any, depth: Int) -> Bool {
            guard depth <= PlistValue.maximumDepth + 8 else { return false }
            // The kept shapes by exact type first: a failed cast of a Swift dictionary to `String` or `NSNumber`
            // bridges the whole of it to Foundation, and a cast to a protocol costs more than writing the number.
            let kind = type(of: value)
            if kind == [String: Any].self {
                indent(depth)
                return writeDictionary(value as! [String: Any], depth: depth)
            }
            if let number = PlistValue.number(value) {
                indent(depth)
                return writeNumber(number)
            }
            if kind is AnyObject.Type { holdsOnlyValues = false }
            indent(depth)
            if kind == [Any].self {
                return writeArray(value as! [Any], depth: depth)
            }
            switch value {
            case let string as String:
                put("<string>")
                escape(string)
                put("</string>\n")
            case let date as Date:
                guard let text = PlistXML.text(of: date) else { return false }
                // XML keeps a date to the whole second, without the sign of a zero interval; binary keeps both.
                let seconds = date.timeIntervalSinceReferenceDate
                if seconds.rounded(.down) != seconds || (seconds == 0 && seconds.sign == .minus) { portable = false }
                append("<date>\(text)</date>\n")
            case let data as Data:
                put("<data>\n")
                indent(depth)
                append(data.base64EncodedString())
                bytes.append(UInt8(ascii: "\n"))
                indent(depth)
                put("</data>\n")
            case let array as [Any]:
                return writeArray(array, depth: depth)
            case let number as NSNumber:  // a Swift number (`Bool`, `Int` …) a parser or a caller handed over
                guard writeNumber(number) else { return false }
            default:
                if let optional = value as? any OptionalValue {
                    guard let wrapped = optional.wrappedValue else { return false }
                    bytes.removeLast(depth)  // the indent, written again for the wrapped value
                    return write(wrapped, depth: depth)
                }
                guard let dictionary = PlistValue.stringKeyedDictionary(value) else { return false }
                return writeDictionary(dictionary, depth: depth)
            }
            return true
        }

        /// The rest of an array's lines, after the indent.
        private mutating func writeArray(_ array: [Any], depth: Int) -> Bool {
            guard !array.isEmpty else {
                put("<array/>\n")
                return true
            }
            put("<array>\n")
            for element in array {
                guard write(element, depth: depth + 1) else { return false }
            }
            indent(depth)
            put("</array>\n")
            return true
        }

        /// The rest of a dictionary's lines, after the indent.
        private mutating func writeDictionary(_ dictionary: [String: Any], depth: Int) -> Bool {
            guard !dictionary.isEmpty else {
                put("<dict/>\n")
                return true
            }
            put("<dict>\n")
            let ranging = depth == 0 && ranges != nil
            if !ranging, dictionary.count >= PlistXML.reuseThreshold {
                guard writeEntries(remembering: dictionary, depth: depth) else { return false }
            } else {
                if ranging { ranges!.reserveCapacity(dictionary.count) }  // grown once, not rehashed along the way
                for (key, index) in PlistXML.sortedKeys(of: dictionary) {
                    guard writeKey(key, depth: depth) else { return false }
                    let start = bytes.count
                    guard write(dictionary[index].value, depth: depth + 1) else { return false }
                    if ranging { ranges![key] = start..<bytes.count }
                }
            }
            indent(depth)
            put("</dict>\n")
            return true
        }

        /// The entries of a large dictionary: the lines of its last encoding at `depth` when it is the very
        /// dictionary encoded then (see ``PlistXML/Encoded``), or else encoded and remembered.
        private mutating func writeEntries(remembering dictionary: [String: Any], depth: Int) -> Bool {
            let count = dictionary.count
            if let known = PlistXML.encodedMemo.withLock({ $0.first { $0.isKept(count: count, depth: depth) } }),
                PlistValue.sameStorage(known.dictionary, dictionary)
            {
                bytes.append(contentsOf: known.lines)
                portable = portable && known.portable
                return true
            }
            let first = bytes.count
            let outer = (holdsOnlyValues, portable)
            (holdsOnlyValues, portable) = (true, true)
            for (key, index) in PlistXML.sortedKeys(of: dictionary) {
                guard writeKey(key, depth: depth), write(dictionary[index].value, depth: depth + 1) else { return false }
            }
            let linesArePortable = portable
            portable = outer.1 && portable
            if holdsOnlyValues {
                let encoded = Encoded(dictionary: dictionary, depth: depth, lines: Array(bytes[first...]), portable: linesArePortable)
                PlistXML.encodedMemo.withLock { memo in
                    memo.removeAll { $0.isKept(count: count, depth: depth) }
                    if memo.count >= 8 { memo.removeAll() }
                    memo.append(encoded)
                }
            }
            holdsOnlyValues = outer.0 && holdsOnlyValues
            return true
        }

        /// The line of a key of a dictionary at `depth`.
        private mutating func writeKey(_ key: String, depth: Int) -> Bool {
            indent(depth + 1)
            put("<key>")
            escape(key)
            put("</key>\n")
            return true
        }

        /// An `NSNumber` as `<true/>`, `<integer>` or `<real>`, as Foundation writes it.
        private mutating func writeNumber(_ number: NSNumber) -> Bool {
            switch NumberKind(number) {
            case .boolean:
                put(number.boolValue ? "<true/>\n" : "<false/>\n")
            case .real:
                append("<real>\(PlistXML.text(of: number.doubleValue))</real>\n")
            case .unsigned:
                put("<integer>")
                let value = number.uint64Value
                if value > UInt64(Int64.max) { append("\(value)") } else { appendDecimal(Int64(value)) }
                put("</integer>\n")
            case .signed:
                put("<integer>")
                appendDecimal(number.int64Value)
                put("</integer>\n")
            case nil:
                return false
            }
            return true
        }

        /// Appends the decimal digits of `value` (no `String` made for it).
        private mutating func appendDecimal(_ value: Int64) {
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            let magnitude = value.magnitude
            var divisor: UInt64 = 1
            while magnitude / divisor >= 10 { divisor *= 10 }
            repeat {
                bytes.append(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))
                divisor /= 10
            } while divisor > 0
        }

        /// Appends `text` with `&`, `<` and `>` escaped, and a carriage return as `&#13;` (XML parsers read a raw one
        /// as a line feed); other control characters are written as they are, as CoreFoundation does, and make the
        /// document not ``portable``.
        private mutating func escape(_ text: String) {
            // Most keys and strings need no escaping: their bytes at once.
            var plain = text
            let copied = plain.withUTF8 { utf8 in
                guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == 0xEF })
                else { return false }
                bytes.append(contentsOf: utf8)
                return true
            }
            if copied { return }
            var sawEF = false
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "&"): put("&amp;")
                case UInt8(ascii: "<"): put("&lt;")
                case UInt8(ascii: ">"): put("&gt;")
                case 0x0D: put("&#13;")
                case 0x09, 0x0A: bytes.append(byte)
                case ..<0x20:
                    portable = false
                    bytes.append(byte)
                case 0xEF:
                    sawEF = true
                    bytes.append(byte)
                default: bytes.append(byte)
                }
            }
            if sawEF && (text.unicodeScalars.first == "\u{FEFF}" || text.unicodeScalars.contains { $0.value == 0xFFFE || $0.value == 0xFFFF }) {
                portable = false
            }
        }
    }

    /// A real spelled so every reader reads back the same `Double`, the sign of zero included (infinities as
    /// Foundation spells them).
    static func text(of real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        if real == 0 { return real.sign == .minus ? "-0.0" : "0.0" }
        return real.description
    }

    /// A date as CoreFoundation's XML writer spells it: UTC, whole seconds (rounded down), `yyyy-MM-ddTHH:mm:ssZ`,
    /// the year in astronomical numbering with at least four digits (`-001` for 2 BC); `nil` for a year
    /// CoreFoundation cannot read back.
    static func text(of date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        // Years of ±2 billion, and inside what `Int64` holds.
        guard seconds.isFinite, abs(seconds) < 7e16 else { return nil }
        let whole = Int64(seconds.rounded(.down))
        let (days, secondOfDay) = whole.quotientAndRemainder(dividingBy: 86_400)
        let day = secondOfDay < 0 ? days - 1 : days
        let second = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
        let shifted = day + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        guard year.magnitude <= Int32.max else { return nil }
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let digits = String(year.magnitude)
        let yearText = year < 0
            ? "-" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
            : String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return "\(yearText)-\(two(month))-\(two(dayOfMonth))T\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))Z"
    }
}

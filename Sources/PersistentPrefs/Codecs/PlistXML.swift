import Foundation

/// The writer of XML property lists, for the values the library stores.
///
/// It writes Foundation's layout (same header, tabs, sorted keys, whole-second UTC dates,
/// numbers that read back as the same `NSNumber` kind) for `String`, `NSNumber`, `Date`, `Data`,
/// arrays and string-keyed dictionaries, spelled so that CoreFoundation and XML parsers read back
/// the same values: `-0.0` keeps its sign and a carriage return in text is written `&#13;`. It
/// returns `nil` for what it cannot write exactly — an unknown type, a date whose year is beyond
/// ±2,147,483,647, which CoreFoundation cannot read back — and the caller refuses the write.
enum PlistXML {
    /// `value` as a whole XML property-list document, or `nil` when this writer does not handle
    /// it.
    ///
    /// - Parameter reusingLines: `false`: without the lines remembered from earlier encodings
    ///   (see ``Encoded``), and remembering none — what those shortcuts are checked against.
    static func document(_ value: Any, reusingLines: Bool = true) -> Data? {
        var writer = Writer()
        writer.reusing = reusingLines
        writer.append(header)
        guard writer.write(value, depth: 0) else { return nil }
        writer.put("</plist>\n")
        return Data(writer.bytes)
    }

    /// `dictionary` as a whole document, with where each top-level value's XML lies in it:
    /// the same bytes ``document(_:)`` writes for that value under any one key, so
    /// ``wrapped(_:)`` makes the document of `["v": value]` without encoding the value again.
    static func document(ranging dictionary: [String: Any]) -> (data: Data, ranges: [String: ByteSpan])? {
        var writer = Writer()
        writer.ranges = [:]
        writer.append(header)
        guard writer.write(dictionary, depth: 0) else { return nil }
        writer.put("</plist>\n")
        return (Data(writer.bytes), writer.ranges ?? [:])
    }

    /// Where a value's bytes lie in a document. A `Range<Int>` would do, but a dictionary of
    /// them is a generic type the runtime builds from its mangled name the first time a process
    /// uses it, checking `Int: Comparable` by scanning every loaded library's conformances
    /// (a quarter of a million instructions, a sixth of a one-shot `defaults write`'s work).
    struct ByteSpan: Sendable {
        /// The offset of the first byte.
        let start: Int
        /// The offset just past the last byte.
        let end: Int
        /// The same bytes as a range, to subscript `Data` with.
        var range: Range<Int> { start..<end }
    }

    /// The document of `["v": value]`, from the bytes of `value` written one level deep (a
    /// range of ``document(ranging:)``).
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

    /// The keys of `dictionary` in order. Sorting a 1,000-key set's keys was an eighth of a
    /// write's work; a large dictionary usually has the keys it had last time (a write changes
    /// a value, not the keys), so the last order seen for each size is checked and reused.
    static func sortedKeys(of dictionary: [String: Any]) -> [String] {
        guard dictionary.count >= 64 else { return dictionary.keys.sorted() }
        if let known = sortedKeyMemo.withLock({ $0[dictionary.count] }),
            known.allSatisfy({ dictionary[$0] != nil })  // as many distinct keys, all present: the same keys
        {
            return known
        }
        let sorted = dictionary.keys.sorted()
        sortedKeyMemo.withLock { memo in
            if memo.count >= 32 { memo.removeAll() }
            memo[dictionary.count] = sorted
        }
        return sorted
    }

    /// The last sorted keys seen, by count (see ``sortedKeys(of:)``).
    private static let sortedKeyMemo = Locked<[Int: [String]]>([:])

    /// The last encoding of each large dictionary (at least ``reuseThreshold`` keys), by key
    /// count and depth: the dictionary itself, its keys in order, and the lines of each entry.
    ///
    /// A write of one key of a 1,000-key set, or of a small set beside a 10,000-key one, encodes
    /// the whole suite again. A dictionary with the same storage as the one encoded last (an
    /// unchanged set beside the written one) is not encoded again: its lines are copied. One that
    /// a write derived from it by changing a few keys (``noteDerivation(_:from:touched:)``) has
    /// only those keys encoded; the lines between them are copied. The document is byte for byte
    /// what encoding it afresh gives: the same storage holds the same values, and a derivation
    /// names every key that may differ.
    private struct Encoded {
        let dictionary: [String: Any]
        let keys: [String]
        /// The lines of the dictionary's entries; entry `i` is `lines[ends[i - 1]..<ends[i]]`.
        let lines: [UInt8]
        let ends: [Int]

        /// Where the entry of each of `keys` is, in order; `nil` when one is not an entry.
        func indices(of keys: Set<String>) -> [Int]? {
            var found: [Int] = []
            found.reserveCapacity(keys.count)
            for key in keys {
                // `self.keys` is sorted (``PlistXML/sortedKeys(of:)``): a binary search.
                var low = 0
                var high = self.keys.count
                while low < high {
                    let middle = (low + high) / 2
                    if self.keys[middle] < key { low = middle + 1 } else { high = middle }
                }
                guard low < self.keys.count, self.keys[low] == key else { return nil }
                found.append(low)
            }
            return found.sorted()
        }
    }

    private struct EncodedKey: Hashable {
        let count: Int
        let depth: Int
    }

    private static let reuseThreshold = 64
    private static let encodedMemo = Locked<[EncodedKey: Encoded]>([:])

    /// A dictionary a write made from another by changing only some keys.
    private struct Derivation {
        let result: [String: Any]
        let base: [String: Any]
        let touched: Set<String>
        /// Whether `result` has exactly `base`'s keys (only values changed).
        let keepsKeys: Bool
    }

    /// The derivations noted and not yet used, the newest last (a few: a write uses its own at once).
    private static let derivations = Locked<[Derivation]>([])

    /// Notes that `result` is `base` with only the keys in `touched` changed, added or removed,
    /// so encoding `result` copies the lines of the other keys from `base`'s encoding.
    ///
    /// A promise the caller makes: a key outside `touched` that differs would be written with
    /// its old value. `keepsKeys`, another: `result` has exactly `base`'s keys, so when many
    /// lines change it is written in the order of `base`'s encoding, without sorting its keys.
    static func noteDerivation(_ result: [String: Any], from base: [String: Any], touched: Set<String>, keepsKeys: Bool = false) {
        guard result.count >= reuseThreshold, !PlistValue.sameStorage(result, base) else { return }
        derivations.withLock { list in
            if list.count >= 4 { list.removeFirst() }
            list.append(Derivation(result: result, base: base, touched: touched, keepsKeys: keepsKeys))
        }
    }

    /// The noted derivation of `dictionary`, taken out of the list.
    private static func derivation(of dictionary: [String: Any]) -> Derivation? {
        derivations.withLock { list in
            guard let index = list.lastIndex(where: { PlistValue.sameStorage($0.result, dictionary) }) else { return nil }
            return list.remove(at: index)
        }
    }

    private static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    private struct Writer {
        var bytes: [UInt8] = []
        /// Where each top-level value was written, when asked for.
        var ranges: [String: ByteSpan]?
        /// Whether large dictionaries reuse and remember their lines (see ``PlistXML/Encoded``).
        var reusing = true

        init() {
            bytes.reserveCapacity(1024)
        }

        mutating func append(_ text: String) {
            bytes.append(contentsOf: text.utf8)
        }

        /// Appends a fixed piece of markup: its bytes at once (a `String`'s UTF-8 view is
        /// appended through a generic sequence, a few times dearer for every tag of a line).
        mutating func put(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        mutating func indent(_ depth: Int) {
            for _ in 0..<depth { bytes.append(UInt8(ascii: "\t")) }
        }

        /// Writes one value on its own line(s) at `depth`; `false` when it cannot.
        mutating func write(_ value: Any, depth: Int) -> Bool {
            guard depth <= PlistValue.maximumDepth + 8 else { return false }
            // The shapes the library keeps, by exact type first: a failed cast of a Swift
            // dictionary to `String` or `NSNumber` bridges the whole of it to Foundation first
            // (milliseconds for a 1,000-key set), and a cast to a protocol costs more than
            // writing the number.
            let kind = type(of: value)
            if kind == [String: Any].self {
                indent(depth)
                return writeDictionary(value as! [String: Any], depth: depth)
            }
            if let number = PlistValue.exactly(value, NSNumber.self) {
                indent(depth)
                return writeNumber(number)
            }
            if kind is AnyObject.Type, let number = value as? NSNumber {  // a subclass
                indent(depth)
                return writeNumber(number)
            }
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
            if reusing, !ranging, dictionary.count >= PlistXML.reuseThreshold {
                return writeEntries(reusing: dictionary, depth: depth)
            }
            if ranging { ranges!.reserveCapacity(dictionary.count) }  // grown once, not rehashed along the way
            for key in PlistXML.sortedKeys(of: dictionary) {
                guard writeKey(key, depth: depth) else { return false }
                let start = bytes.count
                guard write(dictionary[key]!, depth: depth + 1) else { return false }
                if ranging { ranges![key] = ByteSpan(start: start, end: bytes.count) }
            }
            indent(depth)
            put("</dict>\n")
            return true
        }

        /// The entries of a large dictionary and its closing line, copying what its last
        /// encoding already holds (see ``PlistXML/Encoded``), then remembering this one.
        private mutating func writeEntries(reusing dictionary: [String: Any], depth: Int) -> Bool {
            let memoKey = EncodedKey(count: dictionary.count, depth: depth)
            let first = bytes.count
            let known = PlistXML.encodedMemo.withLock { $0[memoKey] }
            var encoded: Encoded?
            // A noted derivation of the dictionary encoded last, when there is one.
            var derivation: Derivation?
            if let known, !PlistValue.sameStorage(known.dictionary, dictionary) {
                derivation = PlistXML.derivation(of: dictionary).flatMap { PlistValue.sameStorage($0.base, known.dictionary) ? $0 : nil }
            }
            if let known, PlistValue.sameStorage(known.dictionary, dictionary) {
                bytes.append(contentsOf: known.lines)  // the very dictionary encoded last
            } else if let known, let derivation, derivation.touched.count <= dictionary.count / 4,
                let changed = known.indices(of: derivation.touched)
            {
                // Same count, and every touched key was an entry: no key was added or removed.
                var ends: [Int] = []
                ends.reserveCapacity(known.ends.count)
                var copied = 0  // where the next run of unchanged lines starts in `known.lines`
                var shift = 0  // how much longer the new lines are so far
                var next = 0
                for index in changed {
                    let start = index == 0 ? 0 : known.ends[index - 1]
                    bytes.append(contentsOf: known.lines[copied..<start])
                    while next < index {
                        ends.append(known.ends[next] + shift)
                        next += 1
                    }
                    let key = known.keys[index]
                    let before = bytes.count
                    guard let value = dictionary[key], writeEntry(key, value, depth: depth) else { return false }
                    shift += (bytes.count - before) - (known.ends[index] - start)
                    ends.append(known.ends[index] + shift)
                    next = index + 1
                    copied = known.ends[index]
                }
                bytes.append(contentsOf: known.lines[copied...])
                while next < known.ends.count {
                    ends.append(known.ends[next] + shift)
                    next += 1
                }
                encoded = Encoded(dictionary: dictionary, keys: known.keys, lines: Array(bytes[first...]), ends: ends)
            } else {
                // The same keys as the dictionary encoded last: in its order, with no sorting.
                let keys = derivation?.keepsKeys == true ? known?.keys ?? PlistXML.sortedKeys(of: dictionary) : PlistXML.sortedKeys(of: dictionary)
                var ends: [Int] = []
                ends.reserveCapacity(keys.count)
                for key in keys {
                    guard writeEntry(key, dictionary[key]!, depth: depth) else { return false }
                    ends.append(bytes.count - first)
                }
                encoded = Encoded(dictionary: dictionary, keys: keys, lines: Array(bytes[first...]), ends: ends)
            }
            if let encoded {
                PlistXML.encodedMemo.withLock { memo in
                    if memo[memoKey] == nil, memo.count >= 8 { memo.removeAll() }
                    memo[memoKey] = encoded
                }
            }
            indent(depth)
            put("</dict>\n")
            return true
        }

        /// One entry of a dictionary: its key's line and its value's.
        private mutating func writeEntry(_ key: String, _ value: Any, depth: Int) -> Bool {
            writeKey(key, depth: depth) && write(value, depth: depth + 1)
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

        /// Appends the decimal digits of `value` (string interpolation cost ~300 ns a number).
        private mutating func appendDecimal(_ value: Int64) {
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            var magnitude = value.magnitude
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 20 digits at most, in 24 bytes
            var count = 0
            withUnsafeMutableBytes(of: &digits) { buffer in
                repeat {
                    buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                    magnitude /= 10
                    count += 1
                } while magnitude > 0
                bytes.append(contentsOf: buffer[(24 - count)...])
            }
        }

        /// Appends `text` with `&`, `<` and `>` escaped, and a carriage return as `&#13;` (XML
        /// parsers read a raw one as a line feed); other control characters are written as they
        /// are, as CoreFoundation writes them.
        private mutating func escape(_ text: String) {
            // Most keys and strings need no escaping: their bytes at once.
            var plain = text
            let copied = plain.withUTF8 { utf8 in
                guard !utf8.contains(where: { $0 == 0x0D || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") })
                else { return false }
                bytes.append(contentsOf: utf8)
                return true
            }
            if copied { return }
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "&"): put("&amp;")
                case UInt8(ascii: "<"): put("&lt;")
                case UInt8(ascii: ">"): put("&gt;")
                case 0x0D: put("&#13;")
                default: bytes.append(byte)
                }
            }
        }
    }

    /// A real spelled so that every reader reads back the same `Double`, the sign of zero
    /// included (infinities as `+infinity` and `-infinity`, as Foundation spells them).
    static func text(of real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        if real == 0 { return real.sign == .minus ? "-0.0" : "0.0" }
        return real.description
    }

    /// A date as CoreFoundation's XML writer spells it: UTC, to the whole second (rounded down),
    /// `yyyy-MM-ddTHH:mm:ssZ`, the year in astronomical numbering with at least four digits
    /// (`-001` for 2 BC, as CoreFoundation writes years outside 1–9999); `nil` for a year
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

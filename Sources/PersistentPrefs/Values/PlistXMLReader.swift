import Foundation

extension PlistXML {
    /// The dictionary at the top of an XML property list, read without Foundation, exactly as
    /// `PropertyListSerialization` hands it back on Linux; `nil` when the document is not one
    /// this reader knows to read the same way — the caller then asks Foundation, which also
    /// words the error of a damaged file.
    ///
    /// Foundation's parser is cheap on Linux; bridging its result to Swift is not: the first
    /// parse in a process cost about 2.4 million instructions for a 30-key suite (dynamic casts
    /// of every value, each a first-time conformance look-up), most of a `prefs-harness
    /// defaults` command's work, and reading a suite holding a 1,000-key set took 3 ms. This
    /// reader builds the Swift values directly, as Foundation hands them back: `String`, `Bool`
    /// for `<true/>` and `<false/>`, `NSNumber` for `<integer>` (of kind `q`, or `Q` above
    /// `Int64.max`) and `<real>` (kind `d`), `Date`, `Data` and `[Any]`; dictionaries, at every
    /// level, as `[String: Any]` — Foundation's nested `[AnyHashable: Any]` with the same
    /// (string) keys, in the shape the library keeps (inserting into `AnyHashable` keys cost
    /// three quarters of reading a large set, and normalising converted them again).
    ///
    /// What it reads is the documents the library and Foundation's writer write and their
    /// plain variations: the XML declaration (UTF-8), the DOCTYPE, the `plist` element, the
    /// eleven value elements, whitespace between elements, the five named entities and
    /// character references. It declines anything else rather than guess: another encoding, a
    /// byte-order mark, comments, CDATA, processing instructions, attributes on values, control
    /// characters or carriage returns in text, duplicate keys, numbers and dates in forms other
    /// than Foundation's writer's, nesting deeper than ``PlistValue/maximumDepth``, or a top
    /// level that is not a dictionary. The tests check every document it reads against
    /// Foundation's reading of it.
    static func dictionary(from data: Data) -> [String: Any]? {
        data.withUnsafeBytes { bytes in
            var reader = Reader(bytes: bytes)
            return reader.document()
        }
    }
}

/// The cursor over a document's bytes; every method returns `nil` (or `false`) to decline.
private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var at = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func document() -> [String: Any]? {
        if starts(with: "<?xml") {
            guard let end = find("?>") else { return nil }
            // ASCII case folding is enough: every word looked for is ASCII.
            let declaration = bytes[at..<end].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            if Self.occurs("encoding", in: declaration) {
                guard Self.occurs("encoding=\"utf-8\"", in: declaration) || Self.occurs("encoding='utf-8'", in: declaration) else {
                    return nil
                }
            }
            at = end + 2
        }
        skipSpace()
        if starts(with: "<!DOCTYPE") {
            // An internal subset ("[...]") could declare entities: declined.
            while at < bytes.count, bytes[at] != UInt8(ascii: ">") {
                if bytes[at] == UInt8(ascii: "[") { return nil }
                at += 1
            }
            at += 1
            skipSpace()
        }
        guard skip("<plist"), at < bytes.count, bytes[at] == UInt8(ascii: ">") || Self.isSpace(bytes[at]) else { return nil }
        while at < bytes.count, bytes[at] != UInt8(ascii: ">") { at += 1 }
        guard at < bytes.count, bytes[at - 1] != UInt8(ascii: "/") else { return nil }
        at += 1
        skipSpace()
        guard let top = dictionary(entriesAt: 1) else { return nil }
        skipSpace()
        guard skip("</plist>") else { return nil }
        skipSpace()
        return at == bytes.count ? top : nil
    }

    /// A `<dict>` element (or `<dict/>`), its values read at `depth`; `nil` for a key seen
    /// before or anything ``value(depth:)`` declines.
    private mutating func dictionary(entriesAt depth: Int) -> [String: Any]? {
        if skip("<dict/>") { return [:] }
        guard skip("<dict>") else { return nil }
        var dictionary: [String: Any] = [:]
        while true {
            skipSpace()
            if skip("</dict>") { return dictionary }
            guard skip("<key>"), let key = text(closing: "</key>") else { return nil }
            skipSpace()
            guard let value = value(depth: depth), dictionary.updateValue(value, forKey: key) == nil else { return nil }
        }
    }

    private mutating func value(depth: Int) -> Any? {
        guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "<") else { return nil }
        // The element's first letter picks the names to try.
        switch bytes[at + 1] {
        case UInt8(ascii: "i"):
            return skip("<integer>") ? content(closing: "</integer>").flatMap(Self.integer) : nil
        case UInt8(ascii: "s"):
            if skip("<string>") { return text(closing: "</string>") }
            return skip("<string/>") ? "" : nil
        case UInt8(ascii: "t"):
            return skip("<true/>") ? true : nil
        case UInt8(ascii: "f"):
            return skip("<false/>") ? false : nil
        case UInt8(ascii: "r"):
            return skip("<real>") ? content(closing: "</real>").flatMap(Self.real) : nil
        case UInt8(ascii: "d"):
            if skip("<date>") { return content(closing: "</date>").flatMap(Self.date) }
            if skip("<data>") { return content(closing: "</data>").flatMap(Self.data) }
            // Containers nest at most as deep as the library stores.
            guard depth <= PlistValue.maximumDepth else { return nil }
            return dictionary(entriesAt: depth + 1)
        case UInt8(ascii: "a"):
            guard depth <= PlistValue.maximumDepth else { return nil }
            if skip("<array/>") { return [Any]() }
            guard skip("<array>") else { return nil }
            var array: [Any] = []
            while true {
                skipSpace()
                if skip("</array>") { return array }
                guard let element = value(depth: depth + 1) else { return nil }
                array.append(element)
            }
        default:
            return nil
        }
    }

    /// The text up to `closing` with its entities replaced; `nil` for markup, control
    /// characters or carriage returns in it, an unknown entity or bytes that are not UTF-8.
    private mutating func text(closing: StaticString) -> String? {
        let start = at
        var plain = true
        while at < bytes.count, bytes[at] != UInt8(ascii: "<") {
            let byte = bytes[at]
            if byte == UInt8(ascii: "&") { plain = false } else if byte < 0x20 && byte != 0x09 && byte != 0x0A || byte == 0x7F { return nil }
            at += 1
        }
        let end = at
        guard skip(closing) else { return nil }
        if plain { return Self.string(bytes[start..<end]) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(end - start)
        var index = start
        while index < end {
            guard bytes[index] == UInt8(ascii: "&") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            guard let semicolon = bytes[index..<end].firstIndex(of: UInt8(ascii: ";")) else { return nil }
            let name = bytes[(index + 1)..<semicolon]
            index = semicolon + 1
            switch String(decoding: name, as: UTF8.self) {
            case "amp": decoded.append(UInt8(ascii: "&"))
            case "lt": decoded.append(UInt8(ascii: "<"))
            case "gt": decoded.append(UInt8(ascii: ">"))
            case "quot": decoded.append(UInt8(ascii: "\""))
            case "apos": decoded.append(UInt8(ascii: "'"))
            case let reference where reference.hasPrefix("#"):
                let digits = reference.dropFirst()
                let code = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                guard let code, code >= 0x20 || code == 0x09 || code == 0x0A, code != 0x7F, let scalar = Unicode.Scalar(code),
                    !digits.contains("+"), !digits.contains("-")
                else { return nil }
                decoded.append(contentsOf: String(Character(scalar)).utf8)
            default: return nil
            }
        }
        return decoded.withUnsafeBytes { Self.string($0[...]) }
    }

    /// `utf8` as a string; `nil` when it is not UTF-8 (`String(validating:as:)` needs macOS 15).
    private static func string(_ utf8: UnsafeRawBufferPointer.SubSequence) -> String? {
        let string = String(decoding: utf8, as: UTF8.self)
        if !utf8.contains(where: { $0 >= 0x80 }) { return string }  // ASCII, the usual key: valid
        // Decoding replaces each bad sequence with U+FFFD: the bytes come back the same only when all were good.
        return string.utf8.elementsEqual(utf8) ? string : nil
    }

    /// The bytes up to `closing`, for numbers, dates and data (no markup or entities in them).
    private mutating func content(closing: StaticString) -> UnsafeRawBufferPointer.SubSequence? {
        let start = at
        while at < bytes.count, bytes[at] != UInt8(ascii: "<") {
            if bytes[at] == UInt8(ascii: "&") { return nil }
            at += 1
        }
        let end = at
        return skip(closing) ? bytes[start..<end] : nil
    }

    /// An integer as Foundation's writer spells it: an optional minus and decimal digits.
    private static func integer(_ text: UnsafeRawBufferPointer.SubSequence) -> Any? {
        let negative = text.first == UInt8(ascii: "-")
        let digits = negative ? text.dropFirst() : text[...]
        guard !digits.isEmpty, digits.count <= 20 else { return nil }
        var magnitude: UInt64 = 0
        for byte in digits {
            guard isDigit(byte) else { return nil }
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return NSNumber(value: magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? NSNumber(value: Int64(magnitude)) : NSNumber(value: magnitude)
    }

    /// A real as Foundation's writer spells it: decimal with an optional fraction and
    /// exponent, `nan`, `+infinity` or `-infinity`.
    private static func real(_ text: UnsafeRawBufferPointer.SubSequence) -> Any? {
        let spelled = String(decoding: text, as: UTF8.self)
        switch spelled {
        case "nan": return NSNumber(value: Double.nan)
        case "+infinity": return NSNumber(value: Double.infinity)
        case "-infinity": return NSNumber(value: -Double.infinity)
        default: break
        }
        // Digits, with at most one point and one exponent, a sign only first or after the "e".
        var previous: UInt8 = 0
        var sawDigit = false
        var sawPoint = false
        var sawExponent = false
        for byte in text {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
            case UInt8(ascii: "."): guard !sawPoint, !sawExponent else { return nil }
                sawPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): guard sawDigit, !sawExponent else { return nil }
                sawExponent = true
            case UInt8(ascii: "-"), UInt8(ascii: "+"): guard previous == 0 || previous == UInt8(ascii: "e") || previous == UInt8(ascii: "E") else { return nil }
            default: return nil
            }
            previous = byte
        }
        guard sawDigit, isDigit(previous), let value = Double(spelled) else { return nil }
        return NSNumber(value: value)
    }

    /// A date as Foundation's writer spells it: `yyyy-MM-ddTHH:mm:ssZ`, years 1–9999.
    private static func date(_ text: UnsafeRawBufferPointer.SubSequence) -> Any? {
        let bytes = Array(text)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard isDigit(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), year >= 1, (1...12).contains(month), hour < 24, minute < 60,
            second < 60
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day >= 1, day <= lengths[Int(month - 1)] else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm), the
        // inverse of the one ``PlistXML/text(of:)`` writes with.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// Base64 with whitespace anywhere, as Foundation's writer breaks its lines; only the
    /// canonical form (whole groups of four, padding only at the end), which every decoder
    /// reads alike.
    private static func data(_ text: UnsafeRawBufferPointer.SubSequence) -> Any? {
        let compact = text.filter { !isSpace($0) }
        let padding = compact.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard compact.count % 4 == 0, padding <= 2,
            compact.dropLast(padding).allSatisfy({ isLetterOrDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") })
        else { return nil }
        return Data(base64Encoded: Data(compact))
    }

    // MARK: - Bytes

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || isDigit(byte)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func skipSpace() {
        while at < bytes.count, Self.isSpace(bytes[at]) { at += 1 }
    }

    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - at >= count else { return false }
        return memcmp(bytes.baseAddress! + at, text.utf8Start, count) == 0
    }

    /// Moves past `text` if the document goes on with it.
    private mutating func skip(_ text: StaticString) -> Bool {
        guard starts(with: text) else { return false }
        at += text.utf8CodeUnitCount
        return true
    }

    /// Whether `text` occurs in `bytes` (byte for byte; Foundation's `contains` is an `NSString`
    /// search, a tenth of a small document's reading).
    private static func occurs(_ text: StaticString, in bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { offset(of: text, in: $0, from: 0) != nil }
    }

    /// Where `text` next begins, from the cursor on.
    private func find(_ text: StaticString) -> Int? {
        Self.offset(of: text, in: bytes, from: at)
    }

    /// Where `text` first begins in `bytes` at or after `start`, or `nil`.
    private static func offset(of text: StaticString, in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        while index + text.utf8CodeUnitCount <= bytes.count {
            if memcmp(bytes.baseAddress! + index, text.utf8Start, text.utf8CodeUnitCount) == 0 { return index }
            index += 1
        }
        return nil
    }
}

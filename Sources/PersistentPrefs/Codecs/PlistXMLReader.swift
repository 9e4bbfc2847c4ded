import Foundation

extension PlistXML {
    /// Why ``read(_:)`` did not read a document.
    struct Decline: Error, Sendable {
        /// What is wrong, with the line it is on.
        let reason: String
        /// Whether the document is damaged (truncated, not UTF-8, not XML, its top level not one dictionary, …).
        /// `false` for a whole document some reader reads but this one cannot read exactly as CoreFoundation does:
        /// such a file must be left as it is.
        let damaged: Bool
    }

    /// The dictionary at the top of an XML property list, read exactly as CoreFoundation reads it, or why it was
    /// declined. Values come back as `String`, `Bool`, `NSNumber` for `<integer>` (kind `q`, or `Q` above
    /// `Int64.max`) and `<real>` (kind `d`), `Date`, `Data`, `[Any]` and `[String: Any]`.
    ///
    /// It reads what XML writers and hand edits produce: a BOM, the XML declaration, a DOCTYPE without an internal
    /// subset, comments and processing instructions and CR/CRLF line ends between elements, attributes, the five
    /// named entities, character references, CDATA, empty elements (`<data/>`, which CoreFoundation refuses, as the
    /// empty data other readers take it for), duplicate keys (the last counts), `0x` integers, reals spelled `nan` or
    /// `[+-]inf[inity]` in any case, and dates with years of up to ten digits and an optional minus.
    ///
    /// Where CoreFoundation and XML parsers (Python's `plistlib`) would read a document differently (a carriage
    /// return in text of a document with CRLF line ends, a comment inside text, whitespace around a number, another
    /// encoding, an internal DTD subset, nesting deeper than ``PlistValue/maximumDepth`` within a set) it declines,
    /// so a write never replaces another program's value with a different reading. A document that does not end
    /// with its root element (a file caught while written) is declined as damaged whatever else it holds.
    static func read(_ data: Data) -> Result<[String: Any], Decline> {
        data.withUnsafeBytes { bytes in
            var reader = Reader(bytes: bytes)
            do {
                return .success(try reader.document())
            } catch let decline as Decline {
                guard decline.damaged || reader.isWhole else {
                    return .failure(Decline(reason: "the document ends before its root element does (\(decline.reason))", damaged: true))
                }
                return .failure(decline)
            } catch {
                return .failure(Decline(reason: "\(error)", damaged: true))
            }
        }
    }
}

/// The cursor over a document's bytes; every method throws a ``PlistXML/Decline``.
private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var at = 0
    /// Whether carriage returns end lines between elements (see ``PlistXML/read(_:)``).
    let crLineEnds: Bool
    /// The deepest container read, counting the top dictionary as 0: a suite file holds each set in its top
    /// dictionary, so a value ``PlistValue/maximumDepth`` deep in a set (which writes accept) is one level deeper.
    static let maximumDepth = PlistValue.maximumDepth + 1

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        crLineEnds = Self.endsLinesWithCR(bytes)
    }

    /// Whether some carriage return stands between a `>` and a `<` with only whitespace around it.
    private static func endsLinesWithCR(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while let found = bytes[index...].firstIndex(of: 0x0D) {
            let before = bytes[..<found].lastIndex { !isSpace($0) }
            let after = bytes[(found + 1)...].firstIndex { !isSpace($0) }
            if let before, let after, bytes[before] == UInt8(ascii: ">"), bytes[after] == UInt8(ascii: "<") { return true }
            index = found + 1
        }
        return false
    }

    /// Whether the document ends as a whole one does: with its root's end tag (`</plist>`, or `</dict>` without a
    /// `plist` element), then only whitespace, comments and processing instructions; or is in another encoding.
    var isWhole: Bool {
        if Self.isWideEncoding(bytes) { return true }
        var end = bytes.count
        func trim() {
            while end > 0, Self.isSpace(bytes[end - 1]) { end -= 1 }
        }
        func endsWith(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            return end >= count && memcmp(bytes.baseAddress! + end - count, text.utf8Start, count) == 0
        }
        /// Where the last `text` starting before `end` begins.
        func lastStart(of text: StaticString) -> Int? {
            var index = end - text.utf8CodeUnitCount
            while index >= 0 {
                if memcmp(bytes.baseAddress! + index, text.utf8Start, text.utf8CodeUnitCount) == 0 { return index }
                index -= 1
            }
            return nil
        }
        trim()
        while true {
            if endsWith("-->"), let open = lastStart(of: "<!--") {
                end = open
            } else if endsWith("?>"), let open = lastStart(of: "<?") {
                end = open
            } else {
                break
            }
            trim()
        }
        guard endsWith(">") else { return false }
        end -= 1
        trim()
        return endsWith("</plist") || (endsWith("</dict") && Self.offset(of: "<plist", in: bytes, from: 0) == nil)
    }

    // MARK: - Declining

    /// The line of `offset`, counting CR, LF and CRLF as line ends.
    private func line(of offset: Int) -> Int {
        var line = 1
        var index = 0
        while index < min(offset, bytes.count) {
            if bytes[index] == 0x0A || (bytes[index] == 0x0D && (index + 1 >= bytes.count || bytes[index + 1] != 0x0A)) { line += 1 }
            index += 1
        }
        return line
    }

    /// A document no reader reads.
    private func damaged(_ what: String, at offset: Int? = nil) -> PlistXML.Decline {
        PlistXML.Decline(reason: "line \(line(of: offset ?? at)): \(what)", damaged: true)
    }

    /// A document that some reader reads, but not exactly as CoreFoundation does.
    private func unsupported(_ what: String, at offset: Int? = nil) -> PlistXML.Decline {
        PlistXML.Decline(reason: "line \(line(of: offset ?? at)): \(what)", damaged: false)
    }

    // MARK: - Document

    mutating func document() throws -> [String: Any] {
        guard !bytes.isEmpty else { throw damaged("the file is empty") }
        if starts(with: "\u{FEFF}") {
            at = 3
        } else if Self.isWideEncoding(bytes) {
            throw unsupported("the document is in UTF-16 or UTF-32; only UTF-8 is read")
        }
        if starts(with: "<?xml"), at + 5 < bytes.count, Self.isSpace(bytes[at + 5]) || bytes[at + 5] == UInt8(ascii: "?") {
            try declaration()
        }
        var sawDoctype = false
        while true {
            skipSpace()
            guard at < bytes.count else { throw damaged("no root element") }
            if try skipCommentOrInstruction() { continue }
            if starts(with: "<!DOCTYPE"), !sawDoctype {
                try doctype()
                sawDoctype = true
                continue
            }
            break
        }
        guard bytes[at] == UInt8(ascii: "<") else { throw damaged("not an XML document") }
        let root = try startTag()
        let top: Any
        if root.name == "plist" {
            guard !root.empty else { throw damaged("an empty <plist/> element", at: root.offset) }
            guard let value = try nextValue(depth: 0) else { throw damaged("a <plist> element without a value", at: root.offset) }
            top = value
            if try nextValue(depth: 0) != nil { throw damaged("a <plist> element with more than one value") }
            try endTag("plist")
        } else {
            top = try value(of: root, depth: 0)
        }
        while at < bytes.count {
            skipSpace()
            guard at < bytes.count else { break }
            guard try skipCommentOrInstruction() else { throw unsupported("content after the root element") }
        }
        guard let dictionary = top as? [String: Any] else {
            throw PlistXML.Decline(reason: "the top level is not a dictionary", damaged: true)
        }
        return dictionary
    }

    /// Whether `bytes` start with a UTF-16 or UTF-32 byte-order mark, or with `<` in one of them.
    private static func isWideEncoding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let head = Array(bytes.prefix(4))
        let marks: [[UInt8]] = [[0xFE, 0xFF], [0xFF, 0xFE], [0x00, 0x3C, 0x00], [0x3C, 0x00], [0x00, 0x00, 0xFE, 0xFF], [0x00, 0x00, 0x00, 0x3C]]
        return marks.contains { head.starts(with: $0) }
    }

    /// The XML declaration: only UTF-8 (or no encoding named) is read.
    private mutating func declaration() throws {
        guard let end = Self.offset(of: "?>", in: bytes, from: at) else { throw damaged("an unterminated XML declaration") }
        let text = String(decoding: bytes[at..<end], as: UTF8.self)
        if let range = text.range(of: "encoding") {
            var rest = text[range.upperBound...].drop { $0.isWhitespace }
            guard rest.first == "=" else { throw unsupported("an XML declaration whose encoding cannot be read") }
            rest = rest.dropFirst().drop { $0.isWhitespace }
            guard let quote = rest.first, quote == "\"" || quote == "'", let close = rest.dropFirst().firstIndex(of: quote) else {
                throw unsupported("an XML declaration whose encoding cannot be read")
            }
            let name = rest[rest.index(after: rest.startIndex)..<close]
            guard name.lowercased() == "utf-8" else { throw unsupported("the document is declared in \(name); only UTF-8 is read") }
        }
        at = end + 2
    }

    /// A DOCTYPE without an internal subset (which could declare entities).
    private mutating func doctype() throws {
        var quote: UInt8?
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            if let open = quote {
                // CoreFoundation ends the DOCTYPE at the first ">", an XML parser at the first outside quotes.
                if byte == UInt8(ascii: ">") { throw unsupported("a DOCTYPE with \">\" inside quotes") }
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                throw unsupported("a DOCTYPE with an internal subset")
            } else if byte == UInt8(ascii: ">") {
                return
            }
        }
        throw damaged("an unterminated DOCTYPE")
    }

    /// Moves past a comment or a processing instruction at the cursor; `false` when there is none.
    private mutating func skipCommentOrInstruction() throws -> Bool {
        if starts(with: "<!--") {
            let start = at
            guard let dashes = Self.offset(of: "--", in: bytes, from: at + 4) else { throw damaged("an unterminated comment", at: start) }
            // XML forbids "--" inside a comment; CoreFoundation would end it at the first "-->".
            guard dashes + 2 < bytes.count else { throw damaged("an unterminated comment", at: start) }
            guard bytes[dashes + 2] == UInt8(ascii: ">") else {
                throw unsupported("a comment holding \"--\"", at: start)
            }
            at = dashes + 3
            return true
        }
        if starts(with: "<?") {
            let start = at
            guard let end = Self.offset(of: "?>", in: bytes, from: at + 2) else { throw damaged("an unterminated processing instruction", at: start) }
            let target = bytes[(at + 2)..<end].prefix { !Self.isSpace($0) }
            if target.count == 3, String(decoding: target, as: UTF8.self).lowercased() == "xml" {
                throw unsupported("an XML declaration that does not open the document", at: start)
            }
            at = end + 2
            return true
        }
        return false
    }

    // MARK: - Elements

    private struct Tag {
        let name: String
        let empty: Bool
        let offset: Int
    }

    /// A start tag at the cursor (`<name attributes>` or `<name attributes/>`).
    private mutating func startTag() throws -> Tag {
        let offset = at
        guard at < bytes.count, bytes[at] == UInt8(ascii: "<") else {
            throw at < bytes.count ? unsupported("text where an element belongs") : damaged("the document ends too early")
        }
        at += 1
        let nameStart = at
        while at < bytes.count, !Self.isSpace(bytes[at]), bytes[at] != UInt8(ascii: ">"), bytes[at] != UInt8(ascii: "/") { at += 1 }
        guard at < bytes.count else { throw damaged("the document ends inside a tag", at: offset) }
        let name = String(decoding: bytes[nameStart..<at], as: UTF8.self)
        guard !name.isEmpty, !name.hasPrefix("!"), !name.hasPrefix("?") else { throw unsupported("markup where an element belongs", at: offset) }
        // Attributes: name="value" or name='value'; a quoted ">" would end the tag for CoreFoundation only.
        while true {
            skipSpace()
            guard at < bytes.count else { throw damaged("the document ends inside a tag", at: offset) }
            if bytes[at] == UInt8(ascii: ">") {
                at += 1
                return Tag(name: name, empty: false, offset: offset)
            }
            if starts(with: "/>") {
                at += 2
                return Tag(name: name, empty: true, offset: offset)
            }
            if endsWithin("/>") { throw damaged("the document ends inside a tag", at: offset) }
            let attributeStart = at
            while at < bytes.count, Self.isNameByte(bytes[at]) { at += 1 }
            skipSpace()
            guard at < bytes.count else { throw damaged("the document ends inside a tag", at: offset) }
            guard at > attributeStart else { throw unsupported("a malformed tag <\(name)>", at: offset) }
            guard bytes[at] == UInt8(ascii: "=") else { throw unsupported("a malformed tag <\(name)>", at: offset) }
            at += 1
            skipSpace()
            guard at < bytes.count else { throw damaged("the document ends inside a tag", at: offset) }
            guard bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else {
                throw unsupported("a malformed tag <\(name)>", at: offset)
            }
            let quote = bytes[at]
            at += 1
            while at < bytes.count, bytes[at] != quote {
                if bytes[at] == UInt8(ascii: ">") || bytes[at] == UInt8(ascii: "<") { throw unsupported("a tag <\(name)> with markup in an attribute", at: offset) }
                at += 1
            }
            guard at < bytes.count else { throw damaged("the document ends inside a tag", at: offset) }
            at += 1
        }
    }

    /// The end tag `</name>` at the cursor (whitespace before its `>` allowed).
    private mutating func endTag(_ name: String) throws {
        let offset = at
        guard starts(with: "</") else {
            throw at < bytes.count && !endsWithin("</") ? unsupported("content where </\(name)> belongs") : damaged("the document ends before </\(name)>")
        }
        at += 2
        let nameStart = at
        while at < bytes.count, !Self.isSpace(bytes[at]), bytes[at] != UInt8(ascii: ">") { at += 1 }
        let found = String(decoding: bytes[nameStart..<at], as: UTF8.self)
        guard found == name else { throw damaged("</\(found)> where </\(name)> belongs", at: offset) }
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: ">") else { throw damaged("a malformed </\(name)>", at: offset) }
        at += 1
    }

    /// The next value element inside a container (after whitespace, comments, processing instructions), or `nil` at
    /// the container's end tag (left at the cursor).
    private mutating func nextValue(depth: Int) throws -> Any? {
        guard let tag = try nextTag() else { return nil }
        guard tag.name != "key" else { throw unsupported("a <key> where a value belongs", at: tag.offset) }
        return try value(of: tag, depth: depth)
    }

    /// The next start tag inside a container, or `nil` at an end tag (left at the cursor).
    private mutating func nextTag() throws -> Tag? {
        while true {
            skipSpace()
            guard at < bytes.count else { throw damaged("the document ends inside a container") }
            if try skipCommentOrInstruction() { continue }
            if starts(with: "</") { return nil }
            return try startTag()
        }
    }

    /// The value of the element `tag` opened.
    private mutating func value(of tag: Tag, depth: Int) throws -> Any {
        switch tag.name {
        case "dict":
            guard depth <= Self.maximumDepth else { throw unsupported("nesting deeper than \(Self.maximumDepth) levels", at: tag.offset) }
            if tag.empty { return [String: Any]() }
            var dictionary: [String: Any] = [:]
            while let keyTag = try nextTag() {
                guard keyTag.name == "key" else { throw unsupported("a <\(keyTag.name)> where a <key> belongs", at: keyTag.offset) }
                let key = keyTag.empty ? "" : try text(closing: "key")
                guard let value = try nextValue(depth: depth + 1) else { throw damaged("a key without a value", at: keyTag.offset) }
                dictionary[key] = value  // the last of duplicate keys counts, for every reader
            }
            try endTag("dict")
            return dictionary
        case "array":
            guard depth <= Self.maximumDepth else { throw unsupported("nesting deeper than \(Self.maximumDepth) levels", at: tag.offset) }
            if tag.empty { return [Any]() }
            var array: [Any] = []
            while let element = try nextValue(depth: depth + 1) { array.append(element) }
            try endTag("array")
            return array
        case "string":
            return tag.empty ? "" : try text(closing: "string")
        case "true", "false":
            if !tag.empty {
                guard at < bytes.count, !endsWithin("</") else { throw damaged("the document ends inside <\(tag.name)>") }
                guard starts(with: "</") else { throw unsupported("content inside <\(tag.name)>", at: tag.offset) }
                try endTag(tag.name)
            }
            return tag.name == "true"
        case "integer":
            guard !tag.empty else { throw damaged("an empty <integer/>", at: tag.offset) }
            return try integer(try content(closing: "integer"), at: tag.offset)
        case "real":
            guard !tag.empty else { throw damaged("an empty <real/>", at: tag.offset) }
            let spelled = try text(closing: "real")
            guard let real = Self.real(spelled) else { throw unsupported("a <real> spelled \"\(spelled)\"", at: tag.offset) }
            return real
        case "date":
            guard !tag.empty else { throw damaged("an empty <date/>", at: tag.offset) }
            let spelled = try content(closing: "date")
            guard let date = PlistXML.date(spelled) else { throw unsupported("a <date> spelled \"\(String(decoding: spelled, as: UTF8.self))\"", at: tag.offset) }
            return date
        case "data":
            // CoreFoundation refuses <data/>; readers that read it (plistlib writes it) take it as empty, and the
            // library writes it back as <data></data>, which CoreFoundation reads the same.
            if tag.empty { return Data() }
            guard let data = Self.data(try content(closing: "data")) else { throw unsupported("<data> that is not plain base64", at: tag.offset) }
            return data
        default:
            throw unsupported("an unknown element <\(tag.name)>", at: tag.offset)
        }
    }

    // MARK: - Text

    /// The text up to `</closing>` (consumed) with entities, character references and CDATA sections replaced.
    private mutating func text(closing: String) throws -> String {
        let start = at
        var decoded: [UInt8] = []  // used once the text holds a reference or a CDATA section
        var plain = true
        var runStart = at
        while true {
            guard at < bytes.count else { throw damaged("the document ends inside <\(closing)>") }
            let byte = bytes[at]
            if byte == UInt8(ascii: "<") {
                if starts(with: "</") { break }
                plain = false
                decoded.append(contentsOf: bytes[runStart..<at])
                if endsWithin("<![CDATA[", "<!--", "</") { throw damaged("the document ends inside <\(closing)>") }
                guard starts(with: "<![CDATA[") else {
                    throw unsupported(starts(with: "<!--") ? "a comment inside <\(closing)>" : "markup inside <\(closing)>")
                }
                guard let end = Self.offset(of: "]]>", in: bytes, from: at + 9) else { throw damaged("an unterminated CDATA section") }
                let section = bytes[(at + 9)..<end]
                guard !crLineEnds || !section.contains(0x0D) else { throw unsupported("a carriage return inside <\(closing)> of a document with CRLF line ends") }
                decoded.append(contentsOf: section)
                at = end + 3
                runStart = at
            } else if byte == UInt8(ascii: "&") {
                plain = false
                decoded.append(contentsOf: bytes[runStart..<at])
                try entity(into: &decoded)
                runStart = at
            } else if byte == 0x0D, crLineEnds {
                // XML parsers read a carriage return in text as a line feed; CoreFoundation keeps it.
                throw unsupported("a carriage return inside <\(closing)> of a document with CRLF line ends")
            } else if byte == UInt8(ascii: ">"), at >= 2, bytes[at - 1] == UInt8(ascii: "]"), bytes[at - 2] == UInt8(ascii: "]") {
                throw unsupported("\"]]>\" inside <\(closing)>")
            } else {
                at += 1
            }
        }
        let end = at
        if !plain { decoded.append(contentsOf: bytes[runStart..<end]) }
        try endTag(closing)
        guard let string = plain ? Self.string(bytes[start..<end]) : Self.string(decoded) else {
            throw damaged("text that is not UTF-8 inside <\(closing)>")
        }
        return string
    }

    /// One entity or character reference at the cursor, appended as UTF-8.
    private mutating func entity(into decoded: inout [UInt8]) throws {
        let start = at
        guard let semicolon = bytes[at..<min(bytes.count, at + 12)].firstIndex(of: UInt8(ascii: ";")) else {
            if at + 12 > bytes.count { throw damaged("the document ends inside a reference") }
            throw unsupported("an \"&\" that does not start a reference")
        }
        let name = String(decoding: bytes[(at + 1)..<semicolon], as: UTF8.self)
        at = semicolon + 1
        switch name {
        case "amp": decoded.append(UInt8(ascii: "&"))
        case "lt": decoded.append(UInt8(ascii: "<"))
        case "gt": decoded.append(UInt8(ascii: ">"))
        case "quot": decoded.append(UInt8(ascii: "\""))
        case "apos": decoded.append(UInt8(ascii: "'"))
        case let reference where reference.hasPrefix("#"):
            let digits = reference.dropFirst()
            let hex = digits.hasPrefix("x")
            let number = hex ? digits.dropFirst() : digits
            // CoreFoundation reads at most seven digits; XML parsers allow only characters of XML 1.0.
            guard !number.isEmpty, number.count <= (hex ? 6 : 7), number.allSatisfy({ hex ? $0.isHexDigit : $0.isASCII && $0.isNumber }),
                let code = UInt32(number, radix: hex ? 16 : 10), let scalar = Unicode.Scalar(code),
                code == 0x09 || code == 0x0A || code == 0x0D || (code >= 0x20 && code != 0xFFFE && code != 0xFFFF)
            else { throw unsupported("the character reference &\(reference);", at: start) }
            decoded.append(contentsOf: String(Character(scalar)).utf8)
        default:
            throw unsupported("the entity &\(name);", at: start)
        }
    }

    /// The bytes up to `</closing>` (consumed), for integers, dates and data (no markup or references in them).
    private mutating func content(closing: String) throws -> [UInt8] {
        let start = at
        while at < bytes.count, bytes[at] != UInt8(ascii: "<") {
            if bytes[at] == UInt8(ascii: "&") { throw unsupported("a reference inside <\(closing)>") }
            at += 1
        }
        let end = at
        guard at < bytes.count, !endsWithin("</") else { throw damaged("the document ends inside <\(closing)>") }
        guard starts(with: "</") else { throw unsupported("markup inside <\(closing)>") }
        try endTag(closing)
        return Array(bytes[start..<end])
    }

    /// `utf8` as a string; `nil` when it is not UTF-8 (`String(validating:as:)` needs macOS 15).
    private static func string(_ utf8: some Collection<UInt8>) -> String? {
        let string = String(decoding: utf8, as: UTF8.self)
        if !utf8.contains(where: { $0 >= 0x80 }) { return string }  // ASCII: valid
        // Decoding replaces each bad sequence with U+FFFD: the bytes come back the same only when all were good.
        return string.utf8.elementsEqual(utf8) ? string : nil
    }

    // MARK: - Numbers, dates, data

    /// An integer: optional leading whitespace, then an optional sign and decimal digits, or `0x` and hexadecimal
    /// digits; `Int64`, or `UInt64` above `Int64.max`.
    private func integer(_ text: [UInt8], at offset: Int) throws -> NSNumber {
        let trimmed = text.drop(while: Self.isSpace)
        func refuse() -> PlistXML.Decline { unsupported("an <integer> spelled \"\(String(decoding: text, as: UTF8.self))\"", at: offset) }
        guard !trimmed.isEmpty else { throw damaged("an empty <integer>", at: offset) }
        // Python reads hexadecimal only without whitespace or sign; CoreFoundation reads both.
        let hex = trimmed.starts(with: Array("0x".utf8)) || trimmed.starts(with: Array("0X".utf8))
        guard !hex || trimmed.count == text.count else { throw refuse() }
        let negative = trimmed.first == UInt8(ascii: "-")
        let unsigned = trimmed.first == UInt8(ascii: "-") || trimmed.first == UInt8(ascii: "+") ? trimmed.dropFirst() : trimmed
        let digits = hex ? unsigned.dropFirst(2) : unsigned
        guard !digits.isEmpty else { throw refuse() }
        var magnitude: UInt64 = 0
        for byte in digits {
            guard let digit = Self.digitValue(byte), hex || digit < 10 else { throw refuse() }
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: hex ? 16 : 10)
            let (sum, carry) = shifted.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { throw refuse() }
            magnitude = sum
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw refuse() }
            return NSNumber(value: magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? NSNumber(value: Int64(magnitude)) : NSNumber(value: magnitude)
    }

    /// A real: decimal with an optional fraction and exponent (no whitespace), or a name both CoreFoundation and
    /// other readers know, in any case.
    private static func real(_ spelled: String) -> NSNumber? {
        switch spelled.lowercased() {
        case "nan": return NSNumber(value: Double.nan)
        case "inf", "+inf", "infinity", "+infinity": return NSNumber(value: Double.infinity)
        case "-inf", "-infinity": return NSNumber(value: -Double.infinity)
        default: break
        }
        // [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
        var bytes = Array(spelled.utf8)[...]
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        let whole = bytes.prefix(while: PlistXML.isDigit)
        bytes = bytes.dropFirst(whole.count)
        var fraction: ArraySlice<UInt8> = []
        if bytes.first == UInt8(ascii: ".") {
            fraction = bytes.dropFirst().prefix(while: PlistXML.isDigit)
            bytes = bytes.dropFirst(1 + fraction.count)
        }
        guard !whole.isEmpty || !fraction.isEmpty else { return nil }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            let exponent = bytes.prefix(while: PlistXML.isDigit)
            guard !exponent.isEmpty else { return nil }
            bytes = bytes.dropFirst(exponent.count)
        }
        guard bytes.isEmpty, let value = Double(spelled) else { return nil }
        return NSNumber(value: value)
    }

    /// Base64 with whitespace anywhere; only the canonical form (whole groups of four, padding only at the end),
    /// which every decoder reads alike.
    private static func data(_ text: [UInt8]) -> Data? {
        let compact = text.filter { !isSpace($0) }
        let padding = compact.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard compact.count % 4 == 0, padding <= 2,
            compact.dropLast(padding).allSatisfy({ isLetterOrDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") })
        else { return nil }
        return Data(base64Encoded: Data(compact))
    }

    // MARK: - Bytes

    /// The value of a hexadecimal digit.
    private static func digitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || PlistXML.isDigit(byte)
    }

    /// A byte of an attribute's name (ASCII letters, digits, `-`, `_`, `.`, `:`, any byte of a multi-byte character).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        isLetterOrDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: ":") || byte >= 0x80
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

    /// Whether the document ends at the cursor partway into one of `candidates` (a file caught while written).
    private func endsWithin(_ candidates: StaticString...) -> Bool {
        candidates.contains { candidate in
            let count = bytes.count - at
            return count < candidate.utf8CodeUnitCount && memcmp(bytes.baseAddress! + at, candidate.utf8Start, count) == 0
        }
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

extension PlistXML {
    /// Whether `byte` is an ASCII digit.
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// A date `[-]y…y-MM-ddTHH:mm:ssZ` (a year up to `Int32.max`, as CoreFoundation reads, in astronomical
    /// numbering: year 0 is 1 BC), each field in its range, the day within its month.
    static func date(_ bytes: [UInt8]) -> Date? {
        let negative = bytes.first == UInt8(ascii: "-")
        let text = negative ? bytes.dropFirst() : bytes[...]
        let yearDigits = text.prefix(while: isDigit)
        let rest = Array(text.dropFirst(yearDigits.count))
        guard (1...10).contains(yearDigits.count), rest.count == 16, rest[0] == UInt8(ascii: "-"), rest[3] == UInt8(ascii: "-"),
            rest[6] == UInt8(ascii: "T"), rest[9] == UInt8(ascii: ":"), rest[12] == UInt8(ascii: ":"), rest[15] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ digits: some Collection<UInt8>) -> Int64? {
            var value: Int64 = 0
            for byte in digits {
                guard isDigit(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let magnitude = number(yearDigits), let month = number(rest[1..<3]), let day = number(rest[4..<6]),
            let hour = number(rest[7..<9]), let minute = number(rest[10..<12]), let second = number(rest[13..<15]),
            magnitude <= Int32.max, (1...12).contains(month), hour < 24, minute < 60, second < 60
        else { return nil }
        let year = negative ? -magnitude : magnitude
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day >= 1, day <= lengths[Int(month - 1)] else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm), the inverse of
        // ``PlistXML/text(of:)``'s.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }
}

import Foundation

extension JSONText {
    /// Why JSON text was not read.
    package enum ReadError: Error, Equatable {
        /// The text is not JSON (RFC 8259, UTF-8, one value); `offset` (from 0) is where reading stopped: the start
        /// of a malformed number or escape, else the unexpected byte.
        case notJSON(offset: Int)
        /// Arrays and objects nest deeper than the limit the caller gave.
        case tooDeep(limit: Int)
        /// A number beyond what a `Double` holds (`1e400`), its text and where it starts.
        case numberOutOfRange(String, offset: Int)
    }

    /// The value of JSON text in `data` (UTF-8; a leading BOM is skipped), in `JSONSerialization`'s shapes:
    /// `[String: Any]`, `[Any]`, `String`, `NSNull`, and `NSNumber` (a boolean as a Boolean; an integer without
    /// fraction or exponent as `Int64`, or `UInt64` past `Int64.max`; else a `Double`). A repeated key keeps its last
    /// value. Not `JSONSerialization`, because each number here is the nearest `Double` to its text (on Linux it
    /// misses some reals by a few ulps) and `JSONDecoder` loses whether a number was a real (`5.0`, `-0.0`). A number
    /// too large for a `Double` is refused, as both refuse it.
    ///
    /// - Parameter maximumDepth: The deepest nesting read; 128 holds any value a set stores (at most 100 deep) inside
    ///   a file's own levels.
    /// - Throws: ``ReadError``.
    package static func value(of data: Data, maximumDepth: Int = 128) throws -> Any {
        let bytes = [UInt8](data)
        // Valid UTF-8 as a whole, so strings can be decoded without checking again.
        if let invalid = firstInvalidUTF8(bytes) { throw ReadError.notJSON(offset: invalid) }
        var reader = Reader(bytes: bytes, maximumDepth: maximumDepth)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.position = 3 }
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.position == bytes.count else { throw ReadError.notJSON(offset: reader.position) }
        return value
    }

    /// The offset of the first byte of `bytes` that is not well-formed UTF-8 (an overlong form, a surrogate, past
    /// U+10FFFF, a stray or missing continuation byte), as the standard library's parser finds it; `nil` if none.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// A cursor over JSON text's bytes.
    private struct Reader {
        let bytes: [UInt8]
        let maximumDepth: Int
        /// Where reading goes on.
        var position = 0

        init(bytes: [UInt8], maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        /// Text that is not JSON, at the cursor.
        private var failure: ReadError { .notJSON(offset: position) }

        /// Moves past JSON's white space (space, tab, line feed, carriage return).
        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        /// Consumes `byte` when it is next, after white space.
        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        /// The value at the cursor, inside `depth` arrays and objects.
        mutating func value(depth: Int) throws -> Any {
            skipSpace()
            guard position < bytes.count else { throw failure }
            switch bytes[position] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth < maximumDepth else { throw ReadError.tooDeep(limit: maximumDepth) }
                return bytes[position] == UInt8(ascii: "{") ? try object(depth: depth + 1) : try array(depth: depth + 1)
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"): return try literal("true", NSNumber(value: true))
            case UInt8(ascii: "f"): return try literal("false", NSNumber(value: false))
            case UInt8(ascii: "n"): return try literal("null", NSNull())
            default: return try number()
            }
        }

        /// The object whose `{` is at the cursor, `depth` deep.
        private mutating func object(depth: Int) throws -> [String: Any] {
            position += 1
            var object: [String: Any] = [:]
            if take(UInt8(ascii: "}")) { return object }
            repeat {
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure }
                let key = try string()
                guard take(UInt8(ascii: ":")) else { throw failure }
                object[key] = try value(depth: depth)
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { throw failure }
            return object
        }

        /// The array whose `[` is at the cursor, `depth` deep.
        private mutating func array(depth: Int) throws -> [Any] {
            position += 1
            var array: [Any] = []
            if take(UInt8(ascii: "]")) { return array }
            repeat {
                array.append(try value(depth: depth))
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "]")) else { throw failure }
            return array
        }

        /// `value` when `word` (`true`, `false`, `null`) is at the cursor.
        private mutating func literal(_ word: String, _ value: Any) throws -> Any {
            guard bytes[position...].starts(with: word.utf8) else { throw failure }
            position += word.utf8.count
            return value
        }

        /// A number as RFC 8259 writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        private mutating func number() throws -> NSNumber {
            let start = position
            func digits() -> Int {
                let first = position
                while position < bytes.count, PlistXML.isDigit(bytes[position]) { position += 1 }
                return position - first
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            let integerStart = position
            let integerDigits = digits()
            guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw ReadError.notJSON(offset: start) }
            var isInteger = true
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw ReadError.notJSON(offset: start) }
                isInteger = false
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { throw ReadError.notJSON(offset: start) }
                isInteger = false
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if isInteger {
                if let signed = Int64(text) { return NSNumber(value: signed) }
                if let unsigned = UInt64(text) { return NSNumber(value: unsigned) }
            }
            guard let real = Double(text), real.isFinite else { throw ReadError.numberOutOfRange(text, offset: start) }
            return NSNumber(value: real)
        }

        /// A string, its escapes read; a raw control character or a lone surrogate escape is not JSON.
        private mutating func string() throws -> String {
            position += 1
            var scalars = String.UnicodeScalarView()
            var runStart = position
            func flushRun() {
                guard runStart < position else { return }
                scalars.append(contentsOf: String(decoding: bytes[runStart..<position], as: UTF8.self).unicodeScalars)
            }
            while true {
                guard position < bytes.count else { throw failure }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    flushRun()
                    position += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw failure }
                guard byte == UInt8(ascii: "\\") else {
                    position += 1
                    continue
                }
                flushRun()
                let escapeStart = position
                position += 1
                guard position < bytes.count else { throw failure }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard let scalar = try? escapedScalar() else { throw ReadError.notJSON(offset: escapeStart) }
                    scalars.append(scalar)
                default: throw ReadError.notJSON(offset: escapeStart)
                }
                runStart = position
            }
        }

        /// The scalar of a `\u` escape (after the `u`), a surrogate pair taken whole.
        private mutating func escapedScalar() throws -> Unicode.Scalar {
            let first = try hexUnit()
            switch first {
            case 0xD800...0xDBFF:
                guard bytes[position...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) else { throw failure }
                position += 2
                let second = try hexUnit()
                guard (0xDC00...0xDFFF).contains(second) else { throw failure }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
            case 0xDC00...0xDFFF: throw failure
            default: return Unicode.Scalar(first)!
            }
        }

        /// Four hexadecimal digits.
        private mutating func hexUnit() throws -> UInt32 {
            var unit: UInt32 = 0
            for _ in 0..<4 {
                guard position < bytes.count, let digit = Character(Unicode.Scalar(bytes[position])).hexDigitValue else { throw failure }
                unit = unit << 4 | UInt32(digit)
                position += 1
            }
            return unit
        }
    }
}

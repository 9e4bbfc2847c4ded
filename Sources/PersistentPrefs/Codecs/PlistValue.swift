import Foundation

/// Vetting and normalisation of property-list values, in one place.
///
/// *Vetting* decides whether a value can be stored and read back: `String`, `Bool`, the fixed-width integer types,
/// `Float`, `Double`, `Date`, `Data`, their Foundation counterparts, and arrays / `String`-keyed dictionaries of
/// those, nested. Everything else is refused at any depth (`NSNull`, `Optional.none` in a collection, URLs, UUIDs,
/// `Decimal`, structs, enums, other classes, non-`String` keys), and so is what a store could not read back as
/// written: nesting deeper than ``maximumDepth`` (where vetting stops, so no value can exhaust the stack) and dates
/// outside ``dateRange``.
///
/// *Normalisation* turns an accepted value into the one shape the library keeps and hands to stores, the shape
/// Apple's `UserDefaults` hands back: numbers and booleans as `NSNumber` (so `as? Int`, `as? Bool`, … follow
/// Foundation's bridging on every platform), `String`, `Date`, `Data`, `[Any]` and `[String: Any]`;
/// `Optional.some` is unwrapped and `AnyHashable` keys become `String`.
enum PlistValue {
    /// The deepest nesting of arrays and dictionaries a value may have (an array of arrays of strings: 2).
    /// Foundation's parsers refuse files nested about 512 deep and its bridging overflows the stack some thousands
    /// deep; 100 leaves room for the suite and set dictionaries around a value.
    static let maximumDepth = 100

    /// The dates every store reads back as written: 0001-01-01T00:00:00Z through 9999-12-31T23:59:59Z, as seconds
    /// since 2001-01-01.
    static let dateRange: ClosedRange<TimeInterval> = -63_113_904_000...252_423_993_599

    /// Why a value is read: vetting a write refuses what a store cannot read back; loading keeps whatever a parser
    /// produced (its depth already bounded by the parser).
    enum Purpose {
        case vetting
        case loading
    }

    /// The normalised form of `value`, or `nil` when it cannot be stored.
    static func normalized(_ value: Any, for purpose: Purpose = .vetting) -> Any? {
        normalized(value, purpose: purpose, depth: 0)
    }

    private static func normalized(_ value: Any, purpose: Purpose, depth: Int) -> Any? {
        // The shapes kept in memory already, by exact type (no cast, no bridging).
        let kind = type(of: value)
        if kind == String.self || isKeptNumber(kind) { return value }
        // The commonest Swift values by exact type: each failed cast in the switch below costs a runtime look-up.
        if let int = exactly(value, Int.self) { return NSNumber(value: int) }
        if let double = exactly(value, Double.self) { return NSNumber(value: double) }
        if let bool = exactly(value, Bool.self) { return NSNumber(value: bool) }
        if kind is AnyObject.Type {
            return normalizedObject(value as AnyObject, purpose: purpose, depth: depth)
        }
        switch value {
        case let string as String: return string
        case let bool as Bool: return NSNumber(value: bool)
        case let int as Int: return NSNumber(value: int)
        case let double as Double: return NSNumber(value: double)
        case let float as Float: return NSNumber(value: float)
        case let float as CGFloat: return NSNumber(value: Double(float))
        case let int as Int8: return NSNumber(value: int)
        case let int as Int16: return NSNumber(value: int)
        case let int as Int32: return NSNumber(value: int)
        case let int as Int64: return NSNumber(value: int)
        case let int as UInt: return NSNumber(value: int)
        case let int as UInt8: return NSNumber(value: int)
        case let int as UInt16: return NSNumber(value: int)
        case let int as UInt32: return NSNumber(value: int)
        case let int as UInt64: return NSNumber(value: int)
        case let date as Date: return storable(date, purpose) ? date : nil
        case let data as Data: return data
        case let array as [Any]: return normalizedArray(array, purpose: purpose, depth: depth + 1)
        case let dictionary as [String: Any]: return normalizedDictionary(dictionary, purpose: purpose, depth: depth + 1)
        case let dictionary as [AnyHashable: Any]:
            return stringKeyed(dictionary).flatMap { normalizedDictionary($0, purpose: purpose, depth: depth + 1) }
        // Last: a cast to a protocol is the dearest test, and a cast above already looks into an `Optional.some`.
        case let optional as any OptionalValue:
            return optional.wrappedValue.flatMap { normalized($0, purpose: purpose, depth: depth) }
        default:
            return nil
        }
    }

    /// `value` as a property list in `format`, written by `PropertyListSerialization` after ``foundationObject(_:)``.
    /// Every call of the library's that hands values to Foundation's writer goes through here.
    static func foundationData(_ value: Any, format: PropertyListSerialization.PropertyListFormat) throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: foundationObject(value), format: format, options: 0)
    }

    /// `value` with every Swift array and string-keyed dictionary in it, at any depth, made an `NSArray` or
    /// `NSDictionary`. Foundation's writer bridges a Swift array inside `Any` through a conformance a statically
    /// linked program (`--static-swift-stdlib` on Linux) has only when something refers to Foundation's array
    /// bridging; without it the writer refuses any array ("property lists cannot contain objects of type 'Not A
    /// Type'"). This refers to it, and leaves the writer nothing to bridge.
    static func foundationObject(_ value: Any) -> Any {
        switch value {
        case let array as [Any]: return array.map(foundationObject) as NSArray
        case let dictionary as [String: Any]: return dictionary.mapValues(foundationObject) as NSDictionary
        default: return value
        }
    }

    /// Whether `value` is in a shape ``normalized(_:for:)`` keeps as it is when loading, by exact type (no cast).
    private static func isKept(_ value: Any, depth: Int) -> Bool {
        let kind = type(of: value)
        if kind == String.self || kind == Date.self || kind == Data.self || isKeptNumber(kind) { return true }
        guard depth < maximumDepth else { return false }
        if kind == [String: Any].self { return (value as! [String: Any]).values.allSatisfy { isKept($0, depth: depth + 1) } }
        if kind == [Any].self { return (value as! [Any]).allSatisfy { isKept($0, depth: depth + 1) } }
        return false
    }

    /// Whether a store reads `date` back as written (always, for dates already stored).
    private static func storable(_ date: Date, _ purpose: Purpose) -> Bool {
        purpose == .loading || dateRange.contains(date.timeIntervalSinceReferenceDate)
    }

    /// Normalises every value of a top-level set; fails with the sorted keys whose values cannot be stored.
    static func normalizedSet(
        _ values: [String: Any], for purpose: Purpose = .vetting
    ) -> Result<[String: Any], PersistentPrefs.PrefsError> {
        // A set the library read or wrote is in its kept shapes already: handed back as it is (no copy), so what is
        // derived from it keeps the same storage, and comparing them costs one pointer test.
        if purpose == .loading, values.values.allSatisfy({ isKept($0, depth: 0) }) { return .success(values) }
        var result: [String: Any] = [:]
        result.reserveCapacity(values.count)
        var refused: [String] = []
        for (key, value) in values {
            if let normalized = normalized(value, for: purpose) {
                result[key] = normalized
            } else {
                refused.append(key)
            }
        }
        guard refused.isEmpty else { return .failure(.valuesNotPlistCompatible(invalidElements: refused.sorted())) }
        return .success(result)
    }

    /// `values` normalised for loading, or as they are when some value cannot be (compared or re-encoded as they
    /// are, never stored in memory as the set).
    static func loadedOrAsIs(_ values: [String: Any]) -> [String: Any] {
        if case .success(let normalized) = normalizedSet(values, for: .loading) { return normalized }
        return values
    }

    /// `value` as a `[String: Any]` when it is a dictionary whose keys are all strings.
    static func stringKeyedDictionary(_ value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] { return dictionary }
        if let dictionary = value as? [AnyHashable: Any] { return stringKeyed(dictionary) }
        return nil
    }

    /// A short description of a stored value for error messages: `a String ("abc")`. Never traps and never walks
    /// more than a few levels, whatever the value holds (a NaN date, a huge or deeply nested array).
    static func describe(_ value: Any) -> String {
        let shown = brief(value, depth: 0)
        let text = shown.count > 40 ? String(shown.prefix(40)) + "…" : shown
        switch value {
        case is String: return "a String (\"\(text)\")"
        case is NSNumber: return "a number (\(text))"
        case is Date: return "a Date (\(text))"
        case is Data: return "Data (\(text))"
        case is [Any]: return "an array (\(text))"
        case is [String: Any]: return "a dictionary (\(text))"
        default: return "\(type(of: value)) (\(text))"
        }
    }

    /// Up to about 60 characters of text for `value`, descending at most 3 levels.
    private static func brief(_ value: Any, depth: Int) -> String {
        switch value {
        case let string as String:
            return String(string.prefix(60))
        case let number as NSNumber:
            return number.stringValue
        case let date as Date:
            let seconds = date.timeIntervalSinceReferenceDate
            guard dateRange.contains(seconds) else { return "\(seconds) s from 2001-01-01" }
            return ISO8601DateFormatter().string(from: date)
        case let data as Data:
            return "\(data.count) bytes"
        case let array as [Any]:
            guard depth < 3 else { return "[…]" }
            let items = array.prefix(4).map { brief($0, depth: depth + 1) }
            return "[" + items.joined(separator: ", ") + (array.count > 4 ? ", …]" : "]")
        case let dictionary as [String: Any]:
            guard depth < 3 else { return "[…]" }
            let items = dictionary.keys.sorted().prefix(4).map { "\($0): \(brief(dictionary[$0]!, depth: depth + 1))" }
            return "[" + items.joined(separator: ", ") + (dictionary.count > 4 ? ", …]" : "]")
        default:
            return "\(type(of: value))"
        }
    }

    // MARK: - Private

    private static func normalizedObject(_ object: AnyObject, purpose: Purpose, depth: Int) -> Any? {
        switch object {
        case is NSNull, is NSDecimalNumber:
            return nil
        case let number as NSNumber:
            return number
        case let string as NSString:
            return string as String
        case let date as NSDate:
            return storable(date as Date, purpose) ? date as Date : nil
        case let data as NSData:
            return data as Data
        case let array as NSArray:
            guard depth < maximumDepth || purpose == .loading else { return nil }
            return normalizedArray(array.map { $0 }, purpose: purpose, depth: depth + 1)
        case let dictionary as NSDictionary:
            guard depth < maximumDepth || purpose == .loading else { return nil }
            var bridged: [AnyHashable: Any] = [:]
            for (key, value) in dictionary {
                guard let key = key as? AnyHashable else { return nil }
                bridged[key] = value
            }
            return stringKeyed(bridged).flatMap { normalizedDictionary($0, purpose: purpose, depth: depth + 1) }
        default:
            return nil
        }
    }

    /// `depth` counts the containers from the top-level value down to this one, itself included.
    private static func normalizedArray(_ array: [Any], purpose: Purpose, depth: Int) -> [Any]? {
        guard depth <= maximumDepth || purpose == .loading else { return nil }
        var result: [Any] = []
        result.reserveCapacity(array.count)
        for element in array {
            guard let normalized = normalized(element, purpose: purpose, depth: depth) else { return nil }
            result.append(normalized)
        }
        return result
    }

    private static func normalizedDictionary(_ dictionary: [String: Any], purpose: Purpose, depth: Int) -> [String: Any]? {
        guard depth <= maximumDepth || purpose == .loading else { return nil }
        var result: [String: Any] = [:]
        result.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            guard let normalized = normalized(value, purpose: purpose, depth: depth) else { return nil }
            result[key] = normalized
        }
        return result
    }

    private static func stringKeyed(_ dictionary: [AnyHashable: Any]) -> [String: Any]? {
        var result: [String: Any] = [:]
        result.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            guard let key = key.base as? String else { return nil }
            result[key] = value
        }
        return result
    }
}

// MARK: - Optional unwrapping

/// Lets `normalized(_:)` see through an `Optional` hidden in an `Any`.
protocol OptionalValue {
    /// The wrapped value, or `nil` for `.none`.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    var wrappedValue: Any? {
        switch self {
        case .some(let wrapped): return wrapped
        case .none: return nil
        }
    }
}

// MARK: - Comparing stored values

/// How a property list holds an `NSNumber`, from its `objCType`: the one reading of it that the
/// XML writer, the JSON writer, comparisons and schemas share.
package enum NumberKind {
    /// `<true/>` or `<false/>` (`c` or `B`).
    case boolean
    /// `<real>` (`d` or `f`).
    case real
    /// `<integer>` that may pass `Int64.max` (`Q`).
    case unsigned
    /// `<integer>` within `Int64` (`q`, `l`, `i`, `s`, `L`, `I`, `S`, `C`).
    case signed

    /// The kind of `number`; `nil` for a type a property list has no number for.
    package init?(_ number: NSNumber) {
        self.init(letter: number.objCType.pointee)
    }

    /// The kind of a number of type `letter` (an `objCType`'s first character).
    init?(letter: CChar) {
        switch UInt8(bitPattern: letter) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"): self = .boolean
        case UInt8(ascii: "d"), UInt8(ascii: "f"): self = .real
        case UInt8(ascii: "Q"): self = .unsigned
        case UInt8(ascii: "q"), UInt8(ascii: "l"), UInt8(ascii: "i"), UInt8(ascii: "s"), UInt8(ascii: "L"), UInt8(ascii: "I"), UInt8(ascii: "S"),
            UInt8(ascii: "C"):
            self = .signed
        default: return nil
        }
    }
}

extension PlistValue {
    /// Whether two normalised values are the same stored value: equal and of the same kind (`1`, `1.0` and `true`
    /// differ, as they do in a property list).
    static func same(_ lhs: Any?, _ rhs: Any?) -> Bool {
        if let lhs, let rhs { return sameValues(lhs, rhs) }
        return lhs == nil && rhs == nil
    }

    /// ``same(_:_:)`` without optionals to unwrap (and copy) on the way.
    static func sameValues(_ lhs: Any, _ rhs: Any) -> Bool {
        // Exact types first (a failed cast of a Swift dictionary to `String` or `NSNumber` bridges the whole of it to
        // Foundation first), and numbers, the commonest values, first of all.
        let kind = type(of: lhs)
        if let left = number(lhs), let right = number(rhs) {
            return left === right || sameNumbers(left, right)
        }
        if identical(lhs, rhs) { return true }
        if kind == [String: Any].self || type(of: rhs) == [String: Any].self {
            guard let left = lhs as? [String: Any], let right = rhs as? [String: Any] else { return false }
            return sameDictionaries(left, right)
        }
        switch (lhs, rhs) {
        case let (left as String, right as String):
            return left == right
        // Containers before numbers, for the same reason.
        case let (left as [Any], right as [Any]):
            return left.count == right.count && zip(left, right).allSatisfy { sameValues($0, $1) }
        case let (left as Date, right as Date):
            return left == right
        case let (left as Data, right as Data):
            return left == right
        case let (left as NSNumber, right as NSNumber):
            return sameNumbers(left, right)
        default:
            return false
        }
    }

    private static func sameDictionaries(_ left: [String: Any], _ right: [String: Any]) -> Bool {
        left.count == right.count && left.allSatisfy { same($0.value, right[$0.key]) }
    }

    /// Equal and of the same kind (`1`, `1.0` and `true` differ).
    private static func sameNumbers(_ left: NSNumber, _ right: NSNumber) -> Bool {
        let letter = left.objCType.pointee
        guard letter == right.objCType.pointee else { return false }
        // One type: compare the values as that type holds them (what `==` does, without `isEqual`'s bridging).
        switch NumberKind(letter: letter) {
        case .real:
            let (a, b) = (left.doubleValue, right.doubleValue)
            return a == b || (a.isNaN && b.isNaN)  // CFNumber's compare holds NaN equal to NaN
        case .unsigned: return left.uint64Value == right.uint64Value
        case .boolean, .signed: return left.int64Value == right.int64Value
        case nil: return left == right
        }
    }

    /// Whether `lhs` and `rhs` are known to be equal without looking into what they hold: the same `NSNumber`,
    /// dictionaries that share their storage, or equal strings or string arrays (whose `==` tests for shared storage
    /// first). `false` says nothing (an array of `Any` or another object is never looked into).
    static func identical(_ lhs: Any?, _ rhs: Any?) -> Bool {
        guard let lhs, let rhs else { return false }
        let kind = type(of: lhs)
        guard kind == type(of: rhs) else { return false }
        if let left = number(lhs), let right = number(rhs) { return left === right }
        if kind == [String: Any].self { return sameStorage(lhs as! [String: Any], rhs as! [String: Any]) }
        if kind == String.self { return lhs as! String == rhs as! String }
        if kind == [String].self { return lhs as! [String] == rhs as! [String] }
        return false
    }

    /// The `T` that `value` holds when its dynamic type is exactly `T` (not a subclass); `nil` otherwise. The type
    /// test comes first: a failing cast of a Swift dictionary or array bridges the whole of it to Foundation.
    @inline(__always)
    static func exactly<T>(_ value: Any, _ type: T.Type) -> T? {
        guard Swift.type(of: value) == T.self else { return nil }
        return value as? T
    }

    /// `value` as an `NSNumber` when it is one, of whatever class (on Apple platforms, private subclasses); `nil`
    /// otherwise. The class test comes first: a cast of a Swift value to `NSNumber` bridges it, a collection whole.
    @inline(__always)
    static func number(_ value: Any) -> NSNumber? {
        type(of: value) is NSNumber.Type ? value as? NSNumber : nil
    }

    /// Whether values of `kind` are numbers kept as they are: `NSNumber` and its subclasses, but not
    /// `NSDecimalNumber`, which no property list holds exactly.
    @inline(__always)
    static func isKeptNumber(_ kind: Any.Type) -> Bool {
        kind == NSNumber.self || (kind is NSNumber.Type && !(kind is NSDecimalNumber.Type))
    }

    /// Whether two sets share their storage (so hold the same entries): the bits of the two dictionary values (a
    /// reference to their storage) compared, in O(1); the standard library has no such test for a dictionary of
    /// `Any`. `false` says nothing.
    @inline(__always)
    static func sameStorage(_ left: [String: Any], _ right: [String: Any]) -> Bool {
        withUnsafeBytes(of: left) { left in withUnsafeBytes(of: right) { right in left.elementsEqual(right) } }
    }

    /// The keys whose value differs between two sets (added, removed or changed). Values are looked up by index, not
    /// as `Any?`: copying and destroying optional existentials goes through the runtime's value witnesses.
    static func changedKeys(_ old: [String: Any], _ new: [String: Any]) -> Set<String> {
        // A set made or emptied changes every key it holds (a first write of a set is often large).
        if old.isEmpty { return Set(new.keys) }
        if new.isEmpty { return Set(old.keys) }
        var changed = Set<String>()
        for (key, value) in new {
            if let index = old.index(forKey: key), sameValues(old.values[index], value) { continue }
            changed.insert(key)
        }
        for key in old.keys where new.index(forKey: key) == nil { changed.insert(key) }
        return changed
    }
}

/// The library's comparison of stored values, for `prefs-harness` (`package` access): the rule by which the
/// library tells observers what changed.
package enum PlistComparison {
    /// The keys whose values differ between the sets `old` and `new`: added, removed, or changed. Values are the same
    /// when equal and of the same kind, as in a property list (`1`, `1.0` and `true` differ).
    package static func changedKeys(_ old: [String: Any], _ new: [String: Any]) -> Set<String> {
        PlistValue.changedKeys(old, new)
    }
}

/// The dates a set can store, for `prefs-harness` (`package` access): a parser of dates refuses one outside them
/// with its own message before the set does.
package enum PlistDates {
    /// 0001-01-01T00:00:00Z through 9999-12-31T23:59:59Z (see `PlistValue.dateRange`).
    package static func isStorable(_ date: Date) -> Bool {
        PlistValue.dateRange.contains(date.timeIntervalSinceReferenceDate)
    }

    /// An ISO 8601 date as a schema file or a person writes it: `2024-05-01` (midnight UTC), or `2024-05-01T12:00:00`
    /// with an optional fraction of a second (kept to the nearest `Date`), then `Z` or an offset (`+02:00`, `+0200`,
    /// `+02`); `nil` for anything else (a day its month lacks, a field out of range, text after the date). Not
    /// Foundation's parser: on Linux it accepts some of these, and keeps only milliseconds.
    package static func iso8601(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        /// Reads `pattern` (`9` any digit) and returns `true`, or reads nothing and returns `false`.
        func take(_ pattern: String) -> Bool {
            var end = index
            for expected in pattern.utf8 {
                guard end < bytes.count else { return false }
                let byte = bytes[end]
                let matches = expected == UInt8(ascii: "9") ? PlistXML.isDigit(byte) : byte == expected
                guard matches else { return false }
                end += 1
            }
            index = end
            return true
        }
        /// The number the digits from `start` to `index` spell.
        func number(from start: Int) -> Int { bytes[start..<index].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } }
        // A year of more than four digits reads, for the caller to refuse naming the range.
        guard take("9999") else { return nil }
        while take("9") {}
        guard take("-99-99") else { return nil }
        var whole = bytes[0..<index] + Array("T00:00:00Z".utf8)
        var fraction = 0.0
        var offset = 0
        if index < bytes.count {
            guard take("T99:99:99") else { return nil }
            whole = bytes[0..<index] + [UInt8(ascii: "Z")]
            if take(".") {
                let digits = index
                guard take("9") else { return nil }
                while take("9") {}
                fraction = Double("0." + String(decoding: bytes[digits..<index], as: UTF8.self)) ?? 0
            }
            if !(take("Z") || take("z")) {
                let sign = take("-") ? -1 : take("+") ? 1 : 0
                guard sign != 0, take("99") else { return nil }
                let hours = number(from: index - 2)
                var minutes = 0
                if take(":99") || take("99") { minutes = number(from: index - 2) }
                guard hours < 24, minutes < 60 else { return nil }
                offset = sign * (hours * 3600 + minutes * 60)
            }
            guard index == bytes.count else { return nil }
        }
        guard let date = PlistXML.date(Array(whole)) else { return nil }
        return Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate - Double(offset) + fraction)
    }
}

/// Foundation's property-list writer as the library calls it, for `prefs-harness` (`package` access): arrays and
/// dictionaries are made Foundation objects first, so a statically linked program writes them too.
package enum PlistWriting {
    /// `value` (a dictionary, for a file) as a property list in `format`.
    ///
    /// - Throws: Foundation's error when a property list cannot hold `value`.
    package static func data(_ value: Any, format: PropertyListSerialization.PropertyListFormat) throws -> Data {
        try PlistValue.foundationData(value, format: format)
    }

    /// `value` as a property list every reader reads back the same: XML, or binary when it holds a character an XML
    /// parser refuses or changes, or a date XML cannot keep (see ``PlistXML/Writer/portable``).
    ///
    /// - Throws: Foundation's error when a property list cannot hold `value`.
    package static func portableData(_ value: Any) throws -> Data {
        if let (xml, portable) = PlistXML.portableDocument(value), portable { return xml }
        return try PlistValue.foundationData(value, format: .binary)
    }
}

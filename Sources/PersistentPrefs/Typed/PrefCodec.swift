import Foundation

/// How a typed value is kept in a property-list set, decided once per declaration (the table in
/// <doc:TypedPreferences>): plist types as themselves, `RawRepresentable` as raw values, `URL` as its
/// `absoluteString`, other `Codable` types as what `PropertyListEncoder` makes, `nil` removes the key. A stored value
/// that does not map back to the declared type decodes as `nil` (the caller reports it and uses the default).
@usableFromInline
struct PrefCodec<Value> {
    /// The property-list form of a value; `nil` means "remove the key" (an `Optional.none`).
    let encode: (Value) throws -> Any?
    /// The value a stored property-list value stands for, or `nil` when it stands for none.
    let decode: (Any) -> Value?

    /// The codec for `Value`; what `encode` returns is already vetted and normalised (see ``PlistValue``).
    static func make() -> PrefCodec<Value> {
        if let optional = Value.self as? any OptionalConvertible.Type {
            return optionalCodec(optional) as! PrefCodec<Value>
        }
        if let direct = directEncoder() {
            return PrefCodec(encode: direct, decode: { PrefCodec.decodeValue($0) })
        }
        return PrefCodec(encode: { try PrefCodec.encodeValue($0) }, decode: { PrefCodec.decodeValue($0) })
    }

    /// For the most common types, an encoder that skips the vetting of an arbitrary value: `Value` is checked once
    /// here, so each cast below is of a value to its own type.
    private static func directEncoder() -> ((Value) throws -> Any?)? {
        if Value.self == Int.self { return { NSNumber(value: $0 as! Int) } }
        if Value.self == Double.self { return { NSNumber(value: $0 as! Double) } }
        if Value.self == Bool.self { return { NSNumber(value: $0 as! Bool) } }
        if Value.self == String.self { return { $0 as! String } }
        return nil
    }

    /// Returns a `PrefCodec<O>`, type-erased so the existential `O` can be opened.
    private static func optionalCodec<O: OptionalConvertible>(_: O.Type) -> Any {
        let wrapped = PrefCodec<O.Wrapped>.make()
        return PrefCodec<O>(
            encode: { value in try value.asOptional.flatMap { try wrapped.encode($0) } },
            decode: { stored in wrapped.decode(stored).map { O(wrapping: $0) } }
        )
    }

    private static func encodeValue(_ value: Value) throws -> Any {
        if let native = PlistValue.normalized(value) { return native }
        if let raw = value as? any RawRepresentable, let native = PlistValue.normalized(raw.rawValue) { return native }
        if let url = value as? URL { return url.absoluteString }
        if let encodable = value as? any Encodable { return try CodablePlist.encode(encodable) }
        throw CodablePlist.Failure(reason: "\(Value.self) is neither a property-list type, RawRepresentable, URL nor Codable")
    }

    private static func decodeValue(_ stored: Any) -> Value? {
        if let value = stored as? Value { return value }
        if let rawType = Value.self as? any RawRepresentable.Type {
            return CodablePlist.fromRawValue(rawType, stored) as? Value
        }
        if Value.self == URL.self {
            return (stored as? String).flatMap { URL(string: $0) } as? Value
        }
        if let decodable = Value.self as? any Decodable.Type {
            return CodablePlist.decode(decodable, from: stored) as? Value
        }
        return nil
    }
}

// MARK: - The errors of a typed key

extension PrefCodec {
    /// `value`'s stored form (`nil` removes the key), or, when a property list cannot hold it, the refusal naming
    /// `key` that every typed writer (`@Pref`, ``UserDefaultsContainer``, ``SettingsStorage``) reports.
    func encoded(_ value: Value, forKey key: String) throws(PersistentPrefs.PrefsError) -> Any? {
        do {
            return try encode(value)
        } catch {
            throw .valuesNotPlistCompatible(invalidElements: [key])
        }
    }

    /// The report of a stored value under `key` that does not stand for a `Value`.
    func mismatch(_ stored: Any, forKey key: String) -> PersistentPrefs.PrefsError {
        .typeMismatch(key: key, expected: "\(Value.self)", found: PlistValue.describe(stored))
    }
}

/// `Codable` values as property lists (not opaque `Data`), and raw values back to their types.
enum CodablePlist {
    /// Why a value could not be encoded.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The property-list form of `value`: what `PropertyListEncoder` writes, parsed back.
    static func encode<T: Encodable>(_ value: T) throws -> Any {
        // Wrapped in an array, so values that encode as a single value work too.
        let data: Data
        do {
            data = try PropertyListEncoder().encode([value])
        } catch {
            throw Failure(reason: "\(T.self) could not be encoded: \(error)")
        }
        guard let array = try PropertyListSerialization.propertyList(from: data, format: nil) as? [Any],
            let first = array.first, let native = PlistValue.normalized(first)
        else {
            throw Failure(reason: "\(T.self) did not encode to a property list")
        }
        return native
    }

    /// The `T` that `stored` encodes, or `nil`.
    static func decode<T: Decodable>(_: T.Type, from stored: Any) -> T? {
        guard let data = try? PlistValue.foundationData([stored], format: .binary) else { return nil }
        return (try? PropertyListDecoder().decode([T].self, from: data))?.first
    }

    /// The `R` whose raw value is `stored`, or `nil`.
    static func fromRawValue<R: RawRepresentable>(_: R.Type, _ stored: Any) -> R? {
        (stored as? R.RawValue).flatMap(R.init(rawValue:))
    }
}

/// `Optional`, seen generically: lets a codec treat `T?` as "a `T`, or no value".
protocol OptionalConvertible {
    associatedtype Wrapped
    /// The value as an optional of its wrapped type.
    var asOptional: Wrapped? { get }
    /// The optional holding `wrapped`.
    init(wrapping wrapped: Wrapped?)
}

extension Optional: OptionalConvertible {
    var asOptional: Wrapped? { self }
    init(wrapping wrapped: Wrapped?) { self = wrapped }
}

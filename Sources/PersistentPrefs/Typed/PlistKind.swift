import Foundation

/// What a declared type says about its stored form without a value at hand (its plist kind, its Swift name), for a
/// ``PrefsSchema/Key`` whose default says nothing (an optional whose default is `nil`).
enum PlistKind {
    /// The kind a value of `type` is stored as (see ``PrefsSchema/Key/kind``): plist types by their own, an optional
    /// by its wrapped type's, a `RawRepresentable` by its raw value's, `URL` as a string; `nil` for a `Codable` type
    /// (a dictionary or an array, which only a value tells).
    static func of(_ type: Any.Type) -> String? {
        if let known = type as? any KnownKind.Type { return known.storedKind }
        if let optional = type as? any OptionalConvertible.Type { return of(wrapped(optional)) }
        if let raw = type as? any RawRepresentable.Type { return of(rawValue(raw)) }
        return nil
    }

    /// `type`'s name as Swift spells it in code: `String?` rather than `Optional<String>`.
    static func name(of type: Any.Type) -> String {
        if let optional = type as? any OptionalConvertible.Type { return name(of: wrapped(optional)) + "?" }
        return "\(type)"
    }

    /// `type`, or the type it wraps when it is an optional.
    static func unwrapped(_ type: Any.Type) -> Any.Type {
        (type as? any OptionalConvertible.Type).map { wrapped($0) } ?? type
    }

    private static func wrapped<O: OptionalConvertible>(_: O.Type) -> Any.Type { O.Wrapped.self }

    private static func rawValue<R: RawRepresentable>(_: R.Type) -> Any.Type { R.RawValue.self }
}

/// A type whose stored kind is known from the type alone.
protocol KnownKind {
    /// The property-list kind a value of this type is stored as.
    static var storedKind: String { get }
}

extension Bool: KnownKind { static var storedKind: String { "boolean" } }
extension Int: KnownKind { static var storedKind: String { "integer" } }
extension Int8: KnownKind { static var storedKind: String { "integer" } }
extension Int16: KnownKind { static var storedKind: String { "integer" } }
extension Int32: KnownKind { static var storedKind: String { "integer" } }
extension Int64: KnownKind { static var storedKind: String { "integer" } }
extension UInt: KnownKind { static var storedKind: String { "integer" } }
extension UInt8: KnownKind { static var storedKind: String { "integer" } }
extension UInt16: KnownKind { static var storedKind: String { "integer" } }
extension UInt32: KnownKind { static var storedKind: String { "integer" } }
extension UInt64: KnownKind { static var storedKind: String { "integer" } }
extension Float: KnownKind { static var storedKind: String { "real" } }
extension Double: KnownKind { static var storedKind: String { "real" } }
extension String: KnownKind { static var storedKind: String { "string" } }
extension URL: KnownKind { static var storedKind: String { "string" } }
extension Date: KnownKind { static var storedKind: String { "date" } }
extension Data: KnownKind { static var storedKind: String { "data" } }
extension Array: KnownKind { static var storedKind: String { "array" } }
extension Dictionary: KnownKind where Key == String { static var storedKind: String { "dictionary" } }

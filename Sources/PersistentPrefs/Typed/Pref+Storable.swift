import Foundation

/// A type that a property list holds as itself: `Bool`, the integer types, `Float`, `Double`,
/// `String`, `Date`, `Data`, `URL` (kept as its string), and arrays, `String`-keyed
/// dictionaries and optionals of these.
///
/// ``Pref`` accepts these, `RawRepresentable` types whose raw value is one of them (enums,
/// `OptionSet`s), `Codable` types, and optionals of all of them, and nothing else: a type it
/// could never store does not compile.
///
/// ```swift
/// enum Mode { case a, b }
/// @Pref("Mode") var mode = Mode.a     // error: give Mode a raw value (enum Mode: String) or make it Codable
/// ```
public protocol PrefStorable {}

extension Bool: PrefStorable {}
extension Int: PrefStorable {}
extension Int8: PrefStorable {}
extension Int16: PrefStorable {}
extension Int32: PrefStorable {}
extension Int64: PrefStorable {}
extension UInt: PrefStorable {}
extension UInt8: PrefStorable {}
extension UInt16: PrefStorable {}
extension UInt32: PrefStorable {}
extension UInt64: PrefStorable {}
extension Float: PrefStorable {}
extension Double: PrefStorable {}
extension String: PrefStorable {}
extension Date: PrefStorable {}
extension Data: PrefStorable {}
extension URL: PrefStorable {}
extension Array: PrefStorable where Element: PrefStorable {}
extension Dictionary: PrefStorable where Key == String, Value: PrefStorable {}
extension Optional: PrefStorable where Wrapped: PrefStorable {}

// MARK: - Property-list types

extension Pref where Value: PrefStorable {
    /// A value with the default `wrappedValue`, under `key`.
    ///
    /// ```swift
    /// @Pref("Volume") var volume = 5
    /// ```
    public init(wrappedValue: Value, _ key: String, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: nil, summary: summary)
    }

    /// A value with a default and a rule: a value for which `validate` returns `false` or throws
    /// is refused on write, and read as the default when found stored.
    ///
    /// ```swift
    /// @Pref("Name", validate: { !$0.isEmpty }) var name = "x"
    /// ```
    ///
    /// - Parameters:
    ///   - wrappedValue: The default, read while the key is not stored (or stores a refused value).
    ///   - key: The key in the set.
    ///   - validate: Returns whether a value is allowed, or throws an error whose description says why not. It must
    ///     depend on the value only (it runs on every write of the key, at times under the store's lock).
    ///   - summary: One line on what the value is for, for the set's ``PrefsSchema`` (optional).
    public init(wrappedValue: Value, _ key: String, validate: @escaping (Value) throws -> Bool, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: Self.rule(validate, key: key), summary: summary)
    }
}

extension Pref where Value: PrefStorable & Comparable {
    /// A value with a default that must lie in `range`; others are refused on write, and read as
    /// the default when found stored.
    ///
    /// ```swift
    /// @Pref("Volume", in: 0...11) var volume = 5
    /// ```
    public init(wrappedValue: Value, _ key: String, in range: ClosedRange<Value>, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: Self.rule(range), summary: summary, bounds: (range.lowerBound, range.upperBound))
    }
}

// MARK: - Raw values

extension Pref where Value: RawRepresentable, Value.RawValue: PrefStorable {
    /// A value stored as its raw value (an enum with a raw type, an `OptionSet`), with a default.
    ///
    /// ```swift
    /// enum Theme: String { case system, light, dark }
    /// @Pref("Theme") var theme = Theme.system
    /// ```
    public init(wrappedValue: Value, _ key: String, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: nil, summary: summary)
    }

    /// A value stored as its raw value, with a default and a rule: a value `validate` refuses (returns
    /// `false` or throws why not) is not stored.
    public init(wrappedValue: Value, _ key: String, validate: @escaping (Value) throws -> Bool, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: Self.rule(validate, key: key), summary: summary)
    }
}

// MARK: - Codable types

extension Pref where Value: Codable {
    /// A `Codable` value, stored as the dictionary or array `PropertyListEncoder` makes of it,
    /// with a default.
    ///
    /// ```swift
    /// struct WindowFrame: Codable { var width = 800.0, height = 600.0 }
    /// @Pref("Window") var window = WindowFrame()
    /// ```
    @_disfavoredOverload
    public init(wrappedValue: Value, _ key: String, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: nil, summary: summary)
    }

    /// A `Codable` value with a default and a rule: a value `validate` refuses (returns `false` or throws why not)
    /// is not stored.
    @_disfavoredOverload
    public init(wrappedValue: Value, _ key: String, validate: @escaping (Value) throws -> Bool, summary: String? = nil) {
        self.init(wrappedValue: wrappedValue, key, rule: Self.rule(validate, key: key), summary: summary)
    }
}

// MARK: - Optionals

extension Pref {
    /// An optional value under `key` whose default is `nil`; assigning `nil` removes the key.
    ///
    /// ```swift
    /// @Pref("Last Folder") var lastFolder: URL?
    /// ```
    public init<Wrapped>(_ key: String, summary: String? = nil) where Value == Wrapped?, Wrapped: PrefStorable {
        self.init(wrappedValue: nil, key, rule: nil, summary: summary)
    }

    /// An optional value stored as its raw value, under `key`, whose default is `nil`.
    public init<Wrapped>(_ key: String, summary: String? = nil) where Value == Wrapped?, Wrapped: RawRepresentable, Wrapped.RawValue: PrefStorable {
        self.init(wrappedValue: nil, key, rule: nil, summary: summary)
    }

    /// An optional `Codable` value under `key`, whose default is `nil`.
    @_disfavoredOverload
    public init<Wrapped>(_ key: String, summary: String? = nil) where Value == Wrapped?, Wrapped: Codable {
        self.init(wrappedValue: nil, key, rule: nil, summary: summary)
    }

    /// An optional value stored as its raw value, with the default `wrappedValue` (`nil`: the key holds nothing).
    public init<Wrapped>(wrappedValue: Value, _ key: String, summary: String? = nil)
    where Value == Wrapped?, Wrapped: RawRepresentable, Wrapped.RawValue: PrefStorable {
        self.init(wrappedValue: wrappedValue, key, rule: nil, summary: summary)
    }

    // MARK: Clear errors for what cannot compile

    /// Not available: the type cannot be stored in a property list.
    @available(
        *, unavailable,
        message: "@Pref stores property-list types (Int, String, Date, [String], …), RawRepresentable types with such a raw value (enum Mode: String), URL and Codable types; give this type a raw value or make it Codable"
    )
    public init(wrappedValue: Value, _ key: String, summary: String? = nil) {
        fatalError("unavailable")
    }

    /// Not available: the type cannot be stored in a property list.
    @available(
        *, unavailable,
        message: "@Pref stores property-list types (Int, String, Date, [String], …), RawRepresentable types with such a raw value (enum Mode: String), URL and Codable types; give this type a raw value or make it Codable"
    )
    public init(wrappedValue: Value, _ key: String, validate: @escaping (Value) throws -> Bool, summary: String? = nil) {
        fatalError("unavailable")
    }

    /// Not available: `@Pref` needs the key the value is stored under.
    @available(*, unavailable, message: "@Pref needs the key its value is stored under: @Pref(\"Key\") var name = defaultValue")
    public init(wrappedValue: Value) {
        fatalError("unavailable")
    }

    /// Not available: a `@Pref` that is not optional needs a default.
    @available(
        *, unavailable,
        message: "@Pref needs a default value: @Pref(\"Key\") var name: Type = defaultValue (only an optional may leave it out, and it must be a type @Pref can store)"
    )
    public init(_ key: String, summary: String? = nil) {
        fatalError("unavailable")
    }
}

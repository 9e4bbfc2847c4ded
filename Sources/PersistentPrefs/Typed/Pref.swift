import Foundation

/// A typed value of a ``PersistentPrefs`` subclass, stored under `key` in the instance's set.
///
/// ```swift
/// enum Theme: String { case system, light, dark }
/// struct WindowFrame: Codable { var x = 0.0, y = 0.0, width = 800.0, height = 600.0 }
///
/// final class EditorPrefs: PersistentPrefs {
///     @Pref("Font Size") var fontSize: Double = 14
///     @Pref("Theme") var theme: Theme = .system
///     @Pref("Recent Files") var recent: [String] = []
///     @Pref("Last Folder") var lastFolder: URL?          // nil removes the key
///     @Pref("Window") var window: WindowFrame = .init()  // stored as a plist dictionary
/// }
///
/// let prefs = EditorPrefs()
/// prefs.fontSize = 16          // durable when the setter returns
/// prefs.reset("Font Size")     // back to 14
/// ```
///
/// - The declared value is the default: a key that is not stored reads as its default, and
///   the default is never written. ``PersistentPrefs/reset(_:)`` and
///   ``PersistentPrefs/resetAll()`` return keys to their defaults by removing them.
/// - Reads and writes go through the instance's shared, locked set, with the same guarantees
///   as ``PersistentPrefs/values``. A refused write leaves the set unchanged and sets
///   ``PersistentPrefs/lastError``.
/// - When a subclass does not override ``PersistentPrefs/keys``, its keys are the keys of its
///   `@Pref` properties.
/// - Storage: property-list types as themselves, `RawRepresentable` types (enums, `OptionSet`)
///   as their raw values, `URL` as its absolute string, other `Codable` types as the
///   dictionary or array `PropertyListEncoder` makes.
/// - A stored value that cannot be read as the declared type (another program wrote a string
///   where an `Int` belongs) reads as the default, is reported in ``PersistentPrefs/lastError``
///   as ``PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)``, and stays stored
///   until something writes that key.
@propertyWrapper
public struct Pref<Value> {
    /// The key in the set.
    public let key: String
    /// The value read when the key is not stored.
    public let defaultValue: Value
    @usableFromInline let codec: PrefCodec<Value>
    /// What the Observation framework tracks this key by (made once, not on every read).
    @usableFromInline let observationKey: KeyPath<PrefsKeySpace, Int>

    /// A value with a default.
    ///
    /// - Parameters:
    ///   - wrappedValue: The default, read while the key is not stored.
    ///   - key: The key in the set.
    public init(wrappedValue: Value, _ key: String) {
        self.key = key
        defaultValue = wrappedValue
        codec = PrefCodec.make()
        observationKey = PrefsKeySpace.keyPath(key)
    }

    /// An optional value whose default is `nil`; assigning `nil` removes the key.
    ///
    /// - Parameter key: The key in the set.
    public init<Wrapped>(_ key: String) where Value == Wrapped? {
        self.init(wrappedValue: nil, key)
    }

    /// Not available: `@Pref` reaches its value through the enclosing ``PersistentPrefs``.
    @available(*, unavailable, message: "@Pref can only be used on properties of a PersistentPrefs subclass")
    public var wrappedValue: Value {
        get { fatalError("unreachable: @Pref outside a PersistentPrefs subclass") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("unreachable: @Pref outside a PersistentPrefs subclass") }
    }

    /// Reads and writes the value through the enclosing instance's set.
    ///
    /// Inlinable, so a read of an `Int`, `Double`, `Float` or `Bool` property is specialised in
    /// the subclass's module and takes the fast path of ``PersistentPrefs/value(forKey:as:)``.
    @inlinable
    public static subscript<Owner: PersistentPrefs>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Pref<Value>>
    ) -> Value {
        get {
            let pref = owner[keyPath: storageKeyPath]
            if let value = owner.value(forKey: pref.key, as: Value.self, tracking: pref.observationKey) { return value }
            return owner.read(pref)
        }
        set { owner.write(newValue, owner[keyPath: storageKeyPath]) }
    }
}

/// What the base class needs to know of a `@Pref` found by reflection.
protocol DeclaredPref {
    var key: String { get }
    /// The default in its stored form; `nil` for an optional whose default is `nil`.
    var storedDefault: Any? { get }
}

extension Pref: DeclaredPref {
    var storedDefault: Any? { try? codec.encode(defaultValue) }
}

// MARK: - Reading and writing typed values

extension PersistentPrefs {
    /// The slow path of a ``Pref`` read: a value that is not stored as the declared type
    /// (absent, `RawRepresentable`, `URL`, `Codable`, or of the wrong type).
    @usableFromInline
    func read<Value>(_ pref: Pref<Value>) -> Value {
        guard let stored = rawValue(forKey: pref.key, tracking: pref.observationKey) else {
            // Not stored: the defaults file's value, then the declared one.
            if let fileDefault = fileDefaults[pref.key], let value = pref.codec.decode(fileDefault) {
                return value
            }
            return pref.defaultValue
        }
        if let value = pref.codec.decode(stored) { return value }
        lastError = .typeMismatch(key: pref.key, expected: "\(Value.self)", found: PlistValue.describe(stored))
        return pref.defaultValue
    }

    @usableFromInline
    func write<Value>(_ value: Value, _ pref: Pref<Value>) {
        record {
            try submit {
                let encoded: Any?
                do {
                    encoded = try pref.codec.encode(value)
                } catch {
                    throw PrefsError.valuesNotPlistCompatible(invalidElements: [pref.key])
                }
                return try change(setting: encoded, forKey: pref.key, isNormalized: true)
            }
        }
    }

    /// The defaults of this instance's ``Pref`` properties, by key, in their stored form
    /// (optionals whose default is `nil` are left out).
    ///
    /// Handy for writing the defaults into an empty set: `values = declaredDefaults`.
    public var declaredDefaults: [String: Any] {
        var defaults: [String: Any] = [:]
        for pref in declaredPrefs() {
            if let value = pref.storedDefault { defaults[pref.key] = value }
        }
        return defaults
    }

    /// The `@Pref` properties of this instance, from its class and its superclasses.
    private func declaredPrefs() -> [any DeclaredPref] {
        var prefs: [any DeclaredPref] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror {
            for child in current.children {
                if let pref = child.value as? any DeclaredPref { prefs.append(pref) }
            }
            mirror = current.superclassMirror
        }
        return prefs
    }

    /// The keys of the `@Pref` properties of this instance's class and its superclasses.
    var declaredPrefKeys: [String] {
        let type = ObjectIdentifier(Swift.type(of: self))
        if let known = declaredKeysByClass.withLock({ $0[type] }) { return known }
        let keys = declaredPrefs().map(\.key)
        declaredKeysByClass.withLock { $0[type] = keys }
        return keys
    }
}

/// The `@Pref` keys of each class, found once by reflection.
private let declaredKeysByClass = Locked<[ObjectIdentifier: [String]]>([:])

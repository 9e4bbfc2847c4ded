import Foundation

/// A property wrapper for one `UserDefaults` key, from the article "UserDefaults container and
/// property wrapper", made safe and durable.
///
/// Only types a property list can hold have initialisers, so a declaration with any other
/// type does not compile (there is no generic catch-all):
///
/// - with a default: `Bool`, `Int`, `Double`, `String`, `URL`, `Data`, `Date`, and
///   `RawRepresentable` types whose raw value is a `String` or an `Int`;
/// - optional (`nil` removes the key): the same types.
///
/// In every initialiser `wrappedValue` is the default, `key` the `UserDefaults` key, and `store`
/// the defaults to use (`.standard` by default).
///
/// ```swift
/// enum Planet: String { case mercury, venus, earth, mars }
///
/// final class UserSettings {
///     @SettingsStorage("age")
///     var age: Int?
///
///     @SettingsStorage("name")
///     var name: String?
///
///     @SettingsStorage("planet")
///     var planet: Planet = .earth
/// }
/// ```
///
/// A `URL` is stored as its absolute string and an enum as its raw value. Every write is synchronised when the
/// setter returns (<doc:ApplePlatforms>); a stored value of another type reads as the default (or `nil`), and
/// `$property.lastError` says what was found. The key reads through the suite's system layers; an assignment to a
/// locked key writes nothing, and `$property.lastError` is ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)``
/// (<doc:LayersAndLockdown>). See <doc:UserDefaultsKeys>.
@propertyWrapper
public struct SettingsStorage<Value> {
    private let get: () -> Value
    private let set: (Value) -> Void

    /// What the most recent read or write of this property found (`settings.$planet.lastError`); see ``Status``.
    public let projectedValue: Status

    /// The value the key reads through the suite's system layers; the default when neither the user nor a layer
    /// gives one, or when it is of another type.
    public var wrappedValue: Value {
        get { get() }
        nonmutating set { set(newValue) }
    }

    /// The outcome of the latest access of a ``SettingsStorage`` property (`$name.lastError`),
    /// and its changes (`$name.observeChanges { … }`, `$name.changes()`).
    public final class Status: @unchecked Sendable {  // `failure` is a Locked; the rest is immutable
        fileprivate let failure = Locked<PersistentPrefs.PrefsError?>(nil)
        private let key: String
        private let store: UserDefaultsStore

        fileprivate init(key: String, store: UserDefaultsStore) {
            self.key = key
            self.store = store
        }

        /// Why the most recent read or write failed; `nil` after a success.
        public var lastError: PersistentPrefs.PrefsError? { failure.withLock { $0 } }

        /// Calls `handler` after each change of the property's stored value, whoever made it; see
        /// ``UserDefaultsContainer/observeChanges(to:_:)`` for how and when. The event's only key is the property's.
        ///
        /// ```swift
        /// let observation = settings.$age.observeChanges { _ in print(settings.age as Any) }
        /// ```
        ///
        /// - Returns: The observation; observing stops when it is cancelled or deallocated.
        public func observeChanges(_ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation {
            store.observeKey(key, handler)
        }

        /// The property's changes as an async sequence, which ends when the iterating task is cancelled.
        public func changes() -> AsyncStream<PrefsChangeEvent> {
            PrefsObservation.stream { store.observeKey(key, $0) }
        }

        fileprivate func record(_ error: PersistentPrefs.PrefsError?) {
            failure.withLock { $0 = error }
        }
    }

    /// The one implementation behind every initialiser.
    private init(key: String, store userDefaults: UserDefaults, defaultValue: Value) {
        let store = UserDefaultsStore(userDefaults: userDefaults)
        let codec = PrefCodec<Value>.make()
        let status = Status(key: key, store: store)
        projectedValue = status
        get = {
            let read = store.decodedObject(forKey: key, by: codec)
            status.record(read.report)
            return read.value ?? defaultValue
        }
        set = { newValue in
            do {
                try store.setEncoded(newValue, forKey: key, by: codec)
                status.record(nil)
            } catch {
                status.record(SharedSet.mapped(error))
            }
        }
    }
}

// MARK: - Values with a default

extension SettingsStorage {
    /// A `Bool` with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == Bool {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// An `Int` with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == Int {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// A `Double` with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == Double {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// A `String` with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == String {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// A `URL` with the default `wrappedValue`, under `key` in `store`; stored as its absolute string.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == URL {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// A `Data` value with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == Data {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// A `Date` with the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value == Date {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }
}

// MARK: - Optional values

extension SettingsStorage where Value: ExpressibleByNilLiteral {
    /// An optional `Bool` under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == Bool? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `Int` under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == Int? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `Double` under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == Double? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `String` under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == String? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `URL`, stored as its absolute string under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == URL? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `Data` value under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == Data? {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional `Date` under `key` in `store`; `nil` removes the key.
    public init(_ key: String, store: UserDefaults = .standard) where Value == Date? {
        self.init(key: key, store: store, defaultValue: nil)
    }
}

// MARK: - RawRepresentable values

extension SettingsStorage where Value: RawRepresentable {
    /// A `RawRepresentable` with a `String` raw value and the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value.RawValue == String {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }

    /// An enum or `OptionSet` with an `Int` raw value and the default `wrappedValue`, under `key` in `store`.
    public init(wrappedValue: Value, _ key: String, store: UserDefaults = .standard) where Value.RawValue == Int {
        self.init(key: key, store: store, defaultValue: wrappedValue)
    }
}

extension SettingsStorage {
    /// An optional enum with an `Int` raw value under `key` in `store`; `nil` removes the key.
    public init<R>(_ key: String, store: UserDefaults = .standard) where Value == R?, R: RawRepresentable, R.RawValue == Int {
        self.init(key: key, store: store, defaultValue: nil)
    }

    /// An optional enum with a `String` raw value under `key` in `store`; `nil` removes the key.
    public init<R>(_ key: String, store: UserDefaults = .standard) where Value == R?, R: RawRepresentable, R.RawValue == String {
        self.init(key: key, store: store, defaultValue: nil)
    }
}

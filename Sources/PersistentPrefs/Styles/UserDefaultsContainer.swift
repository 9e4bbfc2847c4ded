import Foundation

/// Typed access to single `UserDefaults` keys named by a `CodingKey` enum.
///
/// The design of the article "UserDefaults container and property wrapper", made safe:
/// values go through the same vetting, normalisation and durability as ``PersistentPrefs``.
/// Enums and `OptionSet`s are stored as their raw values, `URL`s as their absolute strings,
/// other `Codable` values as property-list dictionaries; a value a property list cannot hold
/// is refused (nothing is written, ``lastError`` says so) instead of crashing the process.
/// Every write is synchronised when the setter returns: on disk on Linux, handed to `cfprefsd`
/// on Apple platforms (<doc:ApplePlatforms>).
///
/// The keys read through the suite's system layers, and a key an administrator locks cannot be
/// changed (see <doc:LayersAndLockdown>): a read gives the layer's value of a locked key, and the
/// user's value of any other key, else a layer's; a write that would change a locked key — or a
/// locked key inside a set the key holds — writes nothing, and the subscript sets ``lastError``
/// (``update(_:as:_:)`` throws) ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)``.
///
/// ```swift
/// enum Planet: String { case mercury, venus, earth, mars }
///
/// struct UserSettings {
///     private enum SettingsKey: CodingKey {
///         case age
///         case name
///         case planet
///     }
///
///     private let storage = UserDefaultsContainer(keyedBy: SettingsKey.self)
///
///     var age: Int? {
///         get { storage[.age] }
///         set { storage[.age] = newValue }
///     }
///
///     var planet: Planet {
///         get { storage[.planet] ?? .earth }
///         set { storage[.planet] = newValue }
///     }
/// }
/// ```
public final class UserDefaultsContainer<K: CodingKey>: @unchecked Sendable {  // `store` is Sendable; `failure` is a Locked
    private let store: UserDefaultsStore
    private let failure = Locked<PersistentPrefs.PrefsError?>(nil)

    /// A container for the keys of `K` in `userDefaults`.
    ///
    /// - Parameters:
    ///   - keyedBy: The `CodingKey` type naming the keys (`stringValue` is the key).
    ///   - userDefaults: The defaults to use; `.standard` by default.
    public init(keyedBy: K.Type, userDefaults: UserDefaults = .standard) {
        store = UserDefaultsStore(userDefaults: userDefaults)
    }

    /// Why the most recent write or read failed; `nil` after a success.
    ///
    /// For example ``PersistentPrefs/PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``
    /// after assigning a value no property list can hold, or
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)`` after
    /// reading a key stored with another type.
    public var lastError: PersistentPrefs.PrefsError? { failure.withLock { $0 } }

    /// The value of `key` as `T`, through the suite's system layers; assigning `nil` removes the
    /// user's value.
    ///
    /// Reading a key stored as another type gives `nil` and sets ``lastError``; assigning to a
    /// locked key writes nothing and sets ``lastError`` to
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)``.
    public subscript<T>(key: K) -> T? {
        get { read(key) }
        set { write(newValue, key) }
    }

    /// The value of `key` as a `RawRepresentable` (an enum or `OptionSet`), kept as its raw
    /// value, through the suite's system layers; assigning `nil` removes the user's value.
    public subscript<T>(key: K) -> T? where T: RawRepresentable {
        get { read(key) }
        set { write(newValue, key) }
    }

    /// Calls `handler` after each change of `key`'s stored value, whoever made it: this
    /// container, plain `UserDefaults` code that synchronises, another process. Changes are
    /// learned from the operating system (the suite's file on Linux, `UserDefaults` itself on
    /// Apple platforms), so a write by this process is reported moments after it returns, on a
    /// thread of the library's. The event's ``PrefsChangeEvent/root`` and only key are the
    /// key's `stringValue`.
    ///
    /// ```swift
    /// let observation = storage.observeChanges(to: .age) { _ in print("age changed") }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to observe.
    ///   - handler: Called after each change.
    /// - Returns: The observation; observing stops when it is cancelled or deallocated.
    public func observeChanges(
        to key: K, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void
    ) -> PrefsObservation {
        store.observeKey(key.stringValue, handler)
    }

    /// The changes of `key` as an async sequence, which ends when the iterating task is
    /// cancelled; see ``observeChanges(to:_:)``.
    ///
    /// - Parameter key: The key to observe.
    /// - Returns: The events.
    public func changes(to key: K) -> AsyncStream<PrefsChangeEvent> {
        PrefsObservation.stream { store.observeKey(key.stringValue, $0) }
    }

    /// Changes the value under `key` atomically: reads it under the suite's lock (shared by every
    /// process using this library), lets `body` change it, and writes the result in the same
    /// locked step, so concurrent updaters never lose each other's changes.
    ///
    /// ```swift
    /// try storage.update(.launches, as: Int.self) { $0 = ($0 ?? 0) + 1 }
    /// ```
    ///
    /// `body` gets the value readers see (the suite's system layers beneath the user's value),
    /// or `nil` when there is none; leaving `nil` removes the user's value, and leaving the value
    /// as it came changes nothing. It may run more than once when plain `UserDefaults` code
    /// rewrites the suite meanwhile, so keep it free of other side effects.
    ///
    /// - Parameters:
    ///   - key: The key to change.
    ///   - type: The value's type.
    ///   - body: Changes the value.
    /// - Throws: What `body` throws (unchanged);
    ///   ``PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)`` when the stored value is
    ///   not a `T`; ``PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``;
    ///   ``PersistentPrefs/PrefsError/keyLocked(key:)`` when the result changes a locked key; a
    ///   store error. Nothing is written when it throws; ``lastError`` holds the error.
    public func update<T>(_ key: K, as type: T.Type = T.self, _ body: (inout T?) throws -> Void) throws {
        let name = key.stringValue
        let codec = PrefCodec<T>.make()
        do {
            try store.updateKey(name) { stored -> Any? in
                // `body` sees what readers see (the layers beneath the user's value, locks applied).
                let seen = store.layered(stored.map { PlistValue.normalized($0, for: .loading) ?? $0 }, forKey: name)
                var value: T?
                if let seen {
                    guard let decoded = codec.decode(seen) else { throw codec.mismatch(seen, forKey: name) }
                    value = decoded
                }
                try body(&value)
                // Vetted as every write of a suite's key is; only what differs from `seen` is
                // written (see updateKey).
                let encoded = try value.flatMap { value throws(PersistentPrefs.PrefsError) in try codec.encoded(value, forKey: name) }
                return try PersistentPrefs.Vetting.anyKey.vet(encoded, forKey: name)
            }
            failure.withLock { $0 = nil }
        } catch {
            failure.withLock { $0 = SharedSet.mapped(error) }
            throw error
        }
    }

    private func read<T>(_ key: K) -> T? {
        let read = store.decodedObject(forKey: key.stringValue, by: PrefCodec<T>.make())
        failure.withLock { $0 = read.report }
        return read.value
    }

    private func write<T>(_ value: T?, _ key: K) {
        do {
            try store.setEncoded(value, forKey: key.stringValue, by: PrefCodec<T>.make())
            failure.withLock { $0 = nil }
        } catch {
            failure.withLock { $0 = SharedSet.mapped(error) }
        }
    }
}

import Foundation

/// Typed access to single `UserDefaults` keys named by a `CodingKey` enum, from the article "UserDefaults container
/// and property wrapper", made safe: values get the vetting, normalisation and durability of ``PersistentPrefs``.
///
/// Enums and `OptionSet`s are stored as raw values, `URL`s as absolute strings, other `Codable` values as
/// property-list dictionaries; a value a property list cannot hold is refused (nothing is written, ``lastError``
/// says so). Every write is synchronised when the setter returns (<doc:ApplePlatforms>). Keys read through the
/// suite's system layers, and a write that would change a locked key (or one inside a set the key holds) writes
/// nothing and reports ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)`` (<doc:LayersAndLockdown>).
/// See <doc:UserDefaultsKeys>.
///
/// ```swift
/// enum Planet: String { case earth, mars }
/// struct UserSettings {
///     private enum SettingsKey: CodingKey { case age, planet }
///     private let storage = UserDefaultsContainer(keyedBy: SettingsKey.self)
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

    /// A container for the keys of `K` (each key's `stringValue`) in `userDefaults` (`.standard` by default).
    public init(keyedBy: K.Type, userDefaults: UserDefaults = .standard) {
        store = UserDefaultsStore(userDefaults: userDefaults)
    }

    /// Why the most recent write or read failed (such as
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)``); `nil` after a success.
    public var lastError: PersistentPrefs.PrefsError? { failure.withLock { $0 } }

    /// The value of `key` as `T`, through the suite's system layers; assigning `nil` removes the user's value.
    /// Reading a key stored as another type gives `nil` and sets ``lastError``; assigning to a locked key writes
    /// nothing and sets ``lastError``.
    public subscript<T>(key: K) -> T? {
        get { read(key) }
        set { write(newValue, key) }
    }

    /// The value of `key` as a `RawRepresentable` (an enum or `OptionSet`), kept as its raw value; as the other
    /// subscript.
    public subscript<T>(key: K) -> T? where T: RawRepresentable {
        get { read(key) }
        set { write(newValue, key) }
    }

    /// Calls `handler` after each change of `key`'s stored value, whoever made it (this container, plain
    /// `UserDefaults` code that synchronises, another process). Changes are learned from the operating system, so a
    /// write by this process is reported moments after it returns, on a library thread. The event's
    /// ``PrefsChangeEvent/root`` and only key are the key's `stringValue`.
    ///
    /// ```swift
    /// let observation = storage.observeChanges(to: .age) { _ in print("age changed") }
    /// ```
    ///
    /// - Returns: The observation; observing stops when it is cancelled or deallocated.
    public func observeChanges(
        to key: K, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void
    ) -> PrefsObservation {
        store.observeKey(key.stringValue, handler)
    }

    /// The changes of `key` as an async sequence, which ends when the iterating task is cancelled; see
    /// ``observeChanges(to:_:)``.
    public func changes(to key: K) -> AsyncStream<PrefsChangeEvent> {
        PrefsObservation.stream { store.observeKey(key.stringValue, $0) }
    }

    /// Changes the value under `key` atomically: reads it under the suite's lock (shared by every process using this
    /// library), lets `body` change it, and writes the result in the same locked step, so concurrent updaters never
    /// lose each other's changes.
    ///
    /// ```swift
    /// try storage.update(.launches, as: Int.self) { $0 = ($0 ?? 0) + 1 }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to change.
    ///   - type: The value's type.
    ///   - body: Gets the value readers see (layers beneath the user's value), or `nil`; leaving `nil` removes the
    ///     user's value, leaving it unchanged writes nothing. It may run more than once when plain `UserDefaults`
    ///     code rewrites the suite meanwhile, so keep it free of other side effects.
    /// - Throws: What `body` throws (unchanged); ``PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)``
    ///   when the stored value is not a `T`; ``PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``;
    ///   ``PersistentPrefs/PrefsError/keyLocked(key:)`` when the result changes a locked key; a store error. Nothing
    ///   is written when it throws; ``lastError`` holds the error.
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
                // Vetted as every write of a suite's key is; only what differs from `seen` is written (see updateKey).
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

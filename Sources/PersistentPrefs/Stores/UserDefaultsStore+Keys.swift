import Foundation

// Single keys of a suite, for ``UserDefaultsContainer`` and ``SettingsStorage``: the same lock,
// the same vetting and normalisation, and the same durability as whole sets.
extension UserDefaultsStore {
    /// The value stored under `key` in the suite, normalised like a set's values; `nil` when
    /// absent.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the suite cannot be read
    ///   (for example a damaged file, moved aside), so the reader can report it.
    func object(forKey key: String) throws -> Any? {
        try object(key).flatMap { PlistValue.normalized($0, for: .loading) }
    }

    /// Stores `value` under `key` (removes the key for `nil`), durably.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``
    ///   when a property list cannot hold `value` (nothing is written), or
    ///   ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    func setObject(_ value: Any?, forKey key: String) throws {
        var normalized: Any?
        if let value {
            guard let vetted = PlistValue.normalized(value) else {
                throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: [key])
            }
            normalized = vetted
        }
        try update(key) { _ in normalized }
    }
}

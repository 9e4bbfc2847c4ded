import Foundation

// Single keys of a suite, for ``UserDefaultsContainer`` and ``SettingsStorage``: the same lock,
// the same vetting and normalisation, and the same durability as whole sets.
extension UserDefaultsStore {
    /// The value stored under `key` in the suite (its own domain, not a command-line
    /// argument), normalised like a set's values; `nil` when absent.
    func object(forKey key: String) -> Any? {
        handle.withDefaults { defaults in
            handle.persistentObject(forKey: key, in: defaults).flatMap(PlistValue.normalized)
        }
    }

    /// Stores `value` under `key` (removes the key for `nil`) and synchronises the suite.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``
    ///   when a property list cannot hold `value` (nothing is written), or
    ///   ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    func setObject(_ value: Any?, forKey key: String) throws {
        guard let value else {
            try handle.withDefaults { defaults in
                defaults.removeObject(forKey: key)
                try handle.synchronize(defaults, root: key)
            }
            return
        }
        guard let normalized = PlistValue.normalized(value) else {
            throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: [key])
        }
        try handle.withDefaults { defaults in
            defaults.set(normalized, forKey: key)
            try handle.synchronize(defaults, root: key)
        }
    }
}

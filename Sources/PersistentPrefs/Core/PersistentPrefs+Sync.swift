import Foundation

// What the sync product (`PersistentPrefsSync`, `package` access) needs of a set: its name on every device, and whether
// it takes a value another device set. Merged values are written through ``PersistentPrefs/update(_:)``.
extension PersistentPrefs {
    /// The name of the suite keeping this set, alike on every device; `nil` for `.standard`, a wrapped `UserDefaults`
    /// object without a name, and stores other than ``UserDefaultsStore``.
    ///
    /// - Throws: Why the set has no store (see ``PrefsError/userDefaultsUnavailable``).
    package func syncSuiteName() throws -> String? {
        (try resolvedSet().store as? UserDefaultsStore)?.suiteName
    }

    /// The set's stored values (no defaults, no layers), changes waiting to be coalesced included.
    ///
    /// - Throws: Why the set cannot be read.
    package func syncStoredValues() throws -> [String: Any] {
        try resolvedSet().values()
    }

    /// Why this set refuses `value` (`nil`: a removal) under `key` as a write, or `nil` when it takes it: a key not in
    /// ``keys``, a value no property list holds or its `@Pref` declaration or ``validators`` refuse, a locked key.
    package func refusal(of value: Any?, forKey key: String) -> PrefsError? {
        if isLocked(key) { return .keyLocked(key: key) }
        do {
            _ = try vetting(oneKey: true).vet(value, forKey: key)
            return nil
        } catch let error as PrefsError {
            return error
        } catch {
            return .unknownError(error: error)
        }
    }
}

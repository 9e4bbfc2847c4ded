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

// MARK: - Observing one key

extension UserDefaultsStore {
    /// Calls `handler` after each change of the suite key `key`'s stored value, whoever made it
    /// (this process, another process, plain `UserDefaults` code that synchronises): the watcher
    /// reports that the suite may have changed, the key is read again and compared with the
    /// value last seen. The event's ``PrefsChangeEvent/root`` and only key are `key`.
    func observeKey(_ key: String, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation {
        let store = self
        let read: @Sendable () -> Data? = { SuiteLedger.xml((try? store.object(forKey: key)) ?? nil) }
        let seen = Locked(read())
        let stop = watch(suiteKey: key) {
            let current = read()
            let changed = seen.withLock { seen in
                defer { seen = current }
                return seen != current
            }
            if changed { handler(PrefsChangeEvent(root: key, keys: [key], storeIdentifier: store.identifier)) }
        }
        return PrefsObservation(stop) { store.watchProblem(root: key) }
    }
}

import Foundation

// Single keys of a suite, for ``UserDefaultsContainer`` and ``SettingsStorage``: the same lock,
// the same vetting and normalisation, the same durability and the same system layers as whole
// sets. A suite's layer files hold root keys at the top level (see ``LayerFile/holdsRoots``), so
// a top-level key reads and is locked through the top of those files, and a key holding a set
// through the set under it, as ``PersistentPrefs`` reads that set.
extension UserDefaultsStore {
    /// The value readers see under `key` in the suite, normalised like a set's values: the
    /// user's stored value with the suite's system layers beneath it and its locks applied (see
    /// ``layered(_:forKey:)``); `nil` when none gives one.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the suite cannot be read
    ///   (for example a damaged file, moved aside), so the reader can report it.
    func object(forKey key: String) throws -> Any? {
        layered(try object(key).flatMap { PlistValue.normalized($0, for: .loading) }, forKey: key)
    }

    /// What readers see under `key` when the user's file holds `stored` (normalised for loading).
    ///
    /// A key locked at the top of a layer file reads that layer's value (or a less important
    /// one's), never the user's; any other key reads the user's value, else the first layer's.
    /// A key holding a set (the user's value, or the layers' when the user has none) reads as
    /// that set with its own layers and locks, as ``LayerStack/effective(_:)`` makes it.
    func layered(_ stored: Any?, forKey key: String) -> Any? {
        let files = layerFiles(root: key)
        guard !files.isEmpty else { return stored }
        let reader = LayerReader(files: files)
        let userSet = stored.flatMap(PlistValue.stringKeyedDictionary)
        if stored == nil || userSet != nil {
            let set = reader.stack(root: key)
            if !set.isEmpty {
                let effective = set.effective(userSet ?? [:])
                return effective.isEmpty ? nil : effective
            }
        }
        let top = reader.stack(root: nil)
        guard !top.isEmpty else { return stored }
        return top.effective(stored.map { [key: $0] } ?? [:])[key]
    }

    /// Stores `value` under `key` (removes the key for `nil`), durably.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``
    ///   when a property list cannot hold `value`,
    ///   ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)`` when it would change a
    ///   key locked in the suite's system layers (see ``updateKey(_:_:)``), or
    ///   ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``; nothing is
    ///   written then.
    func setObject(_ value: Any?, forKey key: String) throws {
        // A suite's keys are not whitelisted; the value is vetted as a set's is.
        let normalized = try PersistentPrefs.Vetting.anyKey.vet(value, forKey: key)
        try updateKey(key) { _ in normalized }
    }

    /// ``update(_:_:)`` for one top-level key, refused with
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)`` (nothing written) when the
    /// new value changes a key locked in the suite's system layers: the key itself, locked at the
    /// top of a layer file, or a locked key of the set it holds. Checked on the value as stored,
    /// under the suite's lock, as ``PreferencesFile/update(_:)`` checks a change of the suite.
    ///
    /// What is written is what differs from what readers see: a value equal to it writes nothing
    /// (a layer's value is never copied into the user's file), and of a set only the keys whose
    /// value differs from the set as read are changed in the user's set — so a set read, edited
    /// and written back carries its locked keys' values without changing them.
    func updateKey(_ key: String, _ change: (Any?) throws -> Any?) throws {
        let layers = LayerReader(files: layerFiles(root: key))
        try update(key) { stored in
            let new = unlayered(try change(stored), stored: stored, forKey: key)
            try layers.checkSuiteChange(from: stored.map { [key: $0] } ?? [:], to: new.map { [key: $0] } ?? [:])
            return .set(new)
        }
    }

    /// What writing `new` under `key` stores when the user's file holds `stored` (see
    /// ``updateKey(_:_:)``).
    private func unlayered(_ new: Any?, stored: Any?, forKey key: String) -> Any? {
        let storedValue = stored.flatMap { PlistValue.normalized($0, for: .loading) }
        let seen = layered(storedValue, forKey: key)
        guard let newValue = new.flatMap({ PlistValue.normalized($0) }) else { return new }  // nil, or refused by the write
        if PlistValue.same(seen, newValue) { return stored }
        // A set written over a set (or over nothing): the user's set, changed where `new` differs from `seen`.
        let storedSet = storedValue.map(PlistValue.stringKeyedDictionary) ?? [:]
        guard let newSet = PlistValue.stringKeyedDictionary(newValue), let seenSet = seen.flatMap(PlistValue.stringKeyedDictionary),
            var written = storedSet
        else { return newValue }
        for changed in PlistValue.changedKeys(seenSet, newSet) { written[changed] = newSet[changed] }
        return written.isEmpty && storedValue == nil ? nil : written
    }
}

// MARK: - Typed keys

extension UserDefaultsStore {
    /// The value readers see under `key`, decoded by `codec`, and what the read reports: a
    /// store error (the value is then `nil`), a stored value that does not stand for a `Value`
    /// (``PrefCodec/mismatch(_:forKey:)``, the value `nil`), else the suite's damage notice (a
    /// damaged suite moved aside is reported by every read until it is written again) or `nil`.
    /// The one read of ``UserDefaultsContainer`` and ``SettingsStorage``.
    func decodedObject<Value>(forKey key: String, by codec: PrefCodec<Value>) -> (value: Value?, report: PersistentPrefs.PrefsError?) {
        let stored: Any?
        do {
            stored = try object(forKey: key)
        } catch {
            return (nil, SharedSet.mapped(error))
        }
        guard let stored else { return (nil, damageNotice(root: key)) }
        guard let value = codec.decode(stored) else { return (nil, codec.mismatch(stored, forKey: key)) }
        return (value, damageNotice(root: key))
    }

    /// Stores `value` encoded by `codec` under `key` (`nil`, or a value encoded as none, removes
    /// it), durably: the one write of ``UserDefaultsContainer`` and ``SettingsStorage``.
    ///
    /// - Throws: What ``PrefCodec/encoded(_:forKey:)`` and ``setObject(_:forKey:)`` throw;
    ///   nothing is written then.
    func setEncoded<Value>(_ value: Value?, forKey key: String, by codec: PrefCodec<Value>) throws {
        try setObject(try value.flatMap { value throws(PersistentPrefs.PrefsError) in try codec.encoded(value, forKey: key) }, forKey: key)
    }
}

// MARK: - Observing one key

extension UserDefaultsStore {
    /// Calls `handler` after each change of the suite key `key`'s stored value, whoever made it
    /// (this process, another process, plain `UserDefaults` code that synchronises): the watcher
    /// reports that the suite may have changed, the key is read again and compared with the
    /// value last seen. The event's ``PrefsChangeEvent/root`` and only key are `key`.
    func observeKey(_ key: String, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation {
        /// A stored value, compared exactly (a date to the fraction of a second).
        struct Seen: @unchecked Sendable {  // an immutable property-list value
            let value: Any?
        }
        let store = self
        let read: @Sendable () -> Seen = { Seen(value: (try? store.object(forKey: key)) ?? nil) }
        let seen = Locked(read())
        let stop = watch(suiteKey: key) {
            let current = read()
            let changed = seen.withLock { seen in
                defer { seen = current }
                return !PlistValue.same(seen.value, current.value)
            }
            if changed { handler(PrefsChangeEvent(root: key, keys: [key], storeIdentifier: store.identifier)) }
        }
        return PrefsObservation(stop) { store.watchProblem(root: key) }
    }
}

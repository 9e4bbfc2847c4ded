import Foundation

extension PersistentPrefs {
    /// What a write of this set may store, the one road every write takes: keys in ``keys``, property-list values
    /// (normalised here), values passing their `@Pref` declaration and ``validators``, locked keys refused. Worked out
    /// outside every lock (``keys`` and ``validators`` are overridable), used where the write is made.
    struct Vetting {
        /// The keys a write may add or change (the library's schema version key always).
        enum AllowedKeys {
            /// ``PersistentPrefs/keys`` as returned: for a write of one key, cheaper than hashing them all.
            case list([String])
            /// ``PersistentPrefs/keys`` as a set, for a write of many keys or a batch.
            case set(Set<String>)
            /// Any key (the key styles; a `Codable` type's migration, whose decoder judges the result).
            case any

            func contains(_ key: String) -> Bool {
                switch self {
                case .list(let keys): return keys.contains(key) || key == schemaVersionKey
                case .set(let keys): return keys.contains(key) || key == schemaVersionKey
                case .any: return true
                }
            }
        }

        /// Which keys of a whole set a write answers for.
        enum Scope {
            /// Every key it holds, as the caller named them all (``PersistentPrefs/values``, `addMissingValues`).
            case named
            /// Only the keys it adds or changes, as it starts from the set as stored (a transaction's or migration's result).
            case changed
        }

        let allowed: AllowedKeys
        let rules: Rules?
        /// Whether the values are a ``Pref`` codec's output: normalised, and only ``validators`` are left to check.
        var takesTypedValues = false

        /// Vetting that allows any key and checks only that values are storable.
        static var anyKey: Vetting { Vetting(allowed: .any, rules: nil) }

        /// `value` for `key`, vetted and normalised (`nil` removes the key, which must still be allowed).
        /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``, ``PrefsError/valuesNotPlistCompatible(invalidElements:)``,
        ///   or a rule's refusal.
        func vet(_ value: Any?, forKey key: String) throws -> Any? {
            guard allowed.contains(key) else { throw PrefsError.incorrectKeys(invalidElements: [key]) }
            guard let value else { return nil }
            let accepted: Any
            if takesTypedValues {
                accepted = value
            } else {
                guard let normalized = PlistValue.normalized(value) else {
                    throw PrefsError.valuesNotPlistCompatible(invalidElements: [key])
                }
                accepted = normalized
            }
            if let problem = rules?.problem(forKey: key, value: accepted) { throw problem }
            return accepted
        }

        /// `updated`, vetted against `current` (the set it replaces, read only when needed) for the keys of `scope`,
        /// normalised; the values it adds or changes must pass their rules.
        /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)`` or ``PrefsError/valuesNotPlistCompatible(invalidElements:)``
        ///   naming every refused key, else the first (in key order) a rule refuses.
        func vet(_ updated: [String: Any], changing current: @autoclosure () -> [String: Any], scope: Scope) throws -> [String: Any] {
            let answered: [String: Any]
            switch scope {
            case .named: answered = updated
            case .changed:
                let changed = Set(PlistValue.changedKeys(current(), updated))
                answered = updated.filter { changed.contains($0.key) }
            }
            let refused = answered.keys.filter { !allowed.contains($0) }
            guard refused.isEmpty else { throw PrefsError.incorrectKeys(invalidElements: refused.sorted()) }
            let normalized = try PlistValue.normalizedSet(answered).get()
            switch scope {
            case .named:
                if let rules {
                    let changed = Set(PlistValue.changedKeys(current(), normalized))
                    if let problem = rules.problem(in: normalized.filter { changed.contains($0.key) }) { throw problem }
                }
                return normalized
            case .changed:
                if let problem = rules?.problem(in: normalized) { throw problem }
                return updated.merging(normalized) { _, vetted in vetted }
            }
        }
    }

    /// This set's ``Vetting``: its keys, `@Pref` declarations and ``validators``.
    /// - Parameters:
    ///   - oneKey: It vets one key outside a batch (keys looked along, not hashed).
    ///   - typed: It vets a ``Pref`` codec's output (see ``Vetting/takesTypedValues``).
    ///   - checkingTypes: `false` (for a migration) refuses only values that break a rule, not those the `@Pref` type
    ///     cannot read: they stay stored and are listed in ``problems`` rather than failing every later write.
    ///   - reportsLocks: `false` for a plan that must hold nothing of the instance (see ``Rules/locksOf``).
    func vetting(oneKey: Bool = false, typed: Bool = false, checkingTypes: Bool = true, reportsLocks: Bool = true) -> Vetting {
        let rules = Rules(declared: typed ? [:] : declaredRules, extra: validators, checksTypes: checkingTypes, locksOf: reportsLocks ? self : nil)
        // `nil`: no batch; `.some(nil)`: a batch that has not worked out its keys yet (read through optional chaining:
        // the batch's changes are not copied).
        let batchKeys = state.withLock { state -> Set<String>?? in state.pending != nil ? .some(state.pending?.allowedKeys) : nil }
        let allowed: Vetting.AllowedKeys
        if let known = batchKeys ?? nil {
            allowed = .set(known)
        } else if oneKey, batchKeys == nil {
            allowed = .list(keys)  // overridable: outside every lock
        } else {
            allowed = .set(allowedKeys())
        }
        return Vetting(allowed: allowed, rules: rules.isEmpty ? nil : rules, takesTypedValues: typed)
    }

    /// ``keys`` as a set, worked out once per batch, and kept while ``keys`` returns the same list (`==` finds a
    /// `static let` array's shared storage at once), so thousands of keys are not hashed again for every batch.
    private func allowedKeys() -> Set<String> {
        if let known = state.withLock({ $0.pending?.allowedKeys }) { return known }
        let whitelist = keys  // overridable: outside every lock
        let allowed: Set<String>
        if let memo = state.withLock({ $0.allowedKeys }), memo.list == whitelist {
            allowed = memo.set
        } else {
            allowed = Set(whitelist)
        }
        state.withLock { state in
            state.allowedKeys = (whitelist, allowed)
            if state.pending != nil { state.pending!.allowedKeys = allowed }
        }
        return allowed
    }

    /// `values`, as a write naming them all, vetted against the set as last read (``Vetting/vet(_:changing:scope:)``).
    func vetted(_ values: [String: Any]) throws -> [String: Any] {
        try vetting().vet(values, changing: (try? resolvedSet().values()) ?? [:], scope: .named)
    }

    /// The refusal of a value that breaks the rule of `key` (see ``Rules/refusal(key:reason:sharedSet:)``).
    func refusal(key: String, reason: String) -> PrefsError {
        Rules.refusal(key: key, reason: reason, sharedSet: cachedSet)
    }

    /// The checks of a set's keys.
    struct Rules {
        let declared: [String: any DeclaredPref]
        let extra: [String: PrefsValidator]
        /// Whether a value its `@Pref` type cannot read is refused, or only one that breaks a rule.
        let checksTypes: Bool
        /// The instance whose set's locks a refusal reports, looked up only when a value is refused; `nil`: none.
        let locksOf: PersistentPrefs?

        var isEmpty: Bool { declared.isEmpty && extra.isEmpty }

        /// The refusal of the first value (in key order) its declaration or rule refuses, or `nil`.
        func problem(in values: [String: Any]) -> PrefsError? {
            for key in values.keys.sorted() {
                if let problem = problem(forKey: key, value: values[key]!) { return problem }
            }
            return nil
        }

        /// The refusal of `value` under `key`, or `nil` when its declaration and rules allow it.
        func problem(forKey key: String, value: Any) -> PrefsError? {
            guard let reason = declared[key]?.problem(withStored: value, checkingType: checksTypes) ?? extra[key]?.problem(with: value) else { return nil }
            return Self.refusal(key: key, reason: reason, sharedSet: locksOf?.cachedSet)
        }

        /// The one place a refused value becomes an error: ``PrefsError/keyLocked(key:)`` when the set's layers lock
        /// `key` (a lock wins over a rule), else ``PrefsError/invalidValue(key:reason:)``. Looks at the layers as last
        /// read, loading nothing, so it may run under a store's lock.
        static func refusal(key: String, reason: String, sharedSet: SharedSet?) -> PrefsError {
            if let layers = sharedSet?.cell.withLock({ $0.state?.layers }), layers.isLocked(key) { return .keyLocked(key: key) }
            return .invalidValue(key: key, reason: reason)
        }
    }
}

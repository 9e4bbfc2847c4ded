import Foundation

// Vetting, the one road every write takes before anything is stored (a ``PersistentPrefs/Vetting``):
// setters, the subscript, `values`, `set(_:forKey:)`, batches, `update`, transactions,
// migrations, the styles and the harness. Keys must be in `keys` (the schema version key aside); values must be property-list
// values, normalised here once; a value must pass its key's `@Pref` declaration and
// `validators` rule; a key the system layers lock is refused as locked. A refused write names
// the offending keys and changes nothing.

extension PersistentPrefs {
    /// What a write of this set may store: the one road of vetting, worked out outside every
    /// lock (``keys`` and ``validators`` are overridable) and used where the write is made — at
    /// once for a setter, a batch or ``values``, under the store's lock for a transaction. A
    /// migration's is worked out when the migration runs, under the store's lock.
    struct Vetting {
        /// The keys a write may add or change (the library's schema version key always).
        enum AllowedKeys {
            /// ``PersistentPrefs/keys`` as returned: one look along it costs less than hashing all
            /// of it, for a write of one key.
            case list([String])
            /// ``PersistentPrefs/keys`` as a set, for a write of many keys or a batch.
            case set(Set<String>)
            /// Any key (a suite's keys in the key styles; a `Codable` type's migration, whose
            /// decoder judges the result).
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
            /// Every key it holds must be allowed and its value storable, as the caller named them
            /// all (``PersistentPrefs/values``, ``PersistentPrefs/addMissingValues(_:)``).
            case named
            /// Only the keys it adds or changes, as it starts from the set as stored (a
            /// transaction's result, a migration's): keys it removes pass, and values handed back
            /// as stored are not the writer's to answer for.
            case changed
        }

        let allowed: AllowedKeys
        let rules: Rules?
        /// Whether the values are a ``Pref`` codec's output for typed values that passed their
        /// declarations: already normalised, and only ``validators`` are left to check.
        var takesTypedValues = false

        /// Vetting that allows any key and checks only that values are storable.
        static var anyKey: Vetting { Vetting(allowed: .any, rules: nil) }

        /// `value` for `key`, vetted and normalised (`nil` removes the key, which must still be
        /// one of the set's).
        ///
        /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``,
        ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)``, or a rule's refusal
        ///   (``PrefsError/keyLocked(key:)``, ``PrefsError/invalidValue(key:reason:)``).
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

        /// `updated`, vetted against `current` (the set it replaces) for the keys of `scope`:
        /// those keys must be allowed and their values storable (normalised in the result), and
        /// the values it adds or changes must pass their rules.
        ///
        /// `current` is looked at only when it matters: for `.changed`, and for `.named` when
        /// there are rules (a set without rules, or a write refused for its keys or values,
        /// reads nothing).
        ///
        /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)`` or
        ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)`` naming every refused key,
        ///   else the refusal of the first value (in key order) a rule refuses.
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

    /// This set's ``Vetting``: its keys, its `@Pref` declarations and ``validators``.
    ///
    /// - Parameters:
    ///   - oneKey: Whether it vets one key outside a batch (its keys are then looked along, not
    ///     hashed).
    ///   - typed: Whether it vets a ``Pref`` codec's output (see ``Vetting/takesTypedValues``).
    ///   - checkingTypes: Whether a value its `@Pref` type cannot read is refused (`true`, for
    ///     writes), or only values that break a rule (`false`, for what a migration carries over:
    ///     such a value stays stored, reads as the default and is listed in ``problems``, rather
    ///     than failing the migration and every later write).
    ///   - reportsLocks: Whether a refusal of a key this instance's set locks reports the lock
    ///     (see ``Rules/refusal(key:reason:sharedSet:)``); `false` for a plan that must hold
    ///     nothing of the instance.
    func vetting(oneKey: Bool = false, typed: Bool = false, checkingTypes: Bool = true, reportsLocks: Bool = true) -> Vetting {
        let rules = Rules(declared: typed ? [:] : declaredRules, extra: validators, checksTypes: checkingTypes, locksOf: reportsLocks ? self : nil)
        // `nil`: no batch; `.some(nil)`: a batch that has not worked out its keys yet.
        let batchKeys = state.withLock { $0.pending.map(\.allowedKeys) }
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

    /// ``keys`` as a set; inside a batch worked out once, not once per change.
    ///
    /// The set made from a list is kept while ``keys`` returns that same list (a stored or
    /// `static let` array: `==` finds the shared storage at once): a class with thousands of keys
    /// would otherwise hash all of them again for every batch (see `Benchmarks/README.md`, kept
    /// constructs).
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

    /// `values`, as a write naming all of them replaces or fills this set: vetted against the
    /// set as this instance last read it (see ``Vetting/vet(_:changing:scope:)``).
    func vetted(_ values: [String: Any]) throws -> [String: Any] {
        try vetting().vet(values, changing: (try? resolvedSet().values()) ?? [:], scope: .named)
    }

    /// The refusal of a value that breaks the rule of `key` (`reason` says how): a locked key is
    /// reported as locked, whatever the value, since no value may change it.
    func refusal(key: String, reason: String) -> PrefsError {
        Rules.refusal(key: key, reason: reason, sharedSet: cachedSet)
    }

    /// The checks of a set's keys.
    struct Rules {
        let declared: [String: any DeclaredPref]
        let extra: [String: PrefsValidator]
        /// Whether a value its `@Pref` type cannot read is refused, or only one that breaks a rule.
        let checksTypes: Bool
        /// The instance whose set's locks a refusal reports (see ``refusal(key:reason:sharedSet:)``),
        /// its set looked up only when a value is refused; `nil`: none.
        let locksOf: PersistentPrefs?

        var isEmpty: Bool { declared.isEmpty && extra.isEmpty }

        /// The refusal of the first value (in key order) that its key's declaration or rule
        /// refuses, or `nil`.
        func problem(in values: [String: Any]) -> PrefsError? {
            for key in values.keys.sorted() {
                if let problem = problem(forKey: key, value: values[key]!) { return problem }
            }
            return nil
        }

        /// The refusal of `value` under `key`, or `nil` when its declaration and rules allow it
        /// (or it has none).
        func problem(forKey key: String, value: Any) -> PrefsError? {
            guard let reason = declared[key]?.problem(withStored: value, checkingType: checksTypes) ?? extra[key]?.problem(with: value) else { return nil }
            return Self.refusal(key: key, reason: reason, sharedSet: locksOf?.cachedSet)
        }

        /// The one place a refused value becomes an error: ``PrefsError/keyLocked(key:)`` when
        /// the set's system layers lock `key` (a lock is reported before a rule, on every write
        /// road), else ``PrefsError/invalidValue(key:reason:)``. Looks at the layers as last read,
        /// without loading anything, so it may run under a store's lock.
        static func refusal(key: String, reason: String, sharedSet: SharedSet?) -> PrefsError {
            if let layers = sharedSet?.loadedLayers, layers.isLocked(key) { return .keyLocked(key: key) }
            return .invalidValue(key: key, reason: reason)
        }
    }
}

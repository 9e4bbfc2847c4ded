import Foundation

// Vetting, the one road every write takes before anything is stored: setters, the subscript,
// `values`, `set(_:forKey:)`, batches, `update`, transactions, migrations, the styles and the
// harness. Keys must be in `keys` (the schema version key aside); values must be property-list
// values, normalised here once; a value must pass its key's `@Pref` declaration and
// `validators` rule; a key the system layers lock is refused as locked. A refused write names
// the offending keys and changes nothing.

extension PersistentPrefs {
    /// The vetted change that sets `value` under `key` (removes it, for `nil`).
    ///
    /// - Parameter isNormalized: Whether `value` is already vetted and normalised (a ``Pref``
    ///   codec's output), so only the key is checked.
    func change(setting value: Any?, forKey key: String, isNormalized: Bool = false) throws -> PrefsChange {
        try checkKey(key)
        guard let value else { return .set(key: key, value: nil) }
        if isNormalized {
            try checkRule(value, forKey: key, skippingDeclared: true)  // the typed value passed its @Pref's rule
            return .set(key: key, value: value)
        }
        guard let accepted = PlistValue.normalized(value) else {
            throw PrefsError.valuesNotPlistCompatible(invalidElements: [key])
        }
        try checkRule(accepted, forKey: key, skippingDeclared: false)
        return .set(key: key, value: accepted)
    }


    /// Checks that every key of `candidates` is one of ``keys`` (the library's schema version
    /// key aside).
    ///
    /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)`` naming every refused key.
    func checkKeys(_ candidates: some Collection<String>) throws {
        if candidates.count == 1, let key = candidates.first { return try checkKey(key) }
        let isAllowed = allowedKeys()
        let refused = candidates.filter { !isAllowed.contains($0) && $0 != Self.schemaVersionKey }
        guard refused.isEmpty else { throw PrefsError.incorrectKeys(invalidElements: refused.sorted()) }
    }

    /// ``checkKeys(_:)`` for one key (a property, the subscript): no array, no closure.
    func checkKey(_ key: String) throws {
        // `nil`: no batch; `.some(nil)`: a batch that has not worked out its set yet.
        let batchKeys = state.withLock { $0.pending.map(\.allowedKeys) }
        let isAllowed: Bool
        if let known = batchKeys ?? nil {
            isAllowed = known.contains(key)  // one look-up a key of a batch, one lock
        } else if batchKeys == nil {
            // Outside a batch: a look along ``keys`` costs less than hashing all of them into a
            // set.
            isAllowed = keys.contains(key)  // overridable: outside every lock
        } else {
            isAllowed = allowedKeys().contains(key)
        }
        guard isAllowed || key == Self.schemaVersionKey else { throw PrefsError.incorrectKeys(invalidElements: [key]) }
    }

    /// ``keys`` as a set; inside a batch worked out once, not once per change.
    ///
    /// The set made from a list is kept while ``keys`` returns that same list (a stored or
    /// `static let` array: `==` finds the shared storage at once): a class with thousands of keys
    /// would otherwise hash all of them again for every batch (see `Benchmarks/README.md`, kept
    /// constructs).
    func allowedKeys() -> Set<String> {
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

    /// Checks keys, then values; returns the normalised set.
    func vetted(_ values: [String: Any]) throws -> [String: Any] {
        try checkKeys(values.keys)
        let normalized = try PlistValue.normalizedSet(values).get()
        // Only what the write changes is checked: a value handed back as it is stored (`var v =
        // prefs.values; v["Name"] = "x"; prefs.values = v`) is not the caller's to answer for.
        let current = (try? resolvedSet().values()) ?? [:]
        let changed = Set(PlistValue.changedKeys(current, normalized))
        try checkRules(normalized.filter { changed.contains($0.key) })
        return normalized
    }

    /// `updated`, with the values of the keys it adds or changes against `current` vetted:
    /// those keys must be in `allowed`, their values property-list values that pass `rules`.
    /// Keys it removes pass, whatever they are.
    static func vetted(
        _ updated: [String: Any], changing current: [String: Any], allowed: Set<String>,
        rules: Rules?
    ) throws -> [String: Any] {
        let changed = PlistValue.changedKeys(current, updated)
        // Removing a key is always allowed: it only drops what an older version stored.
        let refused = changed.filter { updated[$0] != nil && !allowed.contains($0) && $0 != schemaVersionKey }
        guard refused.isEmpty else { throw PrefsError.incorrectKeys(invalidElements: refused.sorted()) }
        var result = updated
        let candidates = try PlistValue.normalizedSet(updated.filter { changed.contains($0.key) }).get()
        if let problem = rules?.problem(in: candidates) { throw problem }
        for (key, value) in candidates { result[key] = value }
        return result
    }

    // MARK: - Rules

    /// Checks values about to be written against their keys' declarations and rules: the
    /// `@Pref` declarations' (the declared type, an enum's raw values, `in:` ranges, `validate:`
    /// closures) and ``validators``.
    ///
    /// - Parameter values: The values, in stored form, by key.
    /// - Throws: For the first refused key (in key order): ``PrefsError/keyLocked(key:)`` when the
    ///   key is locked, else ``PrefsError/invalidValue(key:reason:)``.
    func checkRules(_ values: [String: Any]) throws {
        if let rules = ruleCheck(), let problem = rules.problem(in: values) { throw problem }
    }

    /// ``checkRules(_:)`` for one value, without building a dictionary (a `@Pref` setter in a
    /// batch runs it for every set).
    ///
    /// - Parameter skippingDeclared: Whether the `@Pref` declaration was already checked on the
    ///   typed value.
    func checkRule(_ value: Any, forKey key: String, skippingDeclared: Bool) throws {
        let rules = Rules(declared: skippingDeclared ? [:] : declaredRules, extra: validators, checksTypes: true, sharedSet: { [self] in cachedSet })
        if let problem = rules.problem(forKey: key, value: value) { throw problem }
    }

    /// The checks of this set, worked out outside every lock (``validators`` is overridable), so
    /// they can run later, under a store's lock; `nil` when there are none.
    ///
    /// - Parameter checkingTypes: Whether a value its `@Pref` type cannot read is refused
    ///   (`true`, for writes), or only values that break a rule (`false`, for what a migration
    ///   carries over: such a value stays stored, reads as the default and is listed in
    ///   ``problems``, rather than failing the migration and every later write).
    /// - Parameter locks: The set whose locks a refusal reports (see ``Rules/refusal(key:reason:sharedSet:)``);
    ///   this instance's by default.
    func ruleCheck(checkingTypes: Bool = true, locks: (() -> SharedSet?)? = nil) -> Rules? {
        let rules = Rules(declared: declaredRules, extra: validators, checksTypes: checkingTypes, sharedSet: locks ?? { [self] in cachedSet })
        return rules.isEmpty ? nil : rules
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
        /// The set written, for its locks (see ``refusal(key:reason:sharedSet:)``), looked up only
        /// when a value is refused; `nil` when the instance has not resolved it.
        let sharedSet: () -> SharedSet?

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
            return Self.refusal(key: key, reason: reason, sharedSet: sharedSet())
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

import Foundation

extension PersistentPrefs {
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
        let rules = Rules(declared: skippingDeclared ? [:] : declaredRules, extra: validators, checksTypes: true, domain: { [self] in cachedDomain })
        if let problem = rules.problem(forKey: key, value: value) { throw problem }
    }

    /// The checks of this set, worked out outside every lock (``validators`` is overridable), so
    /// they can run later, under a store's lock; `nil` when there are none.
    ///
    /// - Parameter checkingTypes: Whether a value its `@Pref` type cannot read is refused
    ///   (`true`, for writes), or only values that break a rule (`false`, for what a migration
    ///   carries over: such a value stays stored, reads as the default and is listed in
    ///   ``problems``, rather than failing the migration and every later write).
    /// - Parameter locks: The set whose locks a refusal reports (see ``Rules/refusal(key:reason:domain:)``);
    ///   this instance's by default.
    func ruleCheck(checkingTypes: Bool = true, locks: (() -> SharedSet?)? = nil) -> Rules? {
        let rules = Rules(declared: declaredRules, extra: validators, checksTypes: checkingTypes, domain: locks ?? { [self] in cachedDomain })
        return rules.isEmpty ? nil : rules
    }

    /// The refusal of a value that breaks the rule of `key` (`reason` says how): a locked key is
    /// reported as locked, whatever the value, since no value may change it.
    func refusal(key: String, reason: String) -> PrefsError {
        Rules.refusal(key: key, reason: reason, domain: cachedDomain)
    }

    /// The checks of a set's keys.
    struct Rules {
        let declared: [String: any DeclaredPref]
        let extra: [String: PrefsValidator]
        /// Whether a value its `@Pref` type cannot read is refused, or only one that breaks a rule.
        let checksTypes: Bool
        /// The set written, for its locks (see ``refusal(key:reason:domain:)``), looked up only
        /// when a value is refused; `nil` when the instance has not resolved it.
        let domain: () -> SharedSet?

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
            return Self.refusal(key: key, reason: reason, domain: domain())
        }

        /// The one place a refused value becomes an error: ``PrefsError/keyLocked(key:)`` when
        /// the set's system layers lock `key` (a lock is reported before a rule, on every write
        /// road), else ``PrefsError/invalidValue(key:reason:)``. Looks at the layers as last read,
        /// without loading anything, so it may run under a store's lock.
        static func refusal(key: String, reason: String, domain: SharedSet?) -> PrefsError {
            if let layers = domain?.loadedLayers, layers.isLocked(key) { return .keyLocked(key: key) }
            return .invalidValue(key: key, reason: reason)
        }
    }
}

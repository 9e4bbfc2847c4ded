import Foundation

extension PersistentPrefs {
    /// Checks values about to be written against their keys' rules: the `@Pref` declarations'
    /// own (`in:` ranges, `validate:` closures) and ``validators``.
    ///
    /// - Parameters:
    ///   - values: The values, in stored form, by key.
    ///   - skippingDeclared: Whether the `@Pref` rules were already checked on the typed value.
    /// - Throws: ``PrefsError/invalidValue(key:reason:)`` for the first refused key (in key order).
    func checkRules(_ values: [String: Any]) throws {
        let rules = Rules(declared: declaredRules, extra: validators)
        if !rules.isEmpty, let problem = rules.problem(in: values) { throw problem }
    }

    /// ``checkRules(_:)`` for one value, without building a dictionary (a `@Pref` setter in a
    /// batch runs it for every set).
    ///
    /// - Parameter skippingDeclared: Whether the `@Pref` rules were already checked on the typed value.
    func checkRule(_ value: Any, forKey key: String, skippingDeclared: Bool) throws {
        let rules = Rules(declared: skippingDeclared ? [:] : declaredRules, extra: validators)
        if let problem = rules.problem(forKey: key, value: value) { throw problem }
    }

    /// The rules of this set, worked out outside every lock (``validators`` is overridable), so
    /// they can be checked later, under a store's lock; `nil` when there are none.
    func ruleCheck() -> Rules? {
        let rules = Rules(declared: declaredRules, extra: validators)
        return rules.isEmpty ? nil : rules
    }

    /// The rules of a set's keys.
    struct Rules {
        let declared: [String: any DeclaredPref]
        let extra: [String: PrefsValidator]

        var isEmpty: Bool { declared.isEmpty && extra.isEmpty }

        /// The refusal of the first value (in key order) that breaks its key's rule, or `nil`.
        func problem(in values: [String: Any]) -> PrefsError? {
            for key in values.keys.sorted() {
                if let problem = problem(forKey: key, value: values[key]!) { return problem }
            }
            return nil
        }

        /// The refusal of `value` under `key`, or `nil` when its rules allow it (or it has none).
        func problem(forKey key: String, value: Any) -> PrefsError? {
            guard let reason = declared[key]?.problem(withStored: value) ?? extra[key]?.problem(with: value) else { return nil }
            return .invalidValue(key: key, reason: reason)
        }
    }
}

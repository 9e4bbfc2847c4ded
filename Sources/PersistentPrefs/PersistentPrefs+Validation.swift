import Foundation

/// A rule for the values of one key of a set, for keys without a `@Pref` (or in addition to one):
/// see ``PersistentPrefs/validators``.
///
/// ```swift
/// override var validators: [String: PrefsValidator] {
///     ["Volume": .range(0...11), "Name": PrefsValidator { ($0 as? String)?.isEmpty == false }]
/// }
/// ```
public struct PrefsValidator {
    private let check: (Any) -> String?

    /// A rule given by a closure: it gets the value in its stored form (`NSNumber`, `String`,
    /// `Date`, `Data`, arrays, dictionaries) and returns whether it is allowed, or throws an error
    /// whose description says why not. It must depend on the value only.
    ///
    /// - Parameter validate: Whether a value is allowed.
    public init(_ validate: @escaping (Any) throws -> Bool) {
        check = { value in Self.reason(validate, value, rule: "its rule") }
    }

    /// Why `validate` refuses `value` (`nil` when it allows it): the error it threw, or that the
    /// rule named `rule` refused it.
    static func reason<Value>(_ validate: (Value) throws -> Bool, _ value: Value, rule: String) -> String? {
        do {
            return try validate(value) ? nil : "\(PlistValue.describe(value)) was refused by \(rule)"
        } catch {
            return (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
        }
    }

    /// Values that read as `T` (with `as?`) and lie in `range`.
    ///
    /// - Parameter range: The values allowed.
    /// - Returns: The rule.
    public static func range<T: Comparable>(_ range: ClosedRange<T>) -> PrefsValidator {
        PrefsValidator(reason: { value in
            guard let typed = value as? T else { return "\(PlistValue.describe(value)) is not of type \(T.self)" }
            return range.contains(typed) ? nil : "\(typed) is outside \(range)"
        })
    }

    private init(reason: @escaping (Any) -> String?) {
        check = reason
    }

    /// Why `value` is not allowed, or `nil` when it is.
    func problem(with value: Any) -> String? {
        check(value)
    }
}

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

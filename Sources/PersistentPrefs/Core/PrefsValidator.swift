import Foundation

/// A rule for the values of one key of a set, with or without a `@Pref`: see ``PersistentPrefs/validators``.
///
/// ```swift
/// override var validators: [String: PrefsValidator] {
///     ["Volume": .range(0...11), "Name": PrefsValidator { ($0 as? String)?.isEmpty == false }]
/// }
/// ```
public struct PrefsValidator {
    private let check: (Any) -> String?

    /// A rule given by a closure: it gets the value in its stored form and returns whether it is allowed, or throws an
    /// error whose description says why not. It must depend on the value only.
    ///
    /// - Parameter validate: Whether a value is allowed.
    public init(_ validate: @escaping (Any) throws -> Bool) {
        check = { value in Self.reason(validate, value, rule: "its rule") }
    }

    /// Why `validate` refuses `value` (`nil`: it allows it): the error it threw, or that `rule` refused it.
    static func reason<Value>(_ validate: (Value) throws -> Bool, _ value: Value, rule: String) -> String? {
        do {
            return try validate(value) ? nil : "\(PlistValue.describe(value)) was refused by \(rule)"
        } catch {
            return (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
        }
    }

    /// Values that read as `T` (with `as?`) and lie in `range`; a refusal is worded as a `@Pref`'s `in:` range's.
    public static func range<T: Comparable>(_ range: ClosedRange<T>) -> PrefsValidator {
        PrefsValidator(reason: { value in
            guard let typed = value as? T else { return PrefsSchema.unreadable(value, as: "\(T.self)") }
            return PrefsSchema.problem(typed, outside: range)
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

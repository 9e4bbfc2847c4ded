import Foundation

/// What a stored `NSNumber` reads as under `as? Int`, `as? Double`, `as? Float` and `as? Bool`, worked out once when
/// the value is stored or loaded: those casts take a slow bridging path on Linux, so typed reads
/// (``PersistentPrefs/value(forKey:as:)``) use these answers, which agree with `as?` exactly (the same casts).
@usableFromInline
struct NumberCasts: Sendable {
    @usableFromInline let int: Int?
    @usableFromInline let double: Double?
    @usableFromInline let float: Float?
    @usableFromInline let bool: Bool?

    /// The answers for `value`, or `nil` when it is not a number.
    init?(_ value: Any) {
        // A cast of a Swift dictionary or array to `NSNumber` bridges the whole of it first.
        let kind = type(of: value)
        if kind == String.self || kind == [String: Any].self || kind == [Any].self || kind == Date.self || kind == Data.self {
            return nil
        }
        guard let number = value as? NSNumber else { return nil }
        let boxed = number as Any
        int = boxed as? Int
        double = boxed as? Double
        float = boxed as? Float
        bool = boxed as? Bool
    }
}

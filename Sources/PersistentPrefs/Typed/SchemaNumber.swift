import Foundation

/// A number of a schema, ordered exactly against another: integers of `Int64` and `UInt64` by
/// their values, a `Double` against an integer without rounding the integer, so a bound past
/// `Int64` never wraps and `2^53 + 1` is above `2^53`.
enum SchemaNumber {
    case signed(Int64)
    case unsigned(UInt64)
    case real(Double)

    /// The number, or `nil` for a boolean, a NaN or something that is not a number.
    init?(_ number: NSNumber) {
        switch NumberKind(number) {
        case .signed?: self = .signed(number.int64Value)
        case .unsigned?: self = .unsigned(number.uint64Value)
        case .real?:
            let double = number.doubleValue
            guard !double.isNaN else { return nil }
            self = .real(double)
        case .boolean?, nil: return nil
        }
    }

    /// How this number orders against `other`.
    func compare(_ other: SchemaNumber) -> ComparisonResult {
        switch (self, other) {
        case let (.signed(a), .signed(b)): return Self.order(a, b)
        case let (.unsigned(a), .unsigned(b)): return Self.order(a, b)
        case let (.signed(a), .unsigned(b)): return a < 0 ? .orderedAscending : Self.order(UInt64(a), b)
        case let (.unsigned(a), .signed(b)): return b < 0 ? .orderedDescending : Self.order(a, UInt64(b))
        case let (.real(a), .real(b)): return Self.order(a, b)
        case let (.real(a), integer): return Self.flipped(integer.compare(.real(a)))
        case let (.signed(a), .real(b)):
            // 2^63 is exact as a Double; below -2^63 or from 2^63 up, no Int64 is inside.
            if b >= 9_223_372_036_854_775_808.0 { return .orderedAscending }
            if b < -9_223_372_036_854_775_808.0 { return .orderedDescending }
            let whole = b.rounded(.down)
            let order = Self.order(a, Int64(whole))
            return order == .orderedSame && b != whole ? .orderedAscending : order
        case let (.unsigned(a), .real(b)):
            if b < 0 { return .orderedDescending }
            if b >= 18_446_744_073_709_551_616.0 { return .orderedAscending }
            let whole = b.rounded(.down)
            let order = Self.order(a, UInt64(whole))
            return order == .orderedSame && b != whole ? .orderedAscending : order
        }
    }

    private static func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a < b ? .orderedAscending : (a > b ? .orderedDescending : .orderedSame)
    }

    private static func flipped(_ order: ComparisonResult) -> ComparisonResult {
        switch order {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}

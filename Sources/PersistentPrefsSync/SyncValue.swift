import Foundation
import PersistentPrefs

/// A property-list value as a device file carries it: a `Sendable`, `Equatable` snapshot of what a set stores.
///
/// Kinds are kept as a property list keeps them: `1`, `1.0` and `true` differ. Two reals are equal when `==` says so, or
/// when both are NaN (a stored NaN is one value, so a merge never sees it change).
enum SyncValue: Sendable {
    case string(String)
    case integer(Int64)
    /// An integer above `Int64.max`.
    case unsigned(UInt64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([SyncValue])
    case dictionary([String: SyncValue])

    /// The value of a set's stored value (the library's kept shapes: `NSNumber`, `String`, `Date`, `Data`, arrays and
    /// `String`-keyed dictionaries of them), or `nil` for anything else.
    init?(plist value: Any) {
        switch value {
        case let number as NSNumber:
            switch NumberKind(number) {
            case .boolean: self = .boolean(number.boolValue)
            case .real: self = .real(number.doubleValue)
            case .unsigned where number.uint64Value > UInt64(Int64.max): self = .unsigned(number.uint64Value)
            case .unsigned, .signed: self = .integer(number.int64Value)
            case nil: return nil
            }
        case let string as String: self = .string(string)
        case let date as Date: self = .date(date)
        case let data as Data: self = .data(data)
        case let array as [Any]:
            var values: [SyncValue] = []
            values.reserveCapacity(array.count)
            for element in array {
                guard let value = SyncValue(plist: element) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case let dictionary as [String: Any]:
            var values: [String: SyncValue] = [:]
            for (key, element) in dictionary {
                guard let value = SyncValue(plist: element) else { return nil }
                values[key] = value
            }
            self = .dictionary(values)
        default:
            return nil
        }
    }

    /// The value in the library's kept shapes, as a set stores it and a property-list writer writes it.
    var plist: Any {
        switch self {
        case .string(let string): return string
        case .integer(let integer): return NSNumber(value: integer)
        case .unsigned(let integer): return NSNumber(value: integer)
        case .real(let real): return NSNumber(value: real)
        case .boolean(let bool): return NSNumber(value: bool)
        case .date(let date): return date
        case .data(let data): return data
        case .array(let values): return values.map(\.plist)
        case .dictionary(let values): return values.mapValues(\.plist)
        }
    }
}

extension SyncValue: Equatable {
    static func == (left: SyncValue, right: SyncValue) -> Bool {
        switch (left, right) {
        case let (.string(a), .string(b)): return a == b
        case let (.integer(a), .integer(b)): return a == b
        case let (.unsigned(a), .unsigned(b)): return a == b
        case let (.real(a), .real(b)): return a == b || (a.isNaN && b.isNaN)
        case let (.boolean(a), .boolean(b)): return a == b
        case let (.date(a), .date(b)): return a == b
        case let (.data(a), .data(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.dictionary(a), .dictionary(b)): return a == b
        default: return false
        }
    }
}

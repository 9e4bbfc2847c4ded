import Foundation

/// Vetting and normalisation of property-list values, in one place.
///
/// *Vetting* decides whether a value can be stored and read back: `String`, `Bool`, the
/// fixed-width integer types, `Float`, `Double`, `Date`, `Data`, their Foundation class
/// counterparts, and arrays / `String`-keyed dictionaries of those, nested. Everything else
/// is refused at any depth (`NSNull`, `Optional.none` inside a collection, URLs, UUIDs,
/// `Decimal`, structs, enums, other classes, dictionaries with non-`String` keys).
///
/// *Normalisation* turns an accepted value into the one shape the library keeps in memory
/// and hands to stores, the shape Apple's `UserDefaults` hands back: numbers and booleans
/// as `NSNumber` (so `as? Int`, `as? Double`, `as? Float`, `as? Bool` follow Foundation's
/// bridging rules on every platform), `String`, `Date`, `Data`, `[Any]` and `[String: Any]`.
/// `Optional.some` is unwrapped; `AnyHashable` keys become `String`.
enum PlistValue {
    /// The normalised form of `value`, or `nil` when it cannot be stored.
    static func normalized(_ value: Any) -> Any? {
        if type(of: value) is AnyObject.Type {
            return normalizedObject(value as AnyObject)
        }
        switch value {
        case let optional as any OptionalValue:
            return optional.wrappedValue.flatMap(normalized)
        case let string as String: return string
        case let bool as Bool: return NSNumber(value: bool)
        case let int as Int: return NSNumber(value: int)
        case let double as Double: return NSNumber(value: double)
        case let float as Float: return NSNumber(value: float)
        case let float as CGFloat: return NSNumber(value: Double(float))
        case let int as Int8: return NSNumber(value: int)
        case let int as Int16: return NSNumber(value: int)
        case let int as Int32: return NSNumber(value: int)
        case let int as Int64: return NSNumber(value: int)
        case let int as UInt: return NSNumber(value: int)
        case let int as UInt8: return NSNumber(value: int)
        case let int as UInt16: return NSNumber(value: int)
        case let int as UInt32: return NSNumber(value: int)
        case let int as UInt64: return NSNumber(value: int)
        case let date as Date: return date
        case let data as Data: return data
        case let array as [Any]: return normalizedArray(array)
        case let dictionary as [String: Any]: return normalizedDictionary(dictionary)
        case let dictionary as [AnyHashable: Any]:
            return stringKeyed(dictionary).flatMap(normalizedDictionary)
        default:
            return nil
        }
    }

    /// Normalises every value of a top-level set.
    ///
    /// - Returns: The normalised set, or the sorted keys whose values cannot be stored.
    static func normalizedSet(_ values: [String: Any]) -> Result<[String: Any], PersistentPrefs.PrefsError> {
        var result: [String: Any] = [:]
        result.reserveCapacity(values.count)
        var refused: [String] = []
        for (key, value) in values {
            if let normalized = normalized(value) {
                result[key] = normalized
            } else {
                refused.append(key)
            }
        }
        guard refused.isEmpty else { return .failure(.valuesNotPlistCompatible(invalidElements: refused.sorted())) }
        return .success(result)
    }

    /// `value` as a `[String: Any]` when it is a dictionary whose keys are all strings.
    static func stringKeyedDictionary(_ value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] { return dictionary }
        if let dictionary = value as? [AnyHashable: Any] { return stringKeyed(dictionary) }
        return nil
    }

    /// A short description of a stored value for error messages: `a String ("abc")`.
    static func describe(_ value: Any) -> String {
        let text = String(describing: value)
        let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
        switch value {
        case is String: return "a String (\"\(shown)\")"
        case let number as NSNumber: return "a number (\(number))"
        case is Date: return "a Date (\(shown))"
        case is Data: return "Data (\(shown))"
        case is [Any]: return "an array (\(shown))"
        case is [String: Any]: return "a dictionary (\(shown))"
        default: return "\(type(of: value)) (\(shown))"
        }
    }

    // MARK: - Private

    private static func normalizedObject(_ object: AnyObject) -> Any? {
        switch object {
        case is NSNull, is NSDecimalNumber:
            return nil
        case let number as NSNumber:
            return number
        case let string as NSString:
            return string as String
        case let date as NSDate:
            return date as Date
        case let data as NSData:
            return data as Data
        case let array as NSArray:
            return normalizedArray(array.map { $0 })
        case let dictionary as NSDictionary:
            var bridged: [AnyHashable: Any] = [:]
            for (key, value) in dictionary {
                guard let key = key as? AnyHashable else { return nil }
                bridged[key] = value
            }
            return stringKeyed(bridged).flatMap(normalizedDictionary)
        default:
            return nil
        }
    }

    private static func normalizedArray(_ array: [Any]) -> [Any]? {
        var result: [Any] = []
        result.reserveCapacity(array.count)
        for element in array {
            guard let normalized = normalized(element) else { return nil }
            result.append(normalized)
        }
        return result
    }

    private static func normalizedDictionary(_ dictionary: [String: Any]) -> [String: Any]? {
        var result: [String: Any] = [:]
        result.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            guard let normalized = normalized(value) else { return nil }
            result[key] = normalized
        }
        return result
    }

    private static func stringKeyed(_ dictionary: [AnyHashable: Any]) -> [String: Any]? {
        var result: [String: Any] = [:]
        result.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            guard let key = key.base as? String else { return nil }
            result[key] = value
        }
        return result
    }
}

// MARK: - Optional unwrapping

/// Lets `normalized(_:)` see through an `Optional` hidden in an `Any`.
protocol OptionalValue {
    /// The wrapped value, or `nil` for `.none`.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    var wrappedValue: Any? {
        switch self {
        case .some(let wrapped): return wrapped
        case .none: return nil
        }
    }
}

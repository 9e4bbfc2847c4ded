import Foundation

// MARK: - Reading a schema file

extension PrefsSchema {
    /// The largest schema file read: 16 MB (a 10,000-key schema is well under 2 MB).
    static let maximumFileSize = 1 << 24

    /// The deepest nesting of arrays and objects read (a default is at most 100 deep below the file's three levels).
    static let maximumDepth = 128

    /// The property-list kinds a key may have.
    static let kinds: Set<String> = ["boolean", "integer", "real", "string", "date", "data", "array", "dictionary"]

    /// Reads a schema file's bytes. Every field the format defines is checked: a file that is not one JSON object,
    /// has no `"format"` this code reads, or describes a key with a field of the wrong type, an unknown `"kind"`, or
    /// a range or choices that are not values of the key's kind (an integer bound outside `Int64` and `UInt64`, a
    /// string where a number belongs) is refused as a whole, so no tool checks values against a rule it misread.
    /// Undefined fields are ignored (a rule added later comes with a new `"format"`). A file without
    /// `"schemaVersion"` reads with ``recordsSchemaVersion`` `false`.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` (with an empty path) whose reason names
    ///   what is wrong, and the key.
    public init(jsonData data: Data) throws {
        func damaged(_ reason: String) -> PersistentPrefs.PrefsError { .corruptStore(path: "", reason: reason) }
        let parsed: Any
        do {
            parsed = try JSONText.value(of: data, maximumDepth: Self.maximumDepth)
        } catch JSONText.ReadError.tooDeep(let limit) {
            throw damaged("it nests arrays or objects more than \(limit) deep")
        } catch JSONText.ReadError.numberOutOfRange(let text, let offset) {
            throw damaged("it holds a number too large for a Double, \(text.count > 40 ? text.prefix(40) + "…" : text), at offset \(offset)")
        } catch JSONText.ReadError.notJSON(let offset) {
            throw damaged("it is not JSON (reading stopped at offset \(offset))")
        }
        guard let top = parsed as? [String: Any] else { throw damaged("it is \(Self.jsonType(parsed)), not a JSON object") }
        guard let rawFormat = top["format"] else { throw damaged("it has no \"format\"") }
        guard let format = Self.integer(rawFormat), format >= 1 else { throw damaged("its \"format\" is \(Self.jsonText(rawFormat)), not a format number") }
        guard format <= Self.formatVersion else {
            throw damaged("its format, \(format), is newer than this code reads (up to \(Self.formatVersion))")
        }
        guard let root = top["root"] as? String else { throw damaged("its \"root\" is missing or not a string") }
        guard let keyObjects = top["keys"] as? [String: Any] else { throw damaged("its \"keys\" is missing or not an object") }
        var className = ""
        if let raw = top["class"] {
            guard let text = raw as? String else { throw damaged("its \"class\" is \(Self.jsonType(raw)), not a string") }
            className = text
        }
        var version: Int?
        if let raw = top["schemaVersion"] {
            guard let number = Self.integer(raw), number >= 0 else {
                throw damaged("its \"schemaVersion\" is \(Self.jsonText(raw)), not a version number")
            }
            version = number
        }
        var keys: [Key] = []
        keys.reserveCapacity(keyObjects.count)
        for (name, value) in keyObjects {
            do {
                keys.append(try Self.key(name, from: value))
            } catch let reason as KeyProblem {
                throw damaged("the key \"\(name)\" \(reason.text)")
            }
        }
        self.init(root: root, className: className, schemaVersion: version ?? 0, recordsSchemaVersion: version != nil, keys: keys)
    }

    /// The schema in the file at `url` (such as ``PersistentPrefs/schemaFileURL``), or `nil` when there is none.
    /// Only a regular file of at most 16 MB is read (a FIFO or a device is refused without waiting on it).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` naming the file when it is not a schema
    ///   file this code reads (see ``init(jsonData:)``); ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when it
    ///   cannot be read.
    public static func load(from url: URL) throws -> PrefsSchema? {
        SchemaPublishing.waitForAll()  // a schema this process's writes publish is read as written
        let contents: AtomicFile.Contents?
        do {
            contents = try AtomicFile.readRegular(url.path, limit: maximumFileSize)
        } catch {
            throw error.prefsError
        }
        guard let contents else { return nil }
        do {
            return try PrefsSchema(jsonData: contents.data)
        } catch PersistentPrefs.PrefsError.corruptStore(_, let reason) {
            throw PersistentPrefs.PrefsError.corruptStore(path: url.path, reason: reason)
        }
    }

    // MARK: - Keys

    /// What is wrong with one key's description, worded to follow `the key "NAME"`.
    private struct KeyProblem: Error {
        let text: String
    }

    /// One key's description, checked field by field.
    private static func key(_ name: String, from value: Any) throws -> Key {
        guard let object = value as? [String: Any] else { throw KeyProblem(text: "is described by \(jsonType(value)), not an object") }
        func string(_ field: String) throws -> String? {
            guard let raw = object[field] else { return nil }
            guard let text = raw as? String else { throw KeyProblem(text: "has a \"\(field)\" that is \(jsonType(raw)), not a string") }
            return text
        }
        let type = try string("type")
        let summary = try string("summary")
        let kind = try string("kind")
        if let kind, !kinds.contains(kind) {
            throw KeyProblem(text: "has the kind \"\(kind)\", which this code does not know (the kinds are \(kinds.sorted().joined(separator: ", ")))")
        }
        var defaultValue: Any?
        if let raw = object["default"], !(raw is NSNull) {  // null: a default JSON cannot hold (NaN)
            guard let value = plist(raw, kind: kind) else { throw KeyProblem(text: "has a default, \(jsonText(raw)), that is not \(describe(kind))") }
            defaultValue = value
        }
        var minimum: Any?
        var maximum: Any?
        if let raw = object["range"] {
            guard let range = raw as? [String: Any] else { throw KeyProblem(text: "has a \"range\" that is \(jsonType(raw)), not an object") }
            func bound(_ field: String) throws -> Any? {
                guard let raw = range[field] else { return nil }
                guard let value = Self.bound(raw, kind: kind) else {
                    throw KeyProblem(text: "has a range \"\(field)\", \(jsonText(raw)), that is not \(describe(bound: kind))")
                }
                return value
            }
            minimum = try bound("min")
            maximum = try bound("max")
        }
        var choices: [Any]?
        if let raw = object["choices"] {
            guard let list = raw as? [Any] else { throw KeyProblem(text: "has \"choices\" that are \(jsonType(raw)), not an array") }
            choices = try list.map { element in
                guard let value = plist(element, kind: kind) else {
                    throw KeyProblem(text: "has a choice, \(jsonText(element)), that is not \(describe(kind))")
                }
                return value
            }
        }
        var isOptional = false
        if let raw = object["optional"] {
            guard let flag = raw as? NSNumber, NumberKind(flag) == .boolean else {
                throw KeyProblem(text: "has an \"optional\" that is \(jsonType(raw)), not true or false")
            }
            isOptional = flag.boolValue
        }
        var shape: Shape?
        if let raw = object["shape"] {
            guard let read = Shape(json: raw) else {
                throw KeyProblem(text: "has a \"shape\", \(jsonText(raw)), that is not a shape (kinds as strings, objects of members, [element] arrays)")
            }
            shape = read
        }
        var isShapeChecked: Bool?
        if let raw = object["shapeChecked"] {
            guard let flag = raw as? NSNumber, NumberKind(flag) == .boolean else {
                throw KeyProblem(text: "has a \"shapeChecked\" that is \(jsonType(raw)), not true or false")
            }
            isShapeChecked = flag.boolValue
        }
        return Key(
            name: name, type: type, kind: kind, defaultValue: defaultValue, minimum: minimum, maximum: maximum, choices: choices,
            summary: summary, isOptional: isOptional, shape: shape, isShapeChecked: isShapeChecked)
    }

    /// A JSON value as a stored value of `kind` (any property-list value when `kind` is `nil`), or `nil`.
    private static func plist(_ value: Any, kind: String?) -> Any? {
        switch kind {
        case "date"?: return (value as? String).flatMap(PlistDates.iso8601)
        case "data"?: return (value as? String).flatMap { Data(base64Encoded: $0) }
        case "boolean"?:
            guard let number = value as? NSNumber, NumberKind(number) == .boolean else { return nil }
            return NSNumber(value: number.boolValue)
        case "integer"?: return exactInteger(value)
        case "real"?: return finiteReal(value)
        case "string"?: return value as? String
        case "array"?: return (value as? [Any]).flatMap { PlistValue.normalized($0) }
        case "dictionary"?: return (value as? [String: Any]).flatMap { PlistValue.normalized($0) }
        default:
            guard let number = value as? NSNumber else { return PlistValue.normalized(value) }
            if NumberKind(number) == .boolean { return NSNumber(value: number.boolValue) }
            return exactInteger(number) ?? finiteReal(number)
        }
    }

    /// A range bound of a key of `kind`: an integer, a finite number, a string or a date; `nil` for anything else,
    /// and for a kind that has no order.
    private static func bound(_ value: Any, kind: String?) -> Any? {
        switch kind {
        case "integer"?, "real"?, "string"?, "date"?: return plist(value, kind: kind)
        case nil:
            if value is String { return value }
            return exactInteger(value) ?? finiteReal(value)
        default: return nil
        }
    }

    /// What `kind`'s values are, for a message.
    private static func describe(_ kind: String?) -> String {
        switch kind {
        case "integer"?: return "an integer between \(Int64.min) and \(UInt64.max)"
        case "real"?: return "a number"
        case "date"?: return "an ISO 8601 date"
        case "data"?: return "Base64 data"
        case let kind?: return "\(article(kind)) \(kind)"
        case nil: return "a property-list value"
        }
    }

    /// What a bound of a key of `kind` must be, for a message.
    private static func describe(bound kind: String?) -> String {
        switch kind {
        case "integer"?, "real"?, "string"?, "date"?: return describe(kind)
        case let kind?: return "a bound a value of kind \(kind) can have (only numbers, strings and dates are ordered)"
        case nil: return "a number or a string"
        }
    }

    /// A JSON number that is an integer `Int64` or `UInt64` holds, exactly, as an `NSNumber` of that type; `nil` for
    /// anything else (`5.5`, `9.3e18`, `1e300`, a boolean).
    private static func exactInteger(_ value: Any) -> NSNumber? {
        guard let number = value as? NSNumber else { return nil }
        switch NumberKind(number) {
        case .signed?: return NSNumber(value: number.int64Value)
        case .unsigned?: return NSNumber(value: number.uint64Value)
        // A number written with a fraction or an exponent (`5.0`, `1e3`) is a real, as its text says; an integer
        // past `UInt64` is read as one.
        case .real?, .boolean?, nil: return nil
        }
    }

    /// A JSON number as a finite `Double`; `nil` for a boolean or anything else.
    private static func finiteReal(_ value: Any) -> NSNumber? {
        guard let number = value as? NSNumber, let kind = NumberKind(number), kind != .boolean else { return nil }
        let double = number.doubleValue
        return double.isFinite ? NSNumber(value: double) : nil
    }

    /// A JSON integer as an `Int` (`format`, `schemaVersion`); `nil` for anything else.
    private static func integer(_ value: Any) -> Int? {
        guard let number = exactInteger(value), NumberKind(number) == .signed else { return nil }
        return Int(exactly: number.int64Value)
    }

    /// The JSON type of a value, for a message: `"a string"`, `"an array"`, ….
    private static func jsonType(_ value: Any) -> String {
        switch value {
        case is String: return "a string"
        case let number as NSNumber: return NumberKind(number) == .boolean ? "a boolean" : "a number"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        case is NSNull: return "null"
        default: return "\(type(of: value))"
        }
    }

    /// A JSON value, for a message: a scalar as it is (strings quoted), else its JSON type.
    private static func jsonText(_ value: Any) -> String {
        switch value {
        case let text as String: return "\"\(text.count > 40 ? String(text.prefix(40)) + "…" : text)\""
        case let number as NSNumber: return NumberKind(number) == .boolean ? (number.boolValue ? "true" : "false") : number.stringValue
        default: return jsonType(value)
        }
    }
}

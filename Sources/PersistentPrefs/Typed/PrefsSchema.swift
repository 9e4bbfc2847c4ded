import Foundation

/// What a preference set holds, key by key: type, default, range or choices, summary and lock state.
/// ``PersistentPrefs/schema`` describes a subclass; a set's first write in a process that finds the file different
/// also writes it beside the data as JSON (``PersistentPrefs/schemaFileURL``; reads never write it), so tools can
/// work on any program's sets without linking the program (<doc:LayersAndLockdown>).
///
/// ```swift
/// final class AudioPrefs: PersistentPrefs {
///     @Pref("Volume", in: 0...11, summary: "Output volume") var volume = 5
/// }
/// let volume = AudioPrefs().schema["Volume"]!   // type "Int", kind "integer", minimum 0, summary "Output volume"
/// ```
///
/// The file (`<set file>.schema.json` beside a ``PlistFileStore`` set, `<suite>.schemas/<root file>.json` beside a
/// suite):
///
/// ```json
/// { "format": 1, "root": "AudioPrefs", "class": "AudioPrefs", "schemaVersion": 0,
///   "keys": { "Volume": { "type": "Int", "kind": "integer", "default": 5,
///                         "range": { "min": 0, "max": 11 }, "summary": "Output volume" } } }
/// ```
///
/// An optional key has its wrapped type's kind and `"optional": true`. A `Codable` value has its default's
/// structure in `"shape"` (a kind as a string, a dictionary as an object of its members' shapes, an array as
/// `[element shape]`, `[]`: unknown) and `"shapeChecked"` (see ``Key/isShapeChecked``):
/// `{ "type": "Window", "kind": "dictionary", "shape": { "w": "real", "h": "real" }, "shapeChecked": true }`.
/// Readers ignore fields they do not know. Dates are ISO 8601 strings and data Base64. A date default made while
/// the program runs (`= Date()`) is left out, so the file stays the same from run to run; lock state is not in the
/// file (it belongs to the machine's system layers, which a tool reads itself).
public struct PrefsSchema: @unchecked Sendable {  // immutable property-list values
    /// One key of a set.
    public struct Key: @unchecked Sendable {  // immutable property-list values
        /// The key in the set.
        public let name: String
        /// The declared Swift type (`"Int"`, `"[String]"`, `"Theme"`), or `nil` for a key without a `@Pref`.
        public let type: String?
        /// The property-list type it is stored as (see ``PrefsSchema/kind(of:)``); `nil` when unknown (a key without
        /// a `@Pref`, an optional `Codable` value without a default).
        public let kind: String?
        /// Whether the key is declared optional (`String?`): removing it gives `nil` rather than a default.
        public let isOptional: Bool
        /// The default, as stored (`nil`: none).
        public let defaultValue: Any?
        /// The smallest value allowed, as stored (the start of an `in:` range), or `nil`.
        public let minimum: Any?
        /// The largest value allowed, as stored (the end of an `in:` range), or `nil`.
        public let maximum: Any?
        /// The values allowed, as stored (the raw values of a `CaseIterable` enum), or `nil`.
        public let choices: [Any]?
        /// One line on what the value is for (`@Pref(…, summary:)`), or `nil`.
        public let summary: String?
        /// Whether an administrator locked the key (see ``PersistentPrefs/isLocked(_:)``).
        public let isLocked: Bool
        /// For a `Codable` value (stored through `PropertyListEncoder`): the structure its default is stored as (each
        /// member's name and kind, nested); `nil` without a default or for a key that is not `Codable`.
        public let shape: Shape?
        /// For a `Codable` value: whether a stored value the program reads back is exactly one of ``shape`` (`true`),
        /// or the library could not tell (`false`: a member that is `nil` or may be missing, an empty array, a type
        /// that decodes more leniently); `nil` when not `Codable`. ``problem(with:)`` checks the shape only if `true`.
        public let isShapeChecked: Bool?

        /// A key as a schema describes it; each parameter sets the property of that name.
        public init(
            name: String, type: String?, kind: String?, defaultValue: Any? = nil, minimum: Any? = nil, maximum: Any? = nil,
            choices: [Any]? = nil, summary: String? = nil, isLocked: Bool = false, isOptional: Bool = false, shape: Shape? = nil,
            isShapeChecked: Bool? = nil
        ) {
            self.shape = shape
            self.isShapeChecked = isShapeChecked
            self.name = name
            self.type = type
            self.kind = kind
            self.isOptional = isOptional
            self.defaultValue = defaultValue
            self.minimum = minimum
            self.maximum = maximum
            self.choices = choices
            self.summary = summary
            self.isLocked = isLocked
        }

        /// Why the property-list `value` (as stored) does not fit this key (another kind, not of a checked ``shape``,
        /// outside the range, not one of the choices), as a short reason; `nil` when it fits. Locks are not checked.
        public func problem(with value: Any) -> String? {
            if let kind, let found = PrefsSchema.kind(of: value), found != kind, !(kind == "real" && found == "integer") {
                return PrefsSchema.wrongKind(value, found: found, expected: kind)
            }
            if isShapeChecked == true, let shape, let reason = shape.problem(with: value) {
                return "\(PrefsSchema.text(value)) is not \(type ?? "of the key's type") as its program reads one back: \(reason) (the shape is \(shape))"
            }
            if let choices, choices.isEmpty {
                return "the schema lists no value that \(name) may hold (its choices are empty)"
            }
            if let choices, !choices.contains(where: { PlistValue.same($0, value) }) {
                return PrefsSchema.notAChoice(value, choices)
            }
            return PrefsSchema.rangeProblem(value, minimum: minimum, maximum: maximum)
        }

        /// The key with its lock state.
        func locked(_ locked: Bool) -> Key {
            Key(
                name: name, type: type, kind: kind, defaultValue: defaultValue, minimum: minimum, maximum: maximum, choices: choices,
                summary: summary, isLocked: locked, isOptional: isOptional, shape: shape, isShapeChecked: isShapeChecked)
        }
    }

    /// The root key of the set described.
    public let root: String
    /// The subclass that described it.
    public let className: String
    /// The subclass's ``PersistentPrefs/schemaVersion``: the version of the sets described (0 when
    /// ``recordsSchemaVersion`` is `false`).
    public let schemaVersion: Int
    /// Whether ``schemaVersion`` is known: `false` for a schema file without `"schemaVersion"` (written by hand or
    /// another tool; the library always records it), which says nothing about the sets' version.
    public let recordsSchemaVersion: Bool
    /// The keys, sorted by name.
    public let keys: [Key]

    /// A schema; each parameter sets the property of that name (`keys` sorted by name).
    public init(root: String, className: String, schemaVersion: Int, recordsSchemaVersion: Bool = true, keys: [Key]) {
        self.root = root
        self.className = className
        self.schemaVersion = recordsSchemaVersion ? schemaVersion : 0
        self.recordsSchemaVersion = recordsSchemaVersion
        // Often sorted already (a schema made from another's keys), and then not sorted again.
        let ordered = keys.indices.dropFirst().allSatisfy { keys[$0 - 1].name < keys[$0].name }  // no key copied
        if ordered {
            self.keys = keys
        } else {
            // The indices sorted, then the keys put in their order: cheaper than sorting the large structs.
            let order = keys.indices.sorted { keys[$0].name < keys[$1].name }
            self.keys = order.map { keys[$0] }
        }
    }

    /// The key named `name`, or `nil`.
    public subscript(name: String) -> Key? {
        keys.first { $0.name == name }
    }

    // MARK: - The file

    /// The version of the file format written in `"format"`.
    public static let formatVersion = 1

    /// The schema as the library writes it to the file: JSON, keys sorted, two-space indent.
    public var jsonData: Data {
        var keyObjects: [(String, Any)] = []
        keyObjects.reserveCapacity(keys.count)
        for key in keys {
            var object: [String: Any] = [:]
            if let type = key.type { object["type"] = type }
            if let kind = key.kind { object["kind"] = kind }
            if let value = key.defaultValue { object["default"] = Self.json(value) }
            if key.minimum != nil || key.maximum != nil {
                var range: [String: Any] = [:]
                if let minimum = key.minimum { range["min"] = Self.json(minimum) }
                if let maximum = key.maximum { range["max"] = Self.json(maximum) }
                object["range"] = range
            }
            if let choices = key.choices { object["choices"] = choices.map(Self.json) }
            if let summary = key.summary { object["summary"] = summary }
            if key.isOptional { object["optional"] = true }
            if let shape = key.shape { object["shape"] = shape.json }
            if let checked = key.isShapeChecked { object["shapeChecked"] = checked }
            keyObjects.append((key.name, object))
        }
        // The keys in their (sorted) order, of two of one name the last, as a dictionary keeps; no dictionary is
        // built only to be sorted again.
        var unique: [(String, Any)] = []
        unique.reserveCapacity(keyObjects.count)
        for entry in keyObjects {
            if unique.last?.0 == entry.0 { unique[unique.count - 1] = entry } else { unique.append(entry) }
        }
        let top: [String: Any] = [
            "format": Self.formatVersion, "root": root, "class": className, "schemaVersion": schemaVersion, "keys": JSONText.Object(entries: unique),
        ]
        return JSONText.document(top)
    }

    /// Where the library keeps the schema of the set under `root` in `store`, or `nil` for a store that keeps none
    /// (see ``PlistFileStore/schemaFileURL(forRoot:)`` and ``UserDefaultsStore/schemaFileURL(forRoot:)``).
    public static func fileURL(in store: any PrefsStore, root: String) -> URL? {
        switch store {
        case let files as PlistFileStore: return files.schemaFileURL(forRoot: root)
        case let defaults as UserDefaultsStore: return defaults.schemaFileURL(forRoot: root)
        default: return nil
        }
    }

    // MARK: - Values

    /// The property-list type of a stored value: `"boolean"`, `"integer"`, `"real"`, `"string"`, `"date"`, `"data"`,
    /// `"array"` or `"dictionary"`; `nil` for anything else.
    public static func kind(of value: Any) -> String? {
        switch PlistValue.normalized(value, for: .loading) {
        case is String: return "string"
        case is Date: return "date"
        case is Data: return "data"
        case let number as NSNumber:
            switch NumberKind(number) {
            case .boolean: return "boolean"
            case .real: return "real"
            case .unsigned, .signed, nil: return "integer"
            }
        case is [Any]: return "array"
        case is [String: Any]: return "dictionary"
        default: return nil
        }
    }

    /// A value in a message: strings quoted, numbers and dates as they are.
    static func text(_ value: Any) -> String {
        switch PlistValue.normalized(value, for: .loading) {
        case let string as String: return "\"\(string)\""
        case let number as NSNumber where kind(of: number) == "boolean": return number.boolValue ? "true" : "false"
        case let number as NSNumber: return number.stringValue
        case let date as Date: return "\(date)"
        default: return PlistValue.describe(value)
        }
    }

    // MARK: - Reasons
    // Shared by ``Key/problem(with:)`` (the harness, `defaults write`) and `@Pref` checks, so one refusal reads the
    // same wherever it is made. Values are in stored form.

    /// "`value` is a string, not an integer".
    static func wrongKind(_ value: Any, found: String, expected: String) -> String {
        "\(text(value)) is \(article(found)) \(found), not \(article(expected)) \(expected)"
    }

    /// "`value` cannot be read as `type`", for a value of the right kind the type still cannot read back.
    static func unreadable(_ value: Any, as type: String) -> String {
        "\(text(value)) cannot be read as \(type)"
    }

    /// "`value` is not one of `choices`".
    static func notAChoice(_ value: Any, _ choices: [Any]) -> String {
        "\(text(value)) is not one of \(choices.map(text).joined(separator: ", "))"
    }

    /// Why `value` lies outside the range from `minimum` to `maximum` (either may be absent), or `nil` inside it. A
    /// bound the value cannot be ordered against (another kind, NaN) refuses it: the check fails closed.
    static func rangeProblem(_ value: Any, minimum: Any?, maximum: Any?) -> String? {
        var outside = false
        for (bound, side, beyond) in [(minimum, "minimum", ComparisonResult.orderedAscending), (maximum, "maximum", .orderedDescending)] {
            guard let bound else { continue }
            switch compare(value, bound) {
            case nil: return "\(text(value)) cannot be compared with the \(side), \(text(bound))"
            case beyond?: outside = true
            default: continue
            }
        }
        return outside ? outsideRange(value, minimum: minimum, maximum: maximum) : nil
    }

    /// Why `value` lies outside `range` (an `in:` range or ``PrefsValidator/range(_:)``), in the words of
    /// ``outsideRange(_:minimum:maximum:)`` with the values as stored; `nil` inside it.
    static func problem<T: Comparable>(_ value: T, outside range: ClosedRange<T>) -> String? {
        guard !range.contains(value) else { return nil }
        let stored = { (value: T) -> Any in PlistValue.normalized(value) ?? value }
        return outsideRange(stored(value), minimum: stored(range.lowerBound), maximum: stored(range.upperBound))
    }

    /// "`value` is outside the range `minimum`...`maximum`" (or below the minimum / above the maximum of a range
    /// with one end), for a value known to be outside it.
    static func outsideRange(_ value: Any, minimum: Any?, maximum: Any?) -> String {
        switch (minimum, maximum) {
        case let (minimum?, maximum?): return "\(text(value)) is outside the range \(text(minimum))...\(text(maximum))"
        case let (minimum?, nil): return "\(text(value)) is below the minimum, \(text(minimum))"
        case let (nil, maximum?): return "\(text(value)) is above the maximum, \(text(maximum))"
        case (nil, nil): return "\(text(value)) is outside its range"
        }
    }

    /// "a" or "an", for a kind's name.
    static func article(_ kind: String) -> String {
        kind.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    }

    /// Orders two numbers (exactly, whatever their types: ``SchemaNumber``), two strings or two dates; `nil` for
    /// anything else (a boolean, a NaN, values of two kinds).
    static func compare(_ lhs: Any, _ rhs: Any) -> ComparisonResult? {
        switch (PlistValue.normalized(lhs, for: .loading), PlistValue.normalized(rhs, for: .loading)) {
        case let (left as NSNumber, right as NSNumber):
            guard let left = SchemaNumber(left), let right = SchemaNumber(right) else { return nil }
            return left.compare(right)
        case let (left as String, right as String): return left == right ? .orderedSame : (left < right ? .orderedAscending : .orderedDescending)
        case let (left as Date, right as Date): return left.compare(right)
        default: return nil
        }
    }

    /// A stored value as JSON: dates as ISO 8601, data as Base64, numbers and booleans as they are.
    private static func json(_ value: Any) -> Any {
        switch PlistValue.normalized(value, for: .loading) {
        case let date as Date:
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        case let data as Data: return data.base64EncodedString()
        case let array as [Any]: return array.map(json)
        case let dictionary as [String: Any]: return dictionary.mapValues(json)
        case let number as NSNumber where kind(of: number) == "boolean": return number.boolValue
        case let other?: return other
        case nil: return NSNull()
        }
    }
}

// MARK: - A subclass's schema

extension PersistentPrefs {
    /// This set's schema: each key of ``keys`` with its declared type, default, range or choices and summary (from
    /// its `@Pref`), and whether it is locked now (see ``isLocked(_:)``).
    ///
    /// ```swift
    /// for key in prefs.schema.keys { print(key.name, key.type ?? "?", key.summary ?? "") }
    /// ```
    public var schema: PrefsSchema {
        let described = describedSchema
        let layers = (try? resolvedSet().layers()) ?? .empty
        let keys = described.keys.map { $0.locked(layers.isLocked($0.name)) }
        return PrefsSchema(root: key, className: described.className, schemaVersion: described.schemaVersion, keys: keys)
    }

    /// Where the library keeps this set's schema file (see ``PrefsSchema``), or `nil` when its store keeps none
    /// (``InMemoryStore``, `UserDefaults` on Apple platforms).
    ///
    /// The schema this process's writes publish is written by the time it answers.
    public var schemaFileURL: URL? {
        SchemaPublishing.waitForAll()
        return (try? resolvedSet())?.store.schemaFile(root: key)
    }

    /// The schema of this class (root key left empty, keys unlocked), made once per class.
    var describedSchema: PrefsSchema {
        let type = ObjectIdentifier(Swift.type(of: self))
        if let known = describedSchemas.withLock({ $0[type] }) { return known }
        // The `@Pref` declarations (the first of a key), usually few; every other name is hashed by no one: the names
        // are sorted as strings once, and a repeated name is the one before it.
        var declared: [String: PrefsSchema.Key] = [:]
        for pref in declaredPrefs() where declared[pref.key] == nil { declared[pref.key] = pref.schemaKey }
        var names = keys
        names.append(contentsOf: declared.keys)
        names.sort()
        var described: [PrefsSchema.Key] = []
        described.reserveCapacity(names.count)
        for (index, name) in names.enumerated() where index == 0 || names[index - 1] != name {
            described.append((declared.isEmpty ? nil : declared[name]) ?? PrefsSchema.Key(name: name, type: nil, kind: nil))
        }
        let schema = PrefsSchema(root: "", className: "\(Swift.type(of: self))", schemaVersion: Swift.type(of: self).schemaVersion, keys: described)
        describedSchemas.withLock { $0[type] = schema }
        return schema
    }

    /// What a write of this instance publishes: the class's schema, made when first needed; `nil` when the class
    /// publishes none.
    var schemaPublication: SchemaPublication? {
        guard Swift.type(of: self).publishesSchema else { return nil }
        return SchemaPublication(classID: ObjectIdentifier(Swift.type(of: self))) { [self] in
            let described = describedSchema
            return described.keys.isEmpty ? nil : described  // a class without keys has no schema to give
        }
    }
}

extension PrefsSchema.Key {
    /// The key as its schema file records it: without a default that is a date made while this process runs (a
    /// `Date()` default), which would differ in every process and rewrite the file each time.
    var published: PrefsSchema.Key {
        guard let date = defaultValue as? Date, let started = ProcessEnvironment.startDate, date >= started, date <= Date() else { return self }
        return PrefsSchema.Key(
            name: name, type: type, kind: kind, defaultValue: nil, minimum: minimum, maximum: maximum, choices: choices, summary: summary,
            isLocked: isLocked, isOptional: isOptional, shape: shape, isShapeChecked: isShapeChecked)
    }
}

/// The schema of each class, made once by reflection.
private let describedSchemas = Locked<[ObjectIdentifier: PrefsSchema]>([:])

/// A class's schema, to be written beside a set by its writes (see ``SetStorage/schemaFile(root:)``).
struct SchemaPublication {
    let classID: ObjectIdentifier
    /// The class's schema (root key left empty), made on the writer's thread: it reads the instance's declarations.
    /// `nil`: nothing to publish.
    let schema: () -> PrefsSchema?
}

extension SetStorage {
    /// Writes `schema` (of the class `classID`) for `root` beside the set unless this process already did, or the file
    /// already says the same: on one of the library's threads, so the write that publishes it does not wait for the
    /// file and its `fsync`s (``SchemaPublishing/waitForAll()`` does). Never throws: a schema that cannot be written is
    /// left out (the set's own write succeeded). `inline`: written before it returns (see ``SchemaPublishing/run(inline:_:)``).
    func publish(_ schema: PrefsSchema, classID: ObjectIdentifier, root: String, inline: Bool) {
        guard let url = schemaFile(root: root) else { return }
        let token = PublishedSchema(path: url.path, classID: classID)
        guard publishedSchemas.withLock({ $0.insert(token).inserted }) else { return }  // asked for once per process
        SchemaPublishing.run(inline: inline) {
            let keys = schema.keys.map(\.published)
            let data = PrefsSchema(root: root, className: schema.className, schemaVersion: schema.schemaVersion, keys: keys).jsonData
            let existing = (try? AtomicFile.readRegular(url.path, following: false, limit: 1 << 24)) ?? nil
            if existing?.data != data { _ = try? AtomicFile.write(data, to: url) }
        }
    }
}

private struct PublishedSchema: Hashable {
    let path: String
    let classID: ObjectIdentifier
}

/// The schema files this process wrote or found up to date, by class.
private let publishedSchemas = Locked<Set<PublishedSchema>>([])

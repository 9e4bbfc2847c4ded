import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// The schema verbs (`describe`, `range`, `writable`, `list-keys`, `schema-file`) and the
/// schema's rules for values, modelled on `gsettings`: they work on any set whose program wrote
/// its schema beside it (see ``PersistentPrefs/PrefsSchema`` and ``HarnessSet``), and on the
/// sample's own set without one.
enum SchemaCommands {
    /// The sample's own schema for the set under `root`.
    static func sampleSchema(_ root: String) -> PrefsSchema {
        SamplePrefs(key: root, store: InMemoryStore()).schema
    }

    /// Whether `schema`, read from a set's schema file, is `sample`, the one the sample itself
    /// writes for the set's root key (``sampleSchema(_:)``): the same class, version, keys,
    /// types, kinds, rules and summaries, not just the same class name (which any program's
    /// schema file may claim). Defaults are left out: the sample's date default is the moment it
    /// is made.
    static func isSampleSchema(_ schema: PrefsSchema, sample: PrefsSchema) -> Bool {
        func shape(_ schema: PrefsSchema) -> Data {
            let keys = schema.keys.map {
                PrefsSchema.Key(name: $0.name, type: $0.type, kind: $0.kind, minimum: $0.minimum, maximum: $0.maximum, choices: $0.choices, summary: $0.summary)
            }
            return PrefsSchema(root: schema.root, className: schema.className, schemaVersion: schema.schemaVersion, keys: keys).jsonData
        }
        return schema.recordsSchemaVersion && shape(schema) == shape(sample)
    }

    /// The schema in the file at `url`, or `nil` when there is no file. A file that is there but
    /// cannot be used — not a schema file, damaged, a rule this code cannot read, not a regular
    /// file, too large, a link to nothing — is a refusal naming it: a set whose schema cannot be
    /// read is never written unchecked.
    ///
    /// - Throws: ``HarnessError/refused(_:)``.
    static func load(_ url: URL) throws -> PrefsSchema? {
        do {
            if let schema = try PrefsSchema.load(from: url) { return schema }
            // No file, or a link to nothing. (A file another process published since the load
            // is taken as not there yet, as the load found it: a program publishes its schema
            // after its first write.)
            var info = stat()
            if lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK, stat(url.path, &info) != 0 {
                throw HarnessError.refused("The schema file \(url.path) cannot be used: it is a link to nothing; nothing was changed")
            }
            return nil
        } catch let error as HarnessError {
            throw error
        } catch PersistentPrefs.PrefsError.corruptStore(_, let reason), PersistentPrefs.PrefsError.ioError(_, let reason) {
            throw HarnessError.refused("The schema file \(url.path) cannot be used: \(reason); nothing was changed")
        } catch {
            throw HarnessError.refused("The schema file \(url.path) cannot be used: \((error as NSError).localizedDescription); nothing was changed")
        }
    }


    /// The message for a value the schema refuses: the library's own
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/invalidValue(key:reason:)`` sentence, with
    /// `reason` from ``PersistentPrefs/PrefsSchema/Key/problem(with:)``; for a value of another
    /// type, followed by how to give it with `defaults write`.
    static func refusal(of value: Any, for key: PrefsSchema.Key, problem: String) -> String {
        let sentence = PersistentPrefs.PrefsError.invalidValue(key: key.name, reason: problem).description
        if let kind = key.kind, let found = PrefsSchema.kind(of: value), found != kind, !(kind == "real" && found == "integer"),
            let flag = flag(for: kind)
        {
            return "\(sentence) Give it as \(key.type ?? kind) (defaults write: -\(flag))."
        }
        return sentence
    }

    /// Refuses a change of a locked key before any schema check: the first key (sorted) whose
    /// value differs between `before` and `after` and that `isLocked` says is locked, with the
    /// library's ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)``.
    static func checkLocks(from before: [String: Any], to after: [String: Any], isLocked: (String) -> Bool) throws {
        for name in changedKeys(before, after) where name != PersistentPrefs.schemaVersionKey && isLocked(name) {
            throw PersistentPrefs.PrefsError.keyLocked(key: name)
        }
    }

    /// The `defaults write` type flag for a kind, or `nil` for a kind without one.
    private static func flag(for kind: String) -> String? {
        ["integer": "int", "real": "float", "boolean": "bool", "string": "string", "date": "date", "data": "data", "array": "array", "dictionary": "dict"][kind]
    }

    /// Runs `describe`, `range`, `writable`, `list-keys` or `schema-file`.
    static func run(_ command: Command, session: HarnessSession, console: Console) throws {
        if command.spec.name == "schema-file" { return try schemaFile(json: command.json, session: session, console: console) }
        let set = try HarnessSet.of(session)
        let schema = set.schema
        let json = command.json
        switch command.spec.name {
        case "list-keys":
            let names = schema.keys.map(\.name)
            console.print(json ? ValueFormatter.jsonText(names) : names.joined(separator: "\n"))
        case "describe":
            let key = try set.key(command.arguments[0])
            console.print(json ? ValueFormatter.jsonText(["key": key.name, "summary": key.summary.map { $0 as Any } ?? NSNull()] as [String: Any]) : key.summary ?? "")
        case "range":
            let key = try set.key(command.arguments[0])
            guard json else { return console.print(range(of: key, type: command.flags.contains("--gsettings") ? typeCode(key) : set.typeName(key))) }
            let object: [String: Any] = [
                "key": key.name, "type": typeCode(key), "typeName": set.typeName(key), "kind": key.kind ?? NSNull(),
                "min": key.minimum.map(ValueFormatter.jsonValue) ?? NSNull(), "max": key.maximum.map(ValueFormatter.jsonValue) ?? NSNull(),
                "choices": key.choices.map { $0.map(ValueFormatter.jsonValue) } ?? NSNull(),
            ]
            console.print(ValueFormatter.jsonText(object))
        case "writable":
            let key = try set.key(command.arguments[0])
            let writable = !isLocked(key.name, session)
            console.print(json ? ValueFormatter.jsonText(["key": key.name, "writable": writable]) : String(writable))
        default:
            throw HarnessError.usage("not a schema command: \(command.spec.name)")
        }
    }

    /// `schema-file`: where the set's program writes its schema, and whether it is there.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` for a store that keeps no schema files (without
    ///   `--json`, which prints a `null` path).
    static func schemaFile(json: Bool, session: HarnessSession, console: Console) throws {
        let url = PrefsSchema.fileURL(in: session.store, root: session.rootKey)
        let exists = url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
        if json {
            console.print(ValueFormatter.jsonText(["root": session.rootKey, "path": url.map { $0.path as Any } ?? NSNull(), "exists": exists] as [String: Any]))
        } else if let url {
            console.print(url.path)
        } else {
            throw HarnessError.refused("The store \(session.storeDescription) keeps no schema files.")
        }
    }

    /// Whether `key` is locked for the session's set now (the system layers, read afresh).
    static func isLocked(_ key: String, _ session: HarnessSession) -> Bool {
        PersistentPrefs(key: session.rootKey, store: session.store).isLocked(key)
    }

    /// What `range` prints: `enum` and the choices, `range TYPE MIN MAX`, or `type TYPE`, with
    /// `type` as the type's name (`Int`, or with `--gsettings` its ``typeCode(_:)``).
    static func range(of key: PrefsSchema.Key, type: String) -> String {
        if let choices = key.choices {
            return (["enum"] + choices.map(literal)).joined(separator: "\n")
        }
        if key.minimum != nil || key.maximum != nil {
            return "range \(type) \(key.minimum.map(literal) ?? "-") \(key.maximum.map(literal) ?? "-")"
        }
        return "type \(type)"
    }

    /// The key's type as a GVariant type string where one exists (`x` for `Int`, `s`, `as`,
    /// `a{ss}`), else the Swift type's name.
    static func typeCode(_ key: PrefsSchema.Key) -> String {
        let names = [
            "Bool": "b", "Int": "x", "Int64": "x", "Int32": "i", "Int16": "n", "UInt8": "y", "UInt16": "q", "UInt32": "u",
            "UInt": "t", "UInt64": "t", "Double": "d", "Float": "d", "String": "s", "URL": "s", "Data": "ay",
        ]
        func code(_ type: String) -> String? {
            if let known = names[type] { return known }
            if type.hasPrefix("Array<"), type.hasSuffix(">") { return code(String(type.dropFirst(6).dropLast())).map { "a" + $0 } }
            if type.hasPrefix("Dictionary<String, "), type.hasSuffix(">") {
                return code(String(type.dropFirst(19).dropLast())).map { "a{s\($0)}" }
            }
            return nil
        }
        if let type = key.type, let known = code(type) { return known }
        switch key.kind {
        case "boolean"?: return "b"
        case "integer"?: return "x"
        case "real"?: return "d"
        case "string"?: return "s"
        case "data"?: return "ay"
        case "array"?: return "av"
        case "dictionary"?: return "a{sv}"
        default: return key.type ?? "v"
        }
    }

    /// A value as `gsettings` prints one: strings in single quotes (a quote in them escaped with a
    /// backslash), numbers as they are.
    static func literal(_ value: Any) -> String {
        guard let text = value as? String else { return ValueFormatter.text(value) }
        return "'" + Tokenizer.replacingQuotes(in: text, with: "\\'") + "'"
    }

    /// The string inside `text` when it is in single quotes, as `gsettings` takes a string; else `nil`.
    private static func singleQuoted(_ text: String) -> String? {
        guard text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") else { return nil }
        return String(text.dropFirst().dropLast())
    }

    /// VALUE as the key's property-list type: `integer`, `real`, `boolean` (`true`, `false`),
    /// `string` (as it is, or in single quotes as `gsettings` takes it), `date` (ISO 8601),
    /// `data` (Base64), `array` and `dictionary` (JSON); for a key of no kind, a string in single
    /// quotes, else an integer or a real when the text reads as one, else the text.
    static func parse(_ text: String, for key: PrefsSchema.Key) throws -> Any {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func bad(_ shape: String) -> HarnessError {
            .usage("'\(text)' is not \(shape) for \(key.name) (\(key.type ?? key.kind ?? "any type"))")
        }
        switch key.kind {
        case "integer"?:
            return try ValueParser.integer(trimmed, for: "\(key.name) (\(key.type ?? "Int"))")
        case "real"?:
            guard let value = Double(trimmed) else { throw bad("a number") }
            return value
        case "boolean"?:
            return try ValueParser.boolean(trimmed, for: "\(key.name) (\(key.type ?? "Bool"))")
        case "string"?:
            return singleQuoted(trimmed) ?? text
        case "date"?:
            guard let date = PlistDates.iso8601(trimmed) else { throw bad("an ISO 8601 date") }
            guard PlistDates.isStorable(date) else { throw bad("a date a set can store (years 1 to 9999)") }
            return date
        case "data"?:
            guard let data = Data(base64Encoded: trimmed) else { throw bad("Base64 data") }
            return data
        case "array"?:
            guard let array = (try? JSONText.value(of: Data(trimmed.utf8))) as? [Any] else { throw bad("a JSON array ('[1, 2]', quoted whole as in a shell)") }
            return array
        case "dictionary"?:
            guard let object = (try? JSONText.value(of: Data(trimmed.utf8))) as? [String: Any] else {
                throw bad(#"a JSON object ('{"k": 1}', quoted whole as in a shell)"#)
            }
            return object
        default:
            // A key of no declared type: a string in single quotes (as gsettings takes one) is that
            // string, else a number when it reads as one, else the text.
            if let string = singleQuoted(trimmed) { return string }
            if let number = Int(trimmed) { return number }
            if let number = Double(trimmed) { return number }
            return text
        }
    }

    /// Checks what `defaults write` (or `import`, `rename`) changes against the schemas it finds:
    /// in a `--store-dir` set, the set's own keys; in a suite, the sets under the root keys it
    /// changes. A key a schema does not list, a value of another type or outside its range is
    /// refused with a `gsettings`-like message; keys without a schema are not checked, and a
    /// schema that `schemaFor` cannot read refuses the change (it throws).
    static func checkDefaultsChange(
        from before: [String: Any], to after: [String: Any], setRoot: String?, schemaFor: (String) throws -> PrefsSchema?
    ) throws {
        func check(_ old: [String: Any], _ new: [String: Any], against schema: PrefsSchema) throws {
            for name in changedKeys(old, new) where name != PersistentPrefs.schemaVersionKey {
                guard let key = schema[name] else {
                    throw HarnessSet.unknownKey(name, in: schema, file: nil, outcome: "defaults have not been changed")
                }
                if let value = new[name], let problem = key.problem(with: value) {
                    throw HarnessError.refused("\(refusal(of: value, for: key, problem: problem)) Defaults have not been changed.")
                }
            }
        }
        if let setRoot {
            if let schema = try schemaFor(setRoot) { try check(before, after, against: schema) }
            return
        }
        for root in changedKeys(before, after) {
            guard let schema = try schemaFor(root) else { continue }
            guard after[root] == nil || after[root] is [String: Any] else {
                throw HarnessError.refused("\"\(root)\" holds a preference set (it has a schema): write a dictionary there; defaults have not been changed")
            }
            try check(before[root] as? [String: Any] ?? [:], after[root] as? [String: Any] ?? [:], against: schema)
        }
    }

    /// The keys whose values differ between two dictionaries, in order, by the library's rule:
    /// a number of another kind is a change (`NSDictionary.isEqual` would call `1` and `true`
    /// equal).
    static func changedKeys(_ old: [String: Any], _ new: [String: Any]) -> [String] {
        PlistComparison.changedKeys(old, new).sorted()
    }
}

/// A set whose keys are a schema's, with the schema's ranges and choices as rules: what the
/// harness writes through for a program's set. It never writes a schema file of its own.
///
/// It writes at the schema's version, as the program that wrote the schema would: a set stored
/// at that version (or an empty one, which it stamps) is written; a set stored at a newer
/// version is refused, since the schema does not describe it; a non-empty set stored at an
/// older version is refused, since only its program can migrate it. A schema that does not
/// record its version (see ``PersistentPrefs/PrefsSchema/recordsSchemaVersion``) says nothing
/// either way: the set is written at whatever version it is stored at, its stamp left as it is.
/// Nothing is lost in any case: a refusal writes nothing, and a write never changes the stamp a
/// program reads its set's shape by.
final class SchemaSet: PersistentPrefs {
    /// The version a write runs at, bound around the instance's making and its writes (a class
    /// property is what the library reads the version from).
    struct Versioning: Sendable {
        let version: Int
        let writesNewer: Bool
    }

    @TaskLocal static var versioning = Versioning(version: 0, writesNewer: true)

    private let schemaKeys: [String]
    private let rules: [String: PrefsValidator]

    private init(key: String, store: any PrefsStore, schema: PrefsSchema) {
        schemaKeys = schema.keys.map(\.name)
        var rules: [String: PrefsValidator] = [:]
        for entry in schema.keys where entry.minimum != nil || entry.maximum != nil || entry.choices != nil || entry.kind != nil {
            rules[entry.name] = PrefsValidator { value in
                if let problem = entry.problem(with: value) { throw SchemaRefusal(description: problem) }
                return true
            }
        }
        self.rules = rules
        super.init(key: key, values: [:], store: store)
    }

    override var keys: [String] { schemaKeys }
    override var validators: [String: PrefsValidator] { rules }
    override class var publishesSchema: Bool { false }
    override class var schemaVersion: Int { versioning.version }
    override class var writesNewerSchemaVersions: Bool { versioning.writesNewer }

    /// Writes `value` under `name` in the set under `root`, at `schema`'s version (see
    /// ``SchemaSet``), and returns the value as stored.
    ///
    /// - Parameter file: The schema file's path, for messages.
    /// - Throws: ``HarnessError/refused(_:)``: the library's refusal, or a version the schema
    ///   does not describe.
    static func write(_ value: Any, forKey name: String, root: String, store: any PrefsStore, schema: PrefsSchema, file: String) throws -> Any? {
        try change(root: root, store: store, schema: schema, file: file) { try $0.set(value, forKey: name) }[name]
    }

    /// Runs `body` on the set under `root` at `schema`'s version (see ``SchemaSet``) — its
    /// writes are the library's, with the schema's rules — and returns the set as stored after.
    ///
    /// - Parameter file: The schema file's path, for messages.
    /// - Throws: ``HarnessError/refused(_:)``: the library's refusal, or a version the schema
    ///   does not describe; a refusal writes nothing.
    static func change(
        root: String, store: any PrefsStore, schema: PrefsSchema, file: String, _ body: (SchemaSet) throws -> Void
    ) throws -> [String: Any] {
        let versioning = Versioning(version: schema.schemaVersion, writesNewer: !schema.recordsSchemaVersion)
        return try $versioning.withValue(versioning) {
            // Never migrated here: it has no steps, and only the program knows them.
            let set = PersistentPrefs.withoutAutomaticMigration { SchemaSet(key: root, store: store, schema: schema) }
            if schema.recordsSchemaVersion, let stored = set.storedSchemaVersion, stored < schema.schemaVersion, !set.values.isEmpty {
                throw HarnessError.refused(
                    "The set \"\(root)\" is stored at schema version \(stored), older than the version its schema file \(file) describes (\(schema.schemaVersion)): its program migrates it the next time it runs; nothing was written")
            }
            do {
                try body(set)
            } catch PersistentPrefs.PrefsError.newerSchemaVersion(_, let stored, _) {
                throw HarnessError.refused(
                    "The set \"\(root)\" is stored at schema version \(stored), newer than the version its schema file \(file) describes (\(schema.schemaVersion)), so the schema may not describe it; nothing was written")
            } catch {
                try refusing { throw error }
            }
            return set.values
        }
    }
}

/// Why a schema refuses a value, as a rule's error.
struct SchemaRefusal: Error, CustomStringConvertible {
    let description: String
}

import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// The set the harness acts on, as one model: the sample's set (no schema file, or the one the
/// sample writes itself) or a program's set described by its schema file. Every command reads
/// keys, types, defaults and rules from here; the two kinds of set differ only in this data and
/// in how a write reaches the store (the sample's class, or ``SchemaSet`` with the schema's
/// version and rules).
struct HarnessSet {
    /// The schema: the program's, or the sample's own.
    let schema: PrefsSchema
    /// The schema file's path, for a program's set; `nil` for the sample's.
    let file: String?
    /// The root key.
    let root: String

    /// Whether this is the sample's set (its aliases, value forms and defaults apply).
    var isSample: Bool { file == nil }

    /// The set of `session`: the program's when its schema file is there and is not the
    /// sample's own; the sample's when the store keeps no schema files, or the root key has none
    /// and the session uses the sample for it (see ``HarnessSession/usesSample``).
    ///
    /// - Throws: ``HarnessError/refused(_:)`` when the schema file cannot be used, or the root
    ///   key has none and is not the sample's (see ``missingSchema(_:looked:)``).
    static func of(_ session: HarnessSession) throws -> HarnessSet {
        try session.checkSampleMeant()
        let root = session.rootKey
        guard let url = PrefsSchema.fileURL(in: session.store, root: root) else {
            return HarnessSet(schema: SchemaCommands.sampleSchema(root), file: nil, root: root)
        }
        guard let schema = try SchemaCommands.load(url) else {
            guard session.usesSample else { throw missingSchema(session, looked: url) }
            return HarnessSet(schema: SchemaCommands.sampleSchema(root), file: nil, root: root)
        }
        // A schema of another class is a program's, without making the sample's schema (which
        // makes an instance of the sample's class) to compare; one naming the sample's class is
        // the sample's only when it is the sample's in every respect.
        guard schema.className == String(describing: SamplePrefs.self) else { return HarnessSet(schema: schema, file: url.path, root: root) }
        let sample = SchemaCommands.sampleSchema(root)
        return SchemaCommands.isSampleSchema(schema, sample: sample)
            ? HarnessSet(schema: sample, file: nil, root: root) : HarnessSet(schema: schema, file: url.path, root: root)
    }

    /// The refusal for a root key without a schema file that is not the sample's: what was
    /// looked for, the sets the store holds (a root key or suite that differs only in case
    /// suggested), and the two ways on.
    static func missingSchema(_ session: HarnessSession, looked url: URL) -> HarnessError {
        let root = session.rootKey
        let allRoots = (try? session.store.roots()) ?? []
        let roots = allRoots.filter { $0 != root }
        var lines = ["No schema file for the root key \"\(root)\" in \(session.storePhrase): looked for \(url.path)."]
        if allRoots.contains(root) {
            lines.append(
                "A set is stored under \"\(root)\", but no program has written a schema file for it"
                    + (roots.isEmpty ? "." : "; the other sets there are " + roots.quotedList + "."))
        } else if case .directory(let path) = session.storeChoice, !FileManager.default.fileExists(atPath: path) {
            lines.append("The folder \(path) does not exist.")
        } else if roots.isEmpty {
            var holds = "\(session.storePhrase.prefix(1).uppercased() + session.storePhrase.dropFirst()) holds no sets"
            if case .suite(let suite) = session.storeChoice, let other = nearbySuite(suite, schemaFile: url) {
                holds += " (did you mean --suite \(other)?)"
            }
            lines.append(holds + ".")
        } else {
            var holds = "It holds the set\(roots.count == 1 ? "" : "s") " + roots.quotedList
            if let other = roots.first(where: { $0.lowercased() == root.lowercased() }) { holds += " (did you mean --key \(other)?)" }
            lines.append(holds + ".")
        }
        lines.append(
            "A program writes its set's schema file when it first writes the set; until then its keys are unknown here. "
                + "Give --sample to use the sample's keys under this root key. Nothing was read or written.")
        return .refused(lines.joined(separator: "\n"))
    }

    /// The refusal of a command that names no root key (so the sample's "SamplePrefs" was
    /// taken) on a store that holds sets but not that one: the sets it holds, one suggested.
    static func sampleNotThere(_ session: HarnessSession, roots: [String]) -> HarnessError {
        let suggestion = roots.count == 1 ? " (did you mean --key \(Tokenizer.quoted(roots[0]))?)" : ""
        let store = session.storePhrase.prefix(1).uppercased() + session.storePhrase.dropFirst()
        return .refused(
            """
            No --key was given, so the sample's set "\(HarnessSession.sampleRoot)" was taken, and it is not there.
            \(store) holds the set\(roots.count == 1 ? "" : "s") \(roots.quotedList)\(suggestion).
            Give --key ROOT for a set there, or --sample (or --key \(HarnessSession.sampleRoot)) for the sample's set. Nothing was read or written.
            """)
    }

    /// A suite file beside the one `suite` names whose name differs only in case, from the
    /// schema file's path (`FOLDER/SUITE.schemas/…`).
    private static func nearbySuite(_ suite: String, schemaFile: URL) -> String? {
        let folder = schemaFile.deletingLastPathComponent().deletingLastPathComponent().path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.lazy.filter { $0.hasSuffix(".plist") }.map { String($0.dropLast(6)) }
            .first { $0 != suite && $0.lowercased() == suite.lowercased() }
    }

    /// The keys in the order `list` shows them: the sample's in its own order, a program's as
    /// its schema lists them.
    var keys: [PrefsSchema.Key] {
        guard isSample else { return schema.keys }
        return SampleKey.allCases.compactMap { schema[$0.name] }
    }

    /// The key `name` names: a key of the schema (for the sample's set, also an alias such as
    /// `int`), or a usage error listing the keys.
    func key(_ name: String) throws -> PrefsSchema.Key {
        if isSample {
            return try schema[SampleKey.named(name).name] ?? { throw HarnessError.usage("unknown key '\(name)'") }()
        }
        if let key = schema[name] { return key }
        throw Self.unknownKey(name, in: schema, file: file)
    }

    /// The usage error (exit 2) of every command that names a key its set's schema does not
    /// list: the name as typed, and the keys there are.
    ///
    /// - Parameters:
    ///   - file: The schema file's path, when at hand.
    ///   - outcome: What the refusal left as it was, when the command would have written.
    static func unknownKey(_ name: String, in schema: PrefsSchema, file: String?, outcome: String? = nil) -> HarnessError {
        let known = schema.keys.map(\.name).joined(separator: ", ")
        let source = file.map { " (schema file \($0))" } ?? ""
        return .usage("unknown key '\(name)'; the keys of \"\(schema.root)\"\(source) are \(known)" + (outcome.map { "; \($0)" } ?? ""))
    }

    /// The key and the value text of a `NAME VALUE…` line — `set`'s arguments on the command line
    /// or at the prompt, a line piped in or given to `batch` — split into words as a shell splits
    /// them (see ``Tokenizer``). The harness's one rule for them:
    ///
    /// - The key is the first word, or the most leading words that together (joined by one space,
    ///   in any case) name a key of the set and leave a value after them: `Integer Value 42` and
    ///   `"Integer Value" 42` alike (and `string value` is the alias `string` and "value").
    /// - The value is the words after it, joined by one space: `set string hello world` stores
    ///   `hello world`. Quote a value to keep its spaces or quotes (`'{"k": "v"}'`), or to give
    ///   an empty one (`''`).
    ///
    /// - Parameter command: The command, named when a value is missing (`nil` for a `batch` line).
    /// - Throws: ``HarnessError/usage(_:)`` for an unknown key, or a key without a value.
    func keyAndValue(_ words: [String], command: String? = nil) throws -> (key: PrefsSchema.Key, value: String) {
        guard let first = words.first else { throw HarnessError.usage("\(command.map { "\($0) needs" } ?? "give") NAME VALUE") }
        /// The key the first `length` words name together, if any.
        func keyNamed(by length: Int) -> String? {
            let spelled = words[..<length].joined(separator: " ").lowercased()
            return keys.first { $0.name.lowercased() == spelled }?.name
        }
        // The most leading words that name a key and leave a value after them, else the first
        // word; or all the words, when together they name a key and the first alone does not.
        var (count, named) = (1, first)
        for length in stride(from: words.count - 1, to: 1, by: -1) {
            if let match = keyNamed(by: length) {
                (count, named) = (length, match)
                break
            }
        }
        if count == 1, words.count > 1, let whole = keyNamed(by: words.count), (try? self.key(first)) == nil { (count, named) = (words.count, whole) }
        let key = try self.key(named)
        guard words.count > count else {
            let hint = Self.emptyValueHint(key)
            throw HarnessError.usage(command.map { "\($0) needs VALUE after \(key.name) (\(hint))" } ?? "\(key.name) has no value (\(hint))")
        }
        return (key, words[count...].joined(separator: " "))
    }

    /// VALUE as the key's type: the sample's forms for the sample's keys (see ``ValueParser``),
    /// else the schema's kind (see ``SchemaCommands/parse(_:for:)``); `nil` (remove the user's
    /// value) for ``nullWord`` on an optional key, which the program then reads as `nil`, and on
    /// a key of no declared type (listed in `keys` without a `@Pref`), which the program then
    /// finds absent.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` when the text does not parse.
    func parse(_ text: String, for key: PrefsSchema.Key) throws -> Any? {
        if key.isOptional || Self.isUntyped(key), text == Self.nullWord { return nil }
        if isSample, let sample = SampleKey(named: key.name) { return try ValueParser.parse(text, for: sample) }
        return try SchemaCommands.parse(text, for: key)
    }

    /// The value that makes an optional key `nil` in `set`, `batch` and at the prompt: `null`,
    /// as `--json` shows it; on a key of no declared type it removes the user's value. The string
    /// "null" is then written with single quotes kept inside a quoted word, `"'null'"` (the
    /// words of a line are read as a shell reads them, which removes one level of quotes).
    static let nullWord = "null"

    /// Whether `key` has no declared type: a key a program lists in `keys` beside its `@Pref`s.
    static func isUntyped(_ key: PrefsSchema.Key) -> Bool {
        key.kind == nil && key.type == nil
    }

    /// How to give a value that looks like none, for a key given without one.
    static func emptyValueHint(_ key: PrefsSchema.Key) -> String {
        var ways: [String] = []
        if key.kind == "string" || isUntyped(key) { ways.append("'' for an empty string") }
        if key.isOptional { ways.append("\(nullWord) to make it nil") } else if isUntyped(key) { ways.append("\(nullWord) to remove it") }
        return ways.isEmpty ? "give one after the name" : "write " + ways.joined(separator: ", ")
    }

    /// The key's type as `list` shows it.
    func typeName(_ key: PrefsSchema.Key) -> String {
        if isSample, let sample = SampleKey(named: key.name) { return sample.typeName }
        return key.type ?? key.kind ?? "any"
    }

    /// The type shown for a stored value: the key's, or what the value is when it is not of the
    /// key's kind.
    func typeName(_ value: Any, for key: PrefsSchema.Key) -> String {
        if isSample, let sample = SampleKey(named: key.name) { return ValueFormatter.typeName(value, for: sample) }
        guard let kind = key.kind, let found = PrefsSchema.kind(of: value), found != kind, !(kind == "real" && found == "integer") else {
            return typeName(key)
        }
        return "\(found) (expected \(typeName(key)))"
    }

    /// The default a program reads for a key no layer gives: the one declared in its code, as
    /// the schema records it (the sample's schema is made from its class in this process, so
    /// its date default is the moment it was made).
    func defaultValue(_ key: PrefsSchema.Key) -> Any? {
        key.defaultValue
    }

    /// Refuses `value` for `key` as the library does, lock first: a locked key with
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/keyLocked(key:)``, a value the schema does
    /// not allow with ``PersistentPrefs/PersistentPrefs/PrefsError/invalidValue(key:reason:)``.
    ///
    /// - Parameter view: The set as read now (its layers say what is locked).
    func check(_ value: Any?, for key: PrefsSchema.Key, in view: PersistentPrefs) throws {
        if view.isLocked(key.name) { throw HarnessError.refused(PersistentPrefs.PrefsError.keyLocked(key: key.name).description) }
        if let value, let problem = key.problem(with: value) {
            throw HarnessError.refused(PersistentPrefs.PrefsError.invalidValue(key: key.name, reason: problem).description)
        }
    }

    /// Writes `changes` (a `nil` value removes the user's value) in one transaction, each
    /// checked first (see ``check(_:for:in:)``), and returns the set as stored after. The
    /// sample's set is written through its class; a program's through ``SchemaSet``.
    ///
    /// - Throws: ``HarnessError/refused(_:)``; a refusal writes nothing.
    @discardableResult
    func write(_ changes: [(key: PrefsSchema.Key, value: Any?)], session: HarnessSession) throws -> [String: Any] {
        let view = PersistentPrefs(key: root, store: session.store)
        for change in changes { try check(change.value, for: change.key, in: view) }
        return try SignalGuard.deferringSignals {
            if let file {
                return try SchemaSet.change(root: root, store: session.store, schema: schema, file: file) { set in
                    try set.transaction { set in
                        for change in changes { try set.set(change.value, forKey: change.key.name) }
                    }
                }
            }
            let prefs = try session.prefs()
            try refusing {
                try prefs.transaction { prefs in
                    for change in changes { try prefs.set(change.value, forKey: change.key.name) }
                }
            }
            return prefs.values
        }
    }

    /// Adds `step` to the integer key `key` (its value as read, else its default, else 0) in one
    /// locked read-modify-write, and returns the sum.
    ///
    /// - Throws: ``HarnessError``; nothing is written when the value is not an integer, the sum
    ///   overflows, the key is locked or the sum is outside the key's range.
    func increment(_ key: PrefsSchema.Key, by step: Int, session: HarnessSession) throws -> Int {
        let view = PersistentPrefs(key: root, store: session.store)
        try check(nil, for: key, in: view)
        let start = view.effectiveValues[key.name] ?? defaultValue(key) ?? 0
        var result = 0
        func add(_ set: inout [String: Any]) throws {
            let stored = set[key.name] ?? start
            guard let current = stored as? Int, PrefsSchema.kind(of: stored) == "integer" else {
                throw HarnessError.refused("\(key.name) holds \(ValueFormatter.text(stored)), not an integer; nothing was written")
            }
            let (sum, overflow) = current.addingReportingOverflow(step)
            guard !overflow else { throw HarnessError.refused("\(current) + \(step) does not fit in an integer; nothing was written") }
            if let problem = key.problem(with: sum) {
                throw HarnessError.refused(PersistentPrefs.PrefsError.invalidValue(key: key.name, reason: problem).description)
            }
            set[key.name] = sum
            result = sum
        }
        try SignalGuard.deferringSignals {
            if let file {
                _ = try SchemaSet.change(root: root, store: session.store, schema: schema, file: file) { try $0.update(add) }
            } else {
                let prefs = try session.prefs()
                try refusing { try prefs.update(add) }
            }
        }
        return result
    }

    /// A key's value as programs read it: the layers applied, else the default; with where it
    /// comes from and whether it is locked.
    struct Shown {
        let key: String
        let value: Any?
        /// `user`, `site`, `vendor`, `registered`, `managed`, `file default`, `default`, or
        /// `not set`.
        let source: String
        /// The layer file the value comes from (site and vendor values).
        let file: String?
        let locked: Bool
        /// The key's type as `list` shows it.
        let type: String
        /// Whether the schema lists the key.
        let known: Bool
        /// Whether the key holds a `Codable` value whose shape the schema could not check (see
        /// ``PersistentPrefs/PrefsSchema/Key/isShapeChecked``): the program may not read every
        /// value of its kind back.
        var shapeUnchecked = false

        /// The value in words, as `list` shows it, with "(shape not checked)" where that applies.
        var valueText: String {
            guard let value else { return "(not set)" }
            return ValueFormatter.text(value) + (shapeUnchecked ? " (shape not checked)" : "")
        }

        /// The row as JSON: `key`, `type`, `value` (`null` when nothing gives one), `source`,
        /// `file` (`null` unless a site or vendor file gives the value) and `locked`.
        var json: [String: Any] {
            var object: [String: Any] = [
                "key": key, "type": type, "value": value.map(ValueFormatter.jsonValue) ?? NSNull(), "source": source,
                "file": file ?? NSNull(), "locked": locked,
            ]
            if shapeUnchecked { object["shapeChecked"] = false }
            return object
        }

        /// Where the value comes from, in words: `user`, `site /etc/xdg/MyApp.plist`, `default`, …,
        /// with `, locked` when it is.
        var sourceText: String {
            (file.map { "\(source) \($0)" } ?? source) + (locked ? ", locked" : "")
        }
    }

    /// Every key's value as programs read it (the schema's keys, then stored keys it does not
    /// list).
    func shown(session: HarnessSession) throws -> [Shown] {
        let view = PersistentPrefs(key: root, store: session.store)
        if let error = view.lastError { throw HarnessError.refused(error) }
        let effective = view.effectiveValues
        var rows = keys.map { shown($0.name, view: view, effective: effective) }
        let listed = Set(rows.map(\.key))
        for name in effective.keys.sorted() where !listed.contains(name) && name != PersistentPrefs.schemaVersionKey {
            rows.append(shown(name, view: view, effective: effective))
        }
        return rows
    }

    /// One key's value as programs read it.
    func shown(_ name: String, session: HarnessSession) throws -> Shown {
        let view = PersistentPrefs(key: root, store: session.store)
        if let error = view.lastError { throw HarnessError.refused(error) }
        return shown(name, view: view, effective: view.effectiveValues)
    }

    private func shown(_ name: String, view: PersistentPrefs, effective: [String: Any]) -> Shown {
        var shown = unmarkedShown(name, view: view, effective: effective)
        shown.shapeUnchecked = schema[name]?.isShapeChecked == false
        return shown
    }

    private func unmarkedShown(_ name: String, view: PersistentPrefs, effective: [String: Any]) -> Shown {
        let key = schema[name]
        let locked = view.isLocked(name)
        let type = key.map { k in effective[name].map { typeName($0, for: k) } ?? typeName(k) } ?? (isSample ? "(not a sample key)" : "(not in the schema)")
        if let value = effective[name] {
            let source = view.valueSource(forKey: name) ?? .user
            return Shown(key: name, value: value, source: source.name, file: source.file?.path, locked: locked, type: type, known: key != nil)
        }
        if let value = view.fileDefaults[name] {
            return Shown(key: name, value: value, source: "file default", file: nil, locked: locked, type: type, known: key != nil)
        }
        let fallback = key.flatMap(defaultValue)
        return Shown(key: name, value: fallback, source: fallback == nil ? "not set" : "default", file: nil, locked: locked, type: type, known: key != nil)
    }
}

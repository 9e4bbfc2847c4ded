import Foundation
import PersistentPrefs

/// `prefs-harness defaults …`: the macOS `defaults` command for any `UserDefaults` suite on
/// Linux, a `--store-dir` folder (its root keys are the domains), or a property-list file.
///
/// Every write goes through the library: the suite's lock, the file read again, only this change
/// applied, the file replaced atomically and durable on return, so it is safe beside running
/// programs. Everything on the command line is parsed before anything is touched.
enum DefaultsTool {
    /// The subcommands, for help and errors.
    static let subcommands = ["domains", "read", "read-type", "write", "delete", "rename", "export", "import"]

    /// Runs `defaults ARGUMENTS`.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` for a command line that does not parse (nothing is
    ///   touched), ``HarnessError/refused(_:)`` for an operation that cannot be done (nothing is written).
    static func run(_ arguments: [String], json: Bool, session: HarnessSession, console: Console) throws {
        guard let subcommand = arguments.first else {
            throw HarnessError.usage("defaults needs a subcommand: \(subcommands.joined(separator: ", "))")
        }
        if case .suite = session.storeChoice {
            throw HarnessError.usage("defaults takes its domain as an argument; leave out --suite (use --store-dir DIR for a folder of sets)")
        }
        let rest = Array(arguments.dropFirst())
        let places = Places(session: session)
        // A damaged domain's messages name the command that acknowledges that domain's damage.
        try DamageReport.$acknowledgement.withValue(rest.first.flatMap(places.acknowledgement(of:))) {
            try run(subcommand, rest, json: json, places: places, console: console)
        }
    }

    /// ``run(_:json:session:console:)`` for a subcommand and the words after it.
    private static func run(_ subcommand: String, _ rest: [String], json: Bool, places: Places, console: Console) throws {
        func arity(_ range: ClosedRange<Int>, _ synopsis: String) throws {
            guard range.contains(rest.count) else { throw HarnessError.usage("usage: defaults \(subcommand) \(synopsis)") }
        }
        switch subcommand {
        case "domains":
            try arity(0...0, "")
            let names = try places.domainNames()
            console.print(json ? ValueFormatter.jsonText(names) : names.joined(separator: ", "))
        case "read":
            try arity(0...2, "[DOMAIN [KEY]]")
            try read(rest, json: json, places: places, console: console)
        case "read-type":
            try arity(2...2, "DOMAIN KEY")
            let domain = try places.domain(rest[0])
            let contents = try domain.existingContents()
            guard let value = contents[rest[1]] else { throw HarnessError.refused(missingPair(domain, rest[1])) }
            let type = PlistText.kind(of: value)?.rawValue ?? "unknown"
            console.print(json ? ValueFormatter.jsonText(["domain": domain.name, "key": rest[1], "type": type]) : "Type is \(type)")
        case "write":
            guard rest.count >= 2 else {
                throw HarnessError.usage("usage: defaults write DOMAIN KEY [-type] VALUE, or defaults write DOMAIN '{ key = value; }'")
            }
            let domain = try places.domain(rest[0])
            let change = try WriteChange.parse(Array(rest.dropFirst()))
            try domain.updateSayingDamage(console) { contents in try change.apply(to: &contents, domain: domain.name) }
            warnOfSetKey(change, words: Array(rest.dropFirst()), domain: domain, console: console)
        case "delete":
            try arity(1...2, "DOMAIN [KEY]")
            let domain = try places.domain(rest[0])
            if rest.count == 1 {
                // A domain whose damaged file was moved aside is still reported: removing it ends
                // the report (its copy stays).
                let damage = try domain.damageFound()
                guard try domain.remove() else {
                    guard let damage else { throw HarnessError.refused("Domain (\(domain.name)) not found. Defaults have not been changed.") }
                    return console.error("prefs-harness: removed what was left of the domain \(domain.name), whose file had been moved aside as damaged; the copy stays (\(damage.description))")
                }
            } else {
                let key = rest[1]
                if let damage = try domain.damageFound() { throw DamageReport.refusal(damage) }  // the key is in the copy
                try domain.update { contents in
                    guard contents.removeValue(forKey: key) != nil else {
                        throw HarnessError.refused("Domain (\(domain.name)) has no key \(key). Defaults have not been changed.")
                    }
                }
            }
        case "rename":
            try arity(3...3, "DOMAIN OLD_KEY NEW_KEY")
            let domain = try places.domain(rest[0])
            let (old, new) = (rest[1], rest[2])
            if let damage = try domain.damageFound() { throw DamageReport.refusal(damage) }  // the key is in the copy
            try domain.update { contents in
                guard let value = contents.removeValue(forKey: old) else {
                    throw HarnessError.refused("Key \(old) does not exist in domain \(domain.name); leaving defaults unchanged.")
                }
                contents[new] = value
            }
        case "export":
            try arity(2...2, "DOMAIN PATH|-")
            let domain = try places.domain(rest[0])
            let contents = try domain.existingContents()
            if rest[1] == "-" {
                // Printed as XML, as macOS's `defaults` prints it.
                let data = try refusing { try PlistWriting.data(contents, format: .xml) }
                console.write(String(decoding: data, as: UTF8.self))
            } else {
                // A file: binary when XML cannot carry a character in it for every reader.
                let data = try refusing { try PlistWriting.portableData(contents) }
                try DefaultsFiles.export(data, to: rest[1])
            }
        case "import":
            try arity(2...2, "DOMAIN PATH|-")
            let domain = try places.domain(rest[0])
            let imported = try importedDictionary(rest[1], console: console)
            try domain.updateSayingDamage(console) { contents in contents = imported }
        default:
            throw HarnessError.usage("unknown defaults subcommand '\(subcommand)'; the subcommands are \(subcommands.joined(separator: ", "))")
        }
    }

    /// Warns when `change` wrote a top-level key of a suite that a set in it has as one of its
    /// own keys (its schema lists it, or it holds it): programs read the set's, not this one.
    /// Names the commands that change the set's key. The write itself stands, as on macOS.
    private static func warnOfSetKey(_ change: WriteChange, words: [String], domain: Domain, console: Console) {
        guard case .file(let file) = domain.place else { return }  // a folder's domain is a set itself
        let key: String
        switch change {
        case .set(let name, _), .arrayAdd(let name, _), .dictAdd(let name, _): key = name
        case .domain: return
        }
        guard let contents = try? file.contents() else { return }
        let sets = contents.keys.sorted().filter { root in
            guard root != key, let set = contents[root] as? [String: Any] else { return false }
            if set[key] != nil { return true }
            return file.hasSchemaFolder && ((try? PrefsSchema.load(from: file.schemaFileURL(forRoot: root)))??[key] != nil)
        }
        guard let root = sets.first else { return }
        let quoted = { (words: [String]) in words.map(Tokenizer.quoted).joined(separator: " ") }
        var ways: [String] = []
        let value = Array(words.dropFirst())
        // A typed word (`-int 3`) is the same value under -dict-add; an untyped one is property-list
        // text (`3` is a string there), which `set` parses for the key's kind instead.
        let typed = value.count == 2 && DefaultsValues.scalarFlags.contains(value[0])
        let word = typed || (value.count == 1 && !"{(<[".contains(value[0].first ?? "{")) ? value.last : nil
        if typed { ways.append("prefs-harness defaults write " + quoted([domain.name, root, "-dict-add", key] + value)) }
        if !domain.name.hasPrefix("/") {
            ways.append("prefs-harness " + quoted(["--suite", domain.name, "--key", root, "set", key]) + " " + (word.map { quoted([$0]) } ?? "VALUE"))
        }
        let others = sets.count > 1 ? " (\(sets.dropFirst().quotedList) too)" : ""
        console.error(
            "prefs-harness: warning: \"\(key)\" was written as a key of the suite \(domain.name) itself; programs read the set \"\(root)\"'s own \"\(key)\"\(others), which this did not change."
                + (ways.isEmpty ? " Change that one with -dict-add under \"\(root)\"." : " To change that one:\n" + ways.map { "  " + $0 }.joined(separator: "\n")))
    }

    private static func read(_ arguments: [String], json: Bool, places: Places, console: Console) throws {
        func show(_ value: Any, topLevel: Bool) {
            console.print(json ? ValueFormatter.jsonText(value) : PlistText.describe(value, topLevel: topLevel))
        }
        guard let name = arguments.first else {
            var all: [String: Any] = [:]
            for name in try places.domainNames() {
                all[name] = try places.domain(name).contents() ?? [:]
            }
            return show(all, topLevel: false)
        }
        let domain = try places.domain(name)
        let contents = try domain.existingContents()
        guard arguments.count == 2 else { return show(contents, topLevel: false) }
        guard let value = contents[arguments[1]] else { throw HarnessError.refused(missingPair(domain, arguments[1])) }
        show(value, topLevel: true)
    }

    private static func missingPair(_ domain: Domain, _ key: String) -> String {
        "The domain/default pair of (\(domain.name), \(key)) does not exist"
    }

    /// The dictionary in the file at `path` (`-`: standard input, as property-list text).
    private static func importedDictionary(_ path: String, console: Console) throws -> [String: Any] {
        let value: Any
        if path == "-" {
            var lines: [String] = []
            while let line = console.readLine() { lines.append(line) }
            value = try DefaultsValues.text(lines.joined(separator: "\n"))
        } else {
            let data = try DefaultsFiles.read(path)
            do {
                value = try PropertyListSerialization.propertyList(from: data, format: nil)
            } catch {
                throw HarnessError.refused("\(path) is not a property list; nothing was imported")
            }
        }
        guard let dictionary = value as? [String: Any] else {
            throw HarnessError.refused("\(path == "-" ? "standard input" : path) does not hold a dictionary; nothing was imported")
        }
        return dictionary
    }

}

// MARK: - Writes

/// What `defaults write DOMAIN …` asks for, parsed before anything is written.
public enum WriteChange {
    /// `write DOMAIN '{ … }'`: the whole domain.
    case domain([String: Any])
    /// `write DOMAIN KEY VALUE` (with or without a type flag).
    case set(String, Any)
    /// `-array-add`: elements appended to the array under the key (created when absent).
    case arrayAdd(String, [Any])
    /// `-dict-add`: pairs merged into the dictionary under the key (created when absent).
    case dictAdd(String, [String: Any])

    /// Parses the words after the domain: `KEY VALUE`, `KEY -TYPE VALUE…`, or one dictionary.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` naming the problem.
    public static func parse(_ words: [String]) throws -> WriteChange {
        if words.count == 1 {
            guard let dictionary = try DefaultsValues.text(words[0]) as? [String: Any] else {
                throw HarnessError.usage("'\(words[0])' is not a dictionary; defaults write DOMAIN takes '{ key = value; }' (or give a KEY and a VALUE)")
            }
            return .domain(dictionary)
        }
        let key = words[0]
        guard !DefaultsValues.typeFlags.contains(key) else {
            throw HarnessError.usage("the key is missing before \(key) (usage: defaults write DOMAIN KEY \(key) VALUE)")
        }
        let rest = Array(words.dropFirst())
        let flag = rest[0]
        let isFlag = flag.hasPrefix("-") && flag.count > 1 && !(flag.dropFirst().first?.isNumber ?? false) && flag.dropFirst().first != "."
        guard isFlag else {
            guard rest.count == 1 else {
                throw HarnessError.usage("too many values for \(key): \(rest.dropFirst().map { "'\($0)'" }.joined(separator: " ")) (quote a value with spaces)")
            }
            return .set(key, try DefaultsValues.text(flag))
        }
        guard DefaultsValues.typeFlags.contains(flag) else {
            throw HarnessError.usage("unknown type flag '\(flag)'; the flags are \(DefaultsValues.typeFlags.sorted().joined(separator: " "))")
        }
        let values = Array(rest.dropFirst())
        switch flag {
        case "-array": return .set(key, try DefaultsValues.elements(values))
        case "-array-add": return .arrayAdd(key, try DefaultsValues.elements(values))
        case "-dict": return .set(key, try DefaultsValues.pairs(values))
        case "-dict-add": return .dictAdd(key, try DefaultsValues.pairs(values))
        default:
            guard values.count == 1 else {
                throw HarnessError.usage("\(flag) takes one value, got \(values.count) (quote a value with spaces)")
            }
            return .set(key, try DefaultsValues.scalar(values[0], flag: flag))
        }
    }

    /// Applies the change to the domain's keys.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` for `-array-add` on a value that is not an array
    ///   (or `-dict-add` on one that is not a dictionary).
    public func apply(to contents: inout [String: Any], domain: String) throws {
        switch self {
        case .domain(let dictionary):
            contents = dictionary
        case .set(let key, let value):
            contents[key] = value
        case .arrayAdd(let key, let elements):
            guard let current = contents[key] else { return contents[key] = elements }
            guard let array = current as? [Any] else {
                throw HarnessError.refused("-array-add: \(key) in \(domain) is \(PlistText.kind(of: current)?.rawValue ?? "not an array"), not an array; nothing was written")
            }
            contents[key] = array + elements
        case .dictAdd(let key, let pairs):
            guard let current = contents[key] else { return contents[key] = pairs }
            guard let dictionary = current as? [String: Any] else {
                throw HarnessError.refused("-dict-add: \(key) in \(domain) is \(PlistText.kind(of: current)?.rawValue ?? "not a dictionary"), not a dictionary; nothing was written")
            }
            contents[key] = dictionary.merging(pairs) { _, new in new }
        }
    }
}

// MARK: - Domains

/// Where domains live for this run: suites in the preferences folder, or the root keys of a
/// `--store-dir` folder; a DOMAIN starting with `/` is a property-list file either way.
struct Places {
    let files: PlistFileStore?

    init(session: HarnessSession) {
        files = session.fileStore
    }

    func domainNames() throws -> [String] {
        try refusing { try files?.roots() ?? PreferencesFile.suiteNames() }
    }

    /// Whether `name` holds `/`, `..` or NUL, any of which would lead outside the
    /// preferences folder. Tested on bytes, as a path is: a slash followed by a combining mark
    /// is one `Character` but still a slash to the file system.
    static func hasSlashDotDotOrNUL(_ name: String) -> Bool {
        var previous: UInt8 = 0
        for byte in name.utf8 {
            if byte == UInt8(ascii: "/") || byte == 0 || (byte == UInt8(ascii: ".") && previous == byte) { return true }
            previous = byte
        }
        return false
    }

    /// The command that acknowledges the damage of the domain `name` (see ``DamageReport``):
    /// `prefs-harness --suite NAME acknowledge`, or for a root key of a `--store-dir` folder
    /// `prefs-harness --store-dir DIR --key NAME acknowledge`; `nil` for a file named by path,
    /// which the library never moves, and for a name that is no domain.
    func acknowledgement(of name: String) -> String? {
        guard !name.hasPrefix("/"), !name.isEmpty, !Self.hasSlashDotDotOrNUL(name) else { return nil }
        guard let files else { return DamageReport.command(store: .suite(name), root: nil) }
        return DamageReport.command(store: .directory(files.directory.path), root: name)
    }

    /// The domain `name` names.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` for a name with `/` or `..` that is not an absolute
    ///   path, an empty name, or the global domain.
    func domain(_ name: String) throws -> Domain {
        if name.hasPrefix("/") {
            let exact = URL(fileURLWithPath: name)
            let file = name.hasSuffix(".plist") || FileManager.default.fileExists(atPath: name) ? exact : exact.appendingPathExtension("plist")
            return Domain(name: name, place: .file(PreferencesFile(url: file)))
        }
        guard !name.isEmpty else { throw HarnessError.usage("the domain name is empty") }
        guard !Self.hasSlashDotDotOrNUL(name) else {
            throw HarnessError.usage("the domain '\(name)' must not contain '/' or '..' (give a plist file as an absolute path)")
        }
        guard !["NSGlobalDomain", "-g", "-globalDomain"].contains(name) else {
            throw HarnessError.usage("the global domain is not kept in a file on Linux; name a suite")
        }
        if let files { return Domain(name: name, place: .root(files)) }
        return Domain(name: name, place: .file(try refusing { try PreferencesFile(suiteName: name) }))
    }
}

/// One domain: a suite or property-list file, or a root key of a `PlistFileStore`.
struct Domain {
    enum Place {
        case file(PreferencesFile)
        case root(PlistFileStore)
    }

    let name: String
    let place: Place

    /// Its keys and values; `nil` when it does not exist.
    ///
    /// - Throws: A refusal naming the damaged copy when the file was unreadable: the read that
    ///   finds it moves it aside, and every read after says so until it is written again.
    func contents() throws -> [String: Any]? {
        let contents = try refusing {
            switch place {
            case .file(let file):
                return try file.contents()
            case .root(let store):
                return try store.load(root: name)
            }
        }
        if contents == nil, let damage { throw DamageReport.refusal(damage) }
        return contents
    }

    /// The library's report that the file was damaged and moved aside, until it is written
    /// again (see ``DamageReport``); `nil` otherwise.
    var damage: PersistentPrefs.PrefsError? {
        switch place {
        case .file(let file): return file.damageNotice
        case .root(let store): return (try? store.fileURL(forRoot: name)).flatMap { PreferencesFile(url: $0).damageNotice }
        }
    }

    /// The damage reported for the domain now, after reading it as every command first does: a
    /// damaged file is moved aside by this read (so no later step of the command meets it
    /// unannounced); `nil` when the file reads or there is none.
    ///
    /// - Throws: The refusal of a file left in place (a property list the library cannot keep
    ///   exactly, a file named by path), which no write may replace.
    func damageFound() throws -> PersistentPrefs.PrefsError? {
        do {
            switch place {
            case .file(let file): _ = try file.contents()
            case .root(let store): _ = try store.load(root: name)
            }
        } catch let error as PersistentPrefs.PrefsError {
            guard let notice = DamageReport.notice(in: error) else { throw HarnessError.refused(error) }
            if DamageReport.isLeftInPlace(notice) { throw DamageReport.refusal(notice) }
            return damage ?? notice
        }
        return damage
    }

    /// ``update(_:)``, saying on stderr first when the file was damaged (moved aside by this
    /// command or an earlier one): the write then starts the domain afresh.
    func updateSayingDamage(_ console: Console, _ change: (inout [String: Any]) throws -> Void) throws {
        if let damage = try damageFound() { DamageReport.warn(damage, starting: "the domain \(name)", console: console) }
        try update(change)
    }

    /// Its keys and values, or a refusal naming the domain when it does not exist.
    func existingContents() throws -> [String: Any] {
        guard let contents = try contents() else { throw HarnessError.refused("Domain \(name) does not exist") }
        return contents
    }

    /// Changes its keys in one locked, atomic, durable write (see ``PreferencesFile/update(_:)``).
    /// The write re-reads the file under the lock: a damaged file is moved aside and reported
    /// there, and nothing is written over it. What the change does is checked against the
    /// schemas of the sets it touches (see ``SchemaCommands/checkDefaultsChange(from:to:setRoot:schemaFor:)``);
    /// a set whose schema file is there but cannot be read is not written (see
    /// ``SchemaCommands/load(_:)``). The library refuses changes of locked keys.
    func update(_ change: (inout [String: Any]) throws -> Void) throws {
        try refusing {
            switch place {
            case .file(let file):
                // Every schema of the suite's sets lives in its `<suite>.schemas` folder: with no
                // folder there is nothing to check, nor any need to compare the whole suite.
                if file.hasSchemaFolder { try checkLocksFirst(in: file, change) }
                try file.update { contents in
                    let before = contents
                    try change(&contents)
                    guard file.hasSchemaFolder else { return }
                    try SchemaCommands.checkDefaultsChange(from: before, to: contents, setRoot: nil) { root in
                        try SchemaCommands.load(file.schemaFileURL(forRoot: root))
                    }
                }
            case .root(let store):
                // Locks first, on the set as read now (a set that cannot be read is left to the
                // write, which reports it); the write checks them again under the store's lock.
                let loaded: [String: Any]??
                do { loaded = try store.load(root: name) } catch { loaded = nil }
                if let current = loaded.map({ $0 ?? [:] }) {
                    var after = current
                    try change(&after)
                    let view = PersistentPrefs(key: name, store: store)
                    try SchemaCommands.checkLocks(from: current, to: after, isLocked: view.isLocked)
                }
                try withoutActuallyEscaping(change) { change in
                    _ = try store.apply(
                        .transform { current in
                            var updated = current
                            try change(&updated)
                            try SchemaCommands.checkDefaultsChange(from: current, to: updated, setRoot: name) { root in
                                try SchemaCommands.load(store.schemaFileURL(forRoot: root))
                            }
                            return updated
                        }, root: name)
                }
            }
        }
    }

    /// Refuses `change` of the suite in `file` when it changes a locked key of a set, before the
    /// schema check in the write reports a value outside a range: a lock is what the user can do
    /// nothing about. Checked on the file as read now; the write checks the locks again under
    /// the suite's lock.
    private func checkLocksFirst(in file: PreferencesFile, _ change: (inout [String: Any]) throws -> Void) throws {
        // A file that cannot be read is left to the write, which moves it aside and reports it.
        let read: [String: Any]?
        do { read = try file.contents() } catch { return }
        var after = read ?? [:]
        let before = after
        try change(&after)
        let folder = file.url.deletingLastPathComponent().standardizedFileURL.path
        let inPreferences = folder == PreferencesFile.preferencesDirectory.standardizedFileURL.path && file.url.pathExtension == "plist"
        let suite = inPreferences ? file.url.deletingPathExtension().lastPathComponent : file.url.path
        guard let store = UserDefaultsStore(suiteName: suite) else { return }
        for root in SchemaCommands.changedKeys(before, after) {
            guard let old = before[root] as? [String: Any] ?? (before[root] == nil ? [:] : nil),
                let new = after[root] as? [String: Any] ?? (after[root] == nil ? [:] : nil)
            else { continue }
            let view = PersistentPrefs(key: root, store: store)
            try SchemaCommands.checkLocks(from: old, to: new, isLocked: view.isLocked)
        }
    }

    /// Removes it; `false` when it did not exist.
    func remove() throws -> Bool {
        try refusing {
            switch place {
            case .file(let file):
                return try file.remove()
            case .root(let store):
                guard try store.load(root: name) != nil else { return false }
                try store.remove(root: name)
                return true
            }
        }
    }
}

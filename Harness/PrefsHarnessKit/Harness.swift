import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// The terminal harness: runs one command, or the interactive mode when there is none.
///
/// ```swift
/// let status = Harness(console: .standard()).run(["--key", "Demo", "set", "int", "7"])
/// ```
public struct Harness {
    /// The harness version, printed by `--version`.
    public static let version = "0.1.0"

    let console: Console

    /// A harness writing to `console`.
    public init(console: Console) {
        self.console = console
    }

    /// Runs the command line (without the program name) and returns the exit code:
    /// 0 success, 1 a refused operation, 2 a usage error.
    ///
    /// With `PREFS_HARNESS_TIMING=1` in the environment, prints to stderr how long the command
    /// took (parsing the arguments and running it: the work), the page faults the work took,
    /// and how long the process had been running when it began (start-up: loading the program
    /// and its libraries).
    public func run(_ arguments: [String]) -> Int32 {
        guard ProcessEnvironment.value("PREFS_HARNESS_TIMING") == "1" else { return runCommand(arguments) }
        let startedUp = Self.processAge()
        let faultsBefore = Self.pageFaults()
        let began = DispatchTime.now().uptimeNanoseconds
        let status = runCommand(arguments)
        let work = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6
        let faults = Self.pageFaults() - faultsBefore
        let startUp = startedUp.map { String(format: "%.0f ms (±10 ms)", $0 * 1e3) } ?? "unknown"
        console.error(String(format: "prefs-harness: timing: start-up %@, work %.2f ms (%ld page faults)", startUp, work, faults))
        return status
    }

    /// The page faults this process has taken so far (each first touch of a page of code or
    /// data: a share of a short command's time that instruction counts do not show).
    static func pageFaults() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
            let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
            let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return 0 }
        return usage.ru_minflt + usage.ru_majflt
    }

    /// How long this process has been running, from `/proc/self/stat` (in clock ticks: 10 ms);
    /// `nil` where there is no `/proc`.
    static func processAge() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may hold spaces): state is field 3, starttime 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]), let now = uptime.split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return now - ticks / (perSecond > 0 ? perSecond : 100)
    }

    private func runCommand(_ arguments: [String]) -> Int32 {
        do {
            switch try CommandLineParser.parse(arguments) {
            case .help(let spec):
                console.print(Self.help(spec))
                return ExitCode.success
            case .version:
                console.print("prefs-harness \(Self.version) (PersistentPrefs)")
                return ExitCode.success
            case .run(let options, let command):
                let session = try HarnessSession(options: options)
                try session.execute(command, console: console)
                return ExitCode.success
            case .interactive(let options):
                let session = try HarnessSession(options: options)
                return Interactive(session: session, console: console).run()
            }
        } catch let error as HarnessError {
            report(error)
            return error.exitCode
        } catch {
            report(.refused(String(describing: error)))
            return ExitCode.refused
        }
    }

    private func report(_ error: HarnessError) {
        switch error {
        case .usage(let message):
            console.error("prefs-harness: \(message)")
            console.error("Run 'prefs-harness --help' for usage.")
        case .refused(let message):
            console.error("prefs-harness: \(message)")
        }
    }

    /// The overview, or one command's help.
    public static func help(_ spec: CommandSpec?) -> String {
        if let spec {
            var text = "usage: prefs-harness [OPTIONS] \(spec.synopsis)\n\n\(spec.summary.prefix(1).uppercased() + spec.summary.dropFirst())."
            if spec.interactiveOnly { text = "\(spec.synopsis)   (at the interactive prompt)\n\n\(spec.summary)." }
            if !spec.details.isEmpty { text += "\n\n" + spec.details }
            return text
        }
        let width = CommandSpec.all.map(\.synopsis.count).max() ?? 0
        let lines = CommandSpec.all.map { spec in
            "  \(spec.synopsis.padding(toLength: width, withPad: " ", startingAt: 0))  \(spec.summary)\(spec.interactiveOnly ? " (interactive)" : "")"
        }
        return """
            usage: prefs-harness [--key ROOT] [--sample] [--suite NAME | --store-dir DIR] [COMMAND [ARGS]]

            View and edit the preference set stored under ROOT (default "SamplePrefs"): a
            program's set when its program wrote a schema file for it (see schema-file); the
            sample's (SamplePrefs) under "SamplePrefs", a root the sample wrote, or with
            --sample. Any other root key is refused, naming the sets that are there. Values
            are shown as the program reads them, with where each comes from (user, site FILE,
            vendor FILE, default) and whether it is locked. With no COMMAND, starts the
            interactive mode. Every command with output takes --json.

            Options:
              --key ROOT       the root key of the set
              --sample         a root key without a schema file is the sample's set
              --suite NAME     the UserDefaults suite to use (default: the standard one)
              --store-dir DIR  keep sets as property-list files in DIR instead
              --help, -h       this help; COMMAND --help for a command's
              --version        the version

            Commands:
            \(lines.joined(separator: "\n"))

            Exit codes: 0 success, 1 the library refused the operation, 2 a usage error.
            """
    }
}

/// The store and root key the commands act on.
public final class HarnessSession {
    /// The root key; `key ROOT` at the prompt changes it.
    public var rootKey: String {
        didSet { rootGiven = true }
    }
    /// Whether a root key was named (`--key`, or `key ROOT` at the prompt): `watch` without one
    /// watches every set of the store.
    private(set) var rootGiven: Bool
    /// Where the sets live. The standard suite is opened when first used: `defaults` commands
    /// never use it, and opening it reads and parses the whole standard domain.
    public var store: any PrefsStore { openedStore }
    private lazy var openedStore: any PrefsStore = UserDefaultsStore.standard
    /// The store, when it is a folder of plist files (without opening the standard suite).
    var fileStore: PlistFileStore? {
        if case .standard = storeChoice, !storeGiven { return nil }
        return store as? PlistFileStore
    }
    /// Whether a root key without a schema file is the sample's set (`--sample`); the root key
    /// ``sampleRoot`` always is.
    let sampleChosen: Bool
    /// The sample's own root key, the default one.
    public static let sampleRoot = "SamplePrefs"
    /// Whether the current root key, when it has no schema file, is the sample's set.
    var usesSample: Bool { sampleChosen || rootKey == Self.sampleRoot }
    /// The store in a sentence: `the UserDefaults suite "MyApp"`, `the folder /tmp/prefs`.
    var storePhrase: String {
        switch storeChoice {
        case .suite(let name): return "the UserDefaults suite \"\(name)\""
        case .directory(let path): return "the folder \(path)"
        case .standard: return storeGiven ? "the \(storeDescription)" : "the harness's standard suite"
        }
    }
    /// Whether the store was handed to ``init(rootKey:store:storeDescription:sample:)``.
    private let storeGiven: Bool
    /// The store in words, for the interactive screen.
    public let storeDescription: String
    /// Where `settings` keeps the SettingsManageable demo files (`nil`: the default folder).
    let settingsDirectory: URL?
    /// The store the options chose.
    let storeChoice: StoreChoice

    /// Opens the store the options name.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` when it cannot be opened.
    public init(options: HarnessOptions) throws {
        rootKey = options.key ?? Self.sampleRoot
        rootGiven = options.key != nil
        sampleChosen = options.sample
        storeChoice = options.store
        storeGiven = false
        var chosen: (any PrefsStore)?
        switch options.store {
        case .standard:
            storeDescription = "UserDefaults (standard)"
            settingsDirectory = nil
        case .suite(let name):
            guard let opened = UserDefaultsStore(suiteName: name) else {
                throw HarnessError.usage("the UserDefaults suite '\(name)' cannot be opened")
            }
            chosen = opened
            storeDescription = "UserDefaults suite \(name)"
            settingsDirectory = nil
        case .directory(let path):
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                throw HarnessError.usage("--store-dir '\(path)' exists and is not a directory")
            }
            chosen = PlistFileStore(directory: URL(fileURLWithPath: path))
            storeDescription = "files in \(path)"
            settingsDirectory = URL(fileURLWithPath: path).appendingPathComponent("settings")
        }
        if let chosen { openedStore = chosen }
    }

    /// A session over an explicit store (for tests).
    ///
    /// - Parameter sample: Whether a root key without a schema file is the sample's set (as
    ///   `--sample`); a store that keeps no schema files (``InMemoryStore``, a custom store)
    ///   only ever holds the sample's.
    public init(rootKey: String = HarnessSession.sampleRoot, store: any PrefsStore, storeDescription: String = "custom store", sample: Bool = false) {
        self.rootKey = rootKey
        rootGiven = true
        sampleChosen = sample
        storeGiven = true
        self.storeDescription = storeDescription
        settingsDirectory = nil
        storeChoice = .standard
        openedStore = store
    }

    /// The sample set under the current root key, as stored now. Each command makes its own
    /// instance and drops it, so the set is loaded afresh and its reads start no change watcher
    /// (`watch` observes, which does).
    func prefs() throws -> SamplePrefs {
        let prefs = SamplePrefs(key: rootKey, store: store)
        // Damage is said before a write begins (see `execute`); the write starts the set afresh.
        if DamageReport.notice(in: prefs.lastError) == nil { try Self.check(prefs) }
        return prefs
    }

    /// The set under the current root key as stored (sets are live: another program's write is
    /// seen without a reload), without writing the sample defaults into an empty set (what the
    /// interactive screen shows).
    func storedValues() throws -> [String: Any] {
        let view = PersistentPrefs(key: rootKey, store: store)
        try Self.check(view)
        return view.values
    }

    /// Runs one command; output goes to `console`.
    ///
    /// - Throws: ``HarnessError``; a refused or unparsable command changes nothing.
    public func execute(_ command: Command, console: Console) throws {
        try DamageReport.$acknowledgement.withValue(acknowledgeCommand) {
            // The commands that read or write the set under the root key say when its file was
            // damaged: a read is refused, and so is a write of a file left in place; a write of
            // one moved aside is warned and goes on (see DamageReport).
            let name = command.spec.name
            // The other commands on a set meet the check in `HarnessSet.of`.
            if Self.setCommandsWithoutSchema.contains(name) { try checkSampleMeant() }
            guard Self.setReads.contains(name) || Self.setWrites.contains(name) else { return try run(command, console: console) }
            // Kept for the whole command: the command's own instances then share the set it loaded.
            let view = PersistentPrefs(key: rootKey, store: store)
            if let damage = DamageReport.notice(in: view.lastError) {
                if Self.setReads.contains(name) || DamageReport.isLeftInPlace(damage) { throw DamageReport.refusal(damage) }
                DamageReport.warn(damage, starting: "the set \"\(rootKey)\"", console: console)
            }
            try withExtendedLifetime(view) { try run(command, console: console) }
        }
    }

    /// Refuses a command on the set under the root key when no root key was named (`--key`,
    /// `--sample`, or `key ROOT` at the prompt) and the named suite or folder holds sets, none of
    /// them the sample's: the sample's set was not what was meant (see
    /// ``HarnessSet/sampleNotThere(_:roots:)``). A store that cannot be listed is left to the
    /// command, which reports why.
    func checkSampleMeant() throws {
        guard !rootGiven, !sampleChosen, rootKey == Self.sampleRoot, storeChoice != .standard,
            let roots = try? store.roots(), !roots.isEmpty, !roots.contains(rootKey)
        else { return }
        throw HarnessSet.sampleNotThere(self, roots: roots)
    }

    /// The command line that acknowledges damage of this session's store file (see
    /// ``DamageReport``), naming the root key where the store keeps a file per set, or one was given.
    var acknowledgeCommand: String {
        DamageReport.command(store: storeChoice, root: fileRoot)
    }

    /// The root key that names the store file damage is acknowledged for: always in a folder,
    /// which keeps a file per set; in a suite, whose one file holds every set, only when given.
    private var fileRoot: String? {
        if case .directory = storeChoice { return rootKey }
        return rootGiven ? rootKey : nil
    }

    /// Acknowledges the damage of `view`'s store file (the library's `acknowledgeDamage()`),
    /// Ctrl-C held back meanwhile; returns where a file was moved.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` with the library's reason when it fails.
    private func acknowledgeDamage(of view: PersistentPrefs) throws -> URL? {
        let aside = try write { view.acknowledgeDamage() }
        if let error = view.lastError { throw HarnessError.refused(error) }
        return aside
    }

    private func run(_ command: Command, console: Console) throws {
        switch command.spec.name {
        case "list":
            try list(json: command.json, console: console)
        case "get":
            // A read: it never creates the set (nor a suite file). The value goes to stdout, where
            // it comes from to stderr.
            let set = try HarnessSet.of(self)
            let key = try set.key(command.arguments[0])
            let shown = try set.shown(key.name, session: self)
            guard let value = shown.value else {
                guard key.isOptional else {
                    throw HarnessError.refused("\(key.name) is not set under the root key \"\(rootKey)\" and has no default")
                }
                // An optional key that holds nothing reads nil: nothing on stdout (null in JSON).
                if command.json { return console.print(ValueFormatter.jsonText(shown.json)) }
                return console.error("(\(key.name): nothing stored under \"\(rootKey)\": the program reads nil)")
            }
            console.print(command.json ? ValueFormatter.jsonText(shown.json) : ValueFormatter.text(value))
            // Quiet for the user's own value, as a lookup that found what was stored.
            if !command.json, shown.source != "user" || shown.locked {
                console.error("(\(key.name): \(Self.describeSource(shown, root: rootKey)))")
            }
            if !command.json, shown.shapeUnchecked {
                console.error("(\(key.name): shape not checked: the schema cannot tell every value its program reads back as \(set.typeName(key)))")
            }
        case "list-keys", "describe", "range", "writable", "schema-file":
            try SchemaCommands.run(command, session: self, console: console)
        case "set":
            let set = try HarnessSet.of(self)
            let (key, text) = try set.keyAndValue(command.arguments, command: "set")
            try set.check(nil, for: key, in: PersistentPrefs(key: rootKey, store: store))
            let value = try set.parse(text, for: key)
            guard let stored = try set.write([(key, value)], session: self)[key.name] ?? value else {
                return console.print(command.json ? Self.json(["key": key.name, "value": NSNull()]) : "\(key.name) = nil (removed)")
            }
            console.print(command.json ? Self.json(["key": key.name, "value": stored]) : "\(key.name) = \(ValueFormatter.text(stored))")
        case "batch":
            let set = try HarnessSet.of(self)
            let changes = try BatchInput.read(from: console, set: set)
            try set.write(changes.map { ($0.key, $0.value) }, session: self)
            let noun = changes.count == 1 ? "change" : "changes"
            console.print(
                command.json ? Self.json(["root": rootKey, "changes": changes.count]) : "Wrote \(changes.count) \(noun) to \"\(rootKey)\" in one batch.")
        case "incr":
            let set = try HarnessSet.of(self)
            let key = try set.key(command.arguments[0])
            guard key.kind == "integer" else { throw HarnessError.usage("incr works on integer keys; \(key.name) holds \(set.typeName(key))") }
            let by = command.arguments.count > 1 ? command.arguments[1] : "1"
            let step = try ValueParser.integer(by, for: "the amount to add")
            let result = try set.increment(key, by: step, session: self)
            console.print(command.json ? Self.json(["key": key.name, "value": result]) : "\(key.name) = \(result)")
        case "reset":
            let set = try HarnessSet.of(self)
            if set.isSample {
                let prefs = try prefs()
                try write {
                    prefs.reset()
                    try Self.check(prefs)
                }
            } else {
                // A program's set reads its defaults when the user's values are gone: every value
                // of the user's is removed but a locked key's (the lock keeps it as it is).
                let view = PersistentPrefs(key: rootKey, store: store)
                let stored = view.values
                let removals = set.keys.filter { stored[$0.name] != nil && !view.isLocked($0.name) }
                if !removals.isEmpty { try set.write(removals.map { ($0, nil) }, session: self) }
            }
            // A set whose damaged file was moved aside holds nothing to remove: the reset is the
            // user's word that the values in the copy are done with (the warning named it).
            let after = PersistentPrefs(key: rootKey, store: store)
            if DamageReport.notice(in: after.lastError) != nil { _ = try acknowledgeDamage(of: after) }
            if command.json {
                console.print(ValueFormatter.jsonText(try set.shown(session: self).map(\.json)))
            } else {
                console.print(set.isSample ? "Reset \"\(rootKey)\" to the sample defaults." : "Reset \"\(rootKey)\": removed the user's values; the set reads its defaults.")
            }
        case "delete":
            guard try refusing({ try store.load(root: rootKey) }) != nil else {
                throw HarnessError.refused("Nothing is stored under the root key \"\(rootKey)\", so nothing was deleted.")
            }
            try write { try store.remove(root: rootKey) }
            PersistentPrefs(key: rootKey, store: store).flush()  // drop this process's cached copy
            console.print(command.json ? Self.json(["root": rootKey, "deleted": true]) : "Removed the set under the root key \"\(rootKey)\".")
        case "acknowledge":
            // The damage reported for the set's own store file (its layers' files are the
            // administrator's, and not the library's to move).
            let view = PersistentPrefs(key: rootKey, store: store)
            let damage = DamageReport.notice(in: view.lastError)
            let aside = try acknowledgeDamage(of: view)
            let named = fileRoot
            if command.json {
                let fields: [String: Any] = [
                    "root": named ?? NSNull(), "movedTo": aside?.path ?? NSNull(), "acknowledged": damage?.description ?? NSNull(),
                ]
                return console.print(Self.json(fields))
            }
            if let aside, case .corruptStore(let path, _)? = damage {
                console.print("Moved \(path) aside, byte for byte, to \(aside.path) (the library could not read it exactly). The sets it held read as empty; the next write starts the file afresh.")
            } else if let damage {
                console.print("Acknowledged, and no longer reported: \(damage.description)")
            } else {
                console.print("Nothing to acknowledge: no damage is reported for \(named.map { "the set \"\($0)\" in " } ?? "")\(storePhrase).")
            }
        case "roots":
            let roots = try refusing { try store.roots() }
            if command.json {
                console.print(ValueFormatter.jsonText(roots))
            } else {
                roots.forEach { console.print($0) }
            }
        case "dump":
            guard let stored = try refusing({ try store.load(root: rootKey) }) else {
                let roots = (try? store.roots()) ?? []
                let there = roots.isEmpty ? "" : " The sets there are " + roots.quotedList + "."
                throw HarnessError.refused("Nothing is stored under the root key \"\(rootKey)\".\(there)")
            }
            if command.json { return console.print(ValueFormatter.jsonText(stored)) }
            let data = try refusing {
                try PlistWriting.data(stored, format: .xml)
            }
            console.write(String(decoding: data, as: UTF8.self))
        case "defaults":
            try DefaultsTool.run(command.arguments, json: command.json, session: self, console: console)
        case "migrate":
            try migrate(dryRun: command.flags.contains("--dry-run"), json: command.json, console: console)
        case "settings":
            try SettingsCommand.run(command.arguments, json: command.json, settingsDirectory: settingsDirectory, console: console)
        case "sync":
            try SyncCommands.sync(
                folder: command.arguments[0], watch: command.flags.contains("--watch"), json: command.json, session: self, console: console)
        case "sync-status":
            try SyncCommands.status(folder: command.arguments[0], json: command.json, session: self, console: console)
        case "watch" where command.arguments.isEmpty && !rootGiven:
            try WatchCommand.runWholeStore(json: command.json, session: self, console: console, until: { WatchCommand.waitForInterrupt() })
        case "watch":
            try WatchCommand.run(
                names: command.arguments, json: command.json, session: self, console: console,
                until: { WatchCommand.waitForInterrupt() })
        default:
            throw HarnessError.usage("\(command.spec.name) works only at the interactive prompt")
        }
    }

    /// `migrate [--dry-run]`: runs the sample's pending migration steps, or shows them.
    func migrate(dryRun: Bool, json: Bool, console: Console) throws {
        // The steps are the sample's: a program's set is migrated by its program only.
        if let file = try HarnessSet.of(self).file {
            throw HarnessError.refused(
                "The set \"\(rootKey)\" is a program's set (schema file \(file)): only its program knows its migration steps, and migrates it when it next runs; nothing was changed.")
        }
        // Never creates the set: an empty root key has nothing to migrate.
        guard let stored = try refusing({ try store.load(root: rootKey) }), !stored.isEmpty else {
            throw HarnessError.refused("Nothing is stored under the root key \"\(rootKey)\"; there is nothing to migrate.")
        }
        let report = try refusing {
            // Not empty, so opening it writes no defaults.
            let prefs = PersistentPrefs.withoutAutomaticMigration { SamplePrefs(key: rootKey, store: store) }
            return try dryRun ? prefs.migrationPreview() : prefs.migrate()
        }
        if json {
            let object: [String: Any] = [
                "root": rootKey, "from": report.fromVersion, "to": report.toVersion, "steps": report.steps,
                "before": report.before, "after": report.after,
            ]
            console.print(ValueFormatter.jsonText(object))
            return
        }
        guard !report.steps.isEmpty else {
            console.print("The set \"\(rootKey)\" is at version \(report.fromVersion), the sample's version; there is nothing to migrate.")
            return
        }
        console.print("\(dryRun ? "Would migrate" : "Migrated") \"\(rootKey)\" from version \(report.fromVersion) to \(report.toVersion):")
        report.steps.forEach { console.print("  \($0)") }
        console.print("Before:")
        show(report.before, json: false, console: console)
        console.print("After:")
        show(report.after, json: false, console: console)
        console.print(dryRun ? "Nothing was written (dry run)." : "Written in one store write.")
    }

    /// The set as an aligned table (or JSON): every key's value as programs read it, its type,
    /// where it comes from and whether it is locked. A read: it never creates the set.
    func list(json: Bool, console: Console) throws {
        let set = try HarnessSet.of(self)
        let rows = try set.shown(session: self)
        if json {
            console.print(ValueFormatter.jsonText(rows.map(\.json)))
            return
        }
        if let file = set.file { console.print("Schema file: \(file)") }
        for line in table(rows, console: console) { console.print(line) }
    }

    /// The commands on the set under the root key that do not read its schema (see
    /// ``checkSampleMeant()``).
    static let setCommandsWithoutSchema: Set = ["delete", "dump", "schema-file"]

    /// The commands that read the set under the root key, and those that write it.
    static let setReads: Set = ["list", "get", "dump", "delete", "migrate", "roots"]
    static let setWrites: Set = ["set", "batch", "incr", "reset", "sync"]

    /// Where a value comes from, in words (what `get` prints to stderr).
    static func describeSource(_ shown: HarnessSet.Shown, root: String) -> String {
        let lock = shown.locked ? "locked by the system administrator; " : ""
        switch shown.source {
        case "user": return "\(lock)the user's value, stored under \"\(root)\""
        case "site": return "\(lock)not stored under \"\(root)\": from the site defaults file \(shown.file ?? "")"
        case "vendor": return "\(lock)not stored under \"\(root)\": from the vendor defaults file \(shown.file ?? "")"
        case "managed": return "\(lock)forced by the system (managed preferences)"
        case "registered": return "\(lock)not stored under \"\(root)\": a registered default"
        case "file default": return "\(lock)not stored under \"\(root)\": from the set's defaults file"
        default: return "\(lock)not stored under \"\(root)\": the default declared in code"
        }
    }

    /// Prints `values` as the aligned table, or as JSON.
    func show(_ values: [String: Any], json: Bool, console: Console) {
        if json {
            console.print(ValueFormatter.jsonText(values))
            return
        }
        // The sample's keys first (what `migrate` shows), then any others.
        let sample = HarnessSet(schema: SchemaCommands.sampleSchema(rootKey), file: nil, root: rootKey)
        var rows = sample.keys.map { key in
            HarnessSet.Shown(
                key: key.name, value: values[key.name], source: "user", file: nil, locked: false,
                type: values[key.name].map { sample.typeName($0, for: key) } ?? sample.typeName(key), known: true)
        }
        for (name, value) in values.sorted(by: { $0.key < $1.key }) where sample.schema[name] == nil && name != PersistentPrefs.schemaVersionKey {
            rows.append(HarnessSet.Shown(key: name, value: value, source: "user", file: nil, locked: false, type: "(not a sample key)", known: false))
        }
        for line in table(rows, console: console, sources: false) { console.print(line) }
    }

    /// The rows of the table: key, type, value, and (with `sources`) where the value comes from
    /// (`user`, `site FILE`, `vendor FILE`, `default`, …, with `, locked`). On a terminal, rows
    /// are cut with "…" to its width rather than wrapping through the columns.
    func table(_ shown: [HarnessSet.Shown], console: Console, sources: Bool = true) -> [String] {
        var rows: [[String]] = [sources ? ["Key", "Type", "Value", "Source"] : ["Key", "Type", "Value"]]
        for row in shown {
            rows.append(sources ? [row.key, row.type, row.valueText, row.sourceText] : [row.key, row.type, row.valueText])
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.enumerated().map { index, row in
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            var line = "  " + cells.joined(separator: "  ")
            if let width = console.width, line.count > width { line = String(line.prefix(max(width - 1, 1))) + "…" }
            return index == 0 ? console.styled(line, .dim) : line
        }
    }

    /// A small JSON object on one line (booleans as `true`/`false`).
    static func json(_ object: [String: Any]) -> String {
        let members = object.sorted { $0.key < $1.key }.map { key, value -> String in
            let text = type(of: value) == Bool.self ? String(describing: value) : ValueFormatter.jsonText(value)
            return ValueFormatter.jsonText(key) + ":" + text
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    @discardableResult
    private func write<Result>(_ body: () throws -> Result) throws -> Result {
        try refusing { try SignalGuard.deferringSignals(body) }
    }

    private static func check(_ prefs: PersistentPrefs) throws {
        if let error = prefs.lastError { throw HarnessError.refused(error) }
    }
}

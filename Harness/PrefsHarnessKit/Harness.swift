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
            usage: prefs-harness [--key ROOT] [--suite NAME | --store-dir DIR] [COMMAND [ARGS]]

            View and edit the sample preference set (SamplePrefs) stored under ROOT
            (default "SamplePrefs"). With no COMMAND, starts the interactive mode.

            Options:
              --key ROOT       the root key of the set
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
    /// Whether the store was handed to ``init(rootKey:store:storeDescription:)``.
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
        rootKey = options.key ?? "SamplePrefs"
        rootGiven = options.key != nil
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
    public init(rootKey: String = "SamplePrefs", store: any PrefsStore, storeDescription: String = "custom store") {
        self.rootKey = rootKey
        rootGiven = true
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
        let prefs = SamplePrefs(readingOnce: rootKey, store: store)
        try Self.check(prefs)
        return prefs
    }

    /// The set under the current root key as stored (sets are live: another program's write is
    /// seen without a reload), without writing the sample defaults into an empty set (what the
    /// interactive screen shows).
    func storedValues() throws -> [String: Any] {
        try shownSet().stored
    }

    /// The set as stored and as programs read it (over the system layers, with locked keys).
    func shownSet() throws -> ShownSet {
        let view = PersistentPrefs(key: rootKey, store: store)
        view.readsOnce()  // read once and dropped, as ``prefs()``'s instances
        try Self.check(view)
        let stored = view.values
        let effective = view.effectiveValues
        let locked = Set(effective.keys.filter(view.isLocked)).union(view.lockedKeys)
        return ShownSet(stored: stored, effective: effective, locked: view.isForced ? nil : locked)
    }

    /// Runs one command; output goes to `console`.
    ///
    /// - Throws: ``HarnessError``; a refused or unparsable command changes nothing.
    public func execute(_ command: Command, console: Console) throws {
        switch command.spec.name {
        case "list":
            try list(json: command.json, console: console)
        case "get":
            // A read: it never creates the set (nor a suite file), and shows the sample's default
            // for a key that is not stored, saying so on stderr.
            let key = try SampleKey.named(command.arguments[0])
            let shown = try shownSet()
            guard let value = shown.effective[key.name] ?? SamplePrefs.sampleDefaults[key.name] else {
                throw HarnessError.refused("\(key.name) is not set under the root key \"\(rootKey)\"")
            }
            console.print(command.json ? ValueFormatter.jsonText(value, pretty: false) : ValueFormatter.text(value))
            switch shown.source(of: key.name) {
            case .stored: break
            case .locked: console.error("(\(key.name) is locked by the system administrator: this is the value the system sets)")
            case .system: console.error("(\(key.name) is not stored under \"\(rootKey)\": this is a system default)")
            case .sampleDefault: console.error("(\(key.name) is not stored under \"\(rootKey)\": this is the sample's default)")
            }
        case "list-keys", "describe", "range", "writable":
            try SchemaCommands.run(command, session: self, console: console)
        case "set":
            if try SchemaCommands.set(command, session: self, console: console) { return }
            let key = try SampleKey.named(command.arguments[0])
            let value = try ValueParser.parse(command.arguments[1], for: key)
            let prefs = try prefs()
            try write { try prefs.set(value, forKey: key.name) }
            let stored = prefs[key.name] ?? value
            console.print(command.json ? Self.json(["key": key.name, "value": stored]) : "\(key.name) = \(ValueFormatter.text(stored))")
        case "batch":
            let changes = try BatchInput.read(from: console)
            let prefs = try prefs()
            try write {
                try prefs.transaction { prefs in
                    for change in changes { try prefs.set(change.value, forKey: change.key.name) }
                }
            }
            let noun = changes.count == 1 ? "change" : "changes"
            console.print(
                command.json ? Self.json(["root": rootKey, "changes": changes.count]) : "Wrote \(changes.count) \(noun) to \"\(rootKey)\" in one batch.")
        case "incr":
            let key = try SampleKey.named(command.arguments[0])
            guard key == .int else { throw HarnessError.usage("incr works on integer keys; \(key.name) holds \(key.typeName)") }
            let by = command.arguments.count > 1 ? command.arguments[1] : "1"
            guard let step = Int(by) else { throw HarnessError.usage("'\(by)' is not an integer to add") }
            let prefs = try prefs()
            let start = prefs.declaredDefaults[key.name] as? Int ?? 0
            var result = 0
            try write {
                try prefs.update { set in
                    let stored = set[key.name] ?? start
                    guard let current = stored as? Int else {
                        throw HarnessError.refused("\(key.name) holds \(ValueFormatter.text(stored)), not an integer; nothing was written")
                    }
                    let (sum, overflow) = current.addingReportingOverflow(step)
                    guard !overflow else {
                        throw HarnessError.refused("\(current) + \(step) does not fit in an integer; nothing was written")
                    }
                    set[key.name] = sum
                    result = sum
                }
            }
            console.print(command.json ? Self.json(["key": key.name, "value": result]) : "\(key.name) = \(result)")
        case "reset":
            let prefs = try prefs()
            try write {
                prefs.reset()
                try Self.check(prefs)
            }
            console.print(command.json ? ValueFormatter.jsonText(prefs.values, pretty: true) : "Reset \"\(rootKey)\" to the sample defaults.")
        case "delete":
            guard try refusing({ try store.load(root: rootKey) }) != nil else {
                throw HarnessError.refused("Nothing is stored under the root key \"\(rootKey)\", so nothing was deleted.")
            }
            try write { try store.remove(root: rootKey) }
            PersistentPrefs(key: rootKey, store: store).flush()  // drop this process's cached copy
            console.print(command.json ? Self.json(["root": rootKey, "deleted": true]) : "Removed the set under the root key \"\(rootKey)\".")
        case "roots":
            let roots = try refusing { try store.roots() }
            if command.json {
                console.print(ValueFormatter.jsonText(roots, pretty: false))
            } else {
                roots.forEach { console.print($0) }
            }
        case "dump":
            guard let stored = try refusing({ try store.load(root: rootKey) }) else {
                throw HarnessError.refused("Nothing is stored under the root key \"\(rootKey)\".")
            }
            if command.json { return console.print(ValueFormatter.jsonText(stored, pretty: true)) }
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
            console.print(ValueFormatter.jsonText(object, pretty: true))
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

    /// The set as an aligned table (or JSON). A read: it never creates the set; keys that are
    /// not stored show the sample's defaults, marked as such.
    func list(json: Bool, console: Console) throws {
        let shown = try shownSet()
        if json {
            // The values a program reading the set sees: stored (or set by the system layers),
            // else the sample's default.
            show(shown.effective.merging(SamplePrefs.sampleDefaults) { stored, _ in stored }, json: true, console: console)
        } else {
            for line in table(shown, console: console) { console.print(line) }
        }
    }

    /// Prints `values` as the aligned table, or as JSON.
    func show(_ values: [String: Any], json: Bool, console: Console) {
        if json {
            console.print(ValueFormatter.jsonText(values, pretty: true))
            return
        }
        for line in table(ShownSet(stored: values), console: console) { console.print(line) }
    }

    /// The rows of the table: key, type, value; the sample's keys first (a key that is not
    /// stored shows the sample's default, marked "(default, not stored)"), then any others. On a
    /// terminal, rows are cut with "…" to its width rather than wrapping through the columns.
    func table(_ shown: ShownSet, console: Console) -> [String] {
        var rows: [(String, String, String)] = [("Key", "Type", "Value")]
        let defaults = SamplePrefs.sampleDefaults
        let values = shown.effective
        for key in SampleKey.allCases {
            guard let value = values[key.name] else {
                let text = defaults[key.name].map { ValueFormatter.text($0) + "  (\(shown.source(of: key.name).tag ?? "default, not stored"))" } ?? "(not set)"
                rows.append((key.name, key.typeName, text))
                continue
            }
            let note = shown.source(of: key.name).tag.map { "  (\($0))" } ?? ""
            rows.append((key.name, ValueFormatter.typeName(value, for: key), ValueFormatter.text(value) + note))
        }
        let known = Set(SampleKey.allCases.map(\.name))
        for (name, value) in values.sorted(by: { $0.key < $1.key }) where !known.contains(name) {
            rows.append((name, "(not a sample key)", ValueFormatter.text(value)))
        }
        let nameWidth = rows.map(\.0.count).max() ?? 0
        let typeWidth = rows.map(\.1.count).max() ?? 0
        return rows.enumerated().map { index, row in
            let name = row.0.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let type = row.1.padding(toLength: typeWidth, withPad: " ", startingAt: 0)
            var line = "  \(name)  \(type)  \(row.2)"
            if let width = console.width, line.count > width { line = String(line.prefix(max(width - 1, 1))) + "…" }
            return index == 0 ? console.styled(line, .dim) : line
        }
    }

    /// A small JSON object on one line (booleans as `true`/`false`).
    static func json(_ object: [String: Any]) -> String {
        let members = object.sorted { $0.key < $1.key }.map { key, value -> String in
            let text = type(of: value) == Bool.self ? String(describing: value) : ValueFormatter.jsonText(value, pretty: false)
            return ValueFormatter.jsonText(key, pretty: false) + ":" + text
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    private func write(_ body: () throws -> Void) throws {
        try refusing { try SignalGuard.deferringSignals(body) }
    }

    private static func check(_ prefs: PersistentPrefs) throws {
        if let error = prefs.lastError { throw HarnessError.refused(error.description) }
    }
}

/// A set as the harness shows it: the user's stored values, and what programs read (the stored
/// values over the system layers, locked keys at their mandatory values).
struct ShownSet {
    let stored: [String: Any]
    let effective: [String: Any]
    /// The locked keys; `nil` when the whole set is locked.
    let locked: Set<String>?

    /// A set without system layers.
    init(stored: [String: Any]) {
        self.init(stored: stored, effective: stored, locked: [])
    }

    init(stored: [String: Any], effective: [String: Any], locked: Set<String>?) {
        self.stored = stored
        self.effective = effective
        self.locked = locked
    }

    /// Where a key's value comes from.
    enum Source {
        case stored, locked, system, sampleDefault

        /// What the table shows after the value (`nil`: nothing).
        var tag: String? {
            switch self {
            case .stored: return nil
            case .locked: return "locked"
            case .system: return "system default, not stored"
            case .sampleDefault: return "default, not stored"
            }
        }
    }

    /// Where `key`'s value comes from.
    func source(of key: String) -> Source {
        if locked?.contains(key) ?? true { return .locked }
        if stored[key] != nil { return .stored }
        return effective[key] != nil ? .system : .sampleDefault
    }
}

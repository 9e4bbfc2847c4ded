import Foundation

/// Where the harness keeps its sets.
public enum StoreChoice: Equatable, Sendable {
    /// `UserDefaults.standard` (named after the program on Linux).
    case standard
    /// The `UserDefaults` suite of this name (`--suite NAME`).
    case suite(String)
    /// A ``PersistentPrefs/PlistFileStore`` in this directory (`--store-dir DIR`).
    case directory(String)
}

/// The options before the command.
public struct HarnessOptions: Equatable, Sendable {
    /// The root key (`--key ROOT`); `nil` means "SamplePrefs".
    public var key: String?
    /// The store (`--suite NAME` or `--store-dir DIR`).
    public var store: StoreChoice = .standard
    /// `--sample`: a root key without a schema file is the sample's set (`SamplePrefs`). Without
    /// it, only the root key "SamplePrefs" and roots whose schema file the sample wrote are.
    public var sample: Bool
    /// Creates the default options.
    public init(key: String? = nil, store: StoreChoice = .standard, sample: Bool = false) {
        self.key = key
        self.store = store
        self.sample = sample
    }
}

/// One command and its arguments.
public struct Command: Equatable, Sendable {
    /// The command's entry in ``CommandSpec/all``.
    public var spec: CommandSpec
    /// Its positional arguments, checked against the spec's arity.
    public var arguments: [String]
    /// `--json` was given.
    public var json: Bool
    /// The command's own flags that were given (see ``CommandSpec/flags``), such as `--dry-run`.
    public var flags: Set<String>

    /// A command with its arguments.
    public init(spec: CommandSpec, arguments: [String], json: Bool = false, flags: Set<String> = []) {
        self.spec = spec
        self.arguments = arguments
        self.json = json
        self.flags = flags
    }
}

/// What the command line asks for.
public enum Invocation: Equatable, Sendable {
    /// Print help: the overview (`nil`) or one command's.
    case help(CommandSpec?)
    /// Print the version.
    case version
    /// Run one command, then exit.
    case run(HarnessOptions, Command)
    /// No command: the interactive mode.
    case interactive(HarnessOptions)
}

/// A command the harness knows: the table that drives parsing, help and dispatch.
public struct CommandSpec: Equatable, Sendable {
    /// The command word.
    public let name: String
    /// Placeholders of its positional arguments; a trailing `?` marks an optional one, a
    /// trailing `...` a last one that takes any number of words (none included), a trailing `+`
    /// a last one that takes one word or more.
    public let arguments: [String]
    /// One line for the overview.
    public let summary: String
    /// The rest of its help.
    public let details: String
    /// Whether it takes `--json`.
    public let acceptsJSON: Bool
    /// Whether it exists only at the interactive prompt.
    public let interactiveOnly: Bool
    /// The flags of its own it takes (`--dry-run`), beside `--json` and `--help`.
    public let flags: [String]

    /// Every command, in the order help lists them.
    public static let all: [CommandSpec] = [
        CommandSpec(
            name: "list", arguments: [], summary: "show every key of the set with its type, value and source",
            details: """
                The values are the ones the set's program reads: the user's, else the site or vendor
                defaults file's, else the default declared in code. Source says which (user, site
                FILE, vendor FILE, registered, managed, file default, default), with ", locked" for
                a key an administrator locked. A program's set (one with a schema file) starts with
                the schema file's path. --json prints a JSON array of
                {"key", "type", "value", "source", "file", "locked"} objects.
                """, acceptsJSON: true),
        CommandSpec(
            name: "get", arguments: ["NAME"], summary: "show one value",
            details: """
                The value the set's program reads, on stdout; where it comes from on stderr. NAME is
                a key of the set's schema; for the sample's set also an alias: int, string, array,
                dict, date. --json prints {"key", "type", "value", "source", "file", "locked"}.
                """,
            acceptsJSON: true),
        CommandSpec(
            name: "set", arguments: ["NAME", "VALUE+"], summary: "store VALUE, parsed for the key's type",
            details: """
                NAME is the first word, or the leading words that name a key with spaces
                (Integer Value 42 or "Integer Value" 42); the words after it, joined by one space,
                are VALUE (set string hello world). Quote a VALUE to keep its spaces or quotes:
                set dict '{"k": "v w"}'. The same rule reads batch lines, piped lines and the prompt.
                int: an integer (42, -7). string: any text. array: a, b, c or a JSON array of
                strings. dict: k=v,k=v or a JSON object of strings. date: ISO 8601
                (2024-05-01T12:00:00Z, 2024-05-01) or now. On a program's set (one with a schema
                file), VALUE is parsed for the key's kind: integer, real, a boolean (true/false,
                yes/no, on/off, 1/0), text ('' for an empty string), ISO 8601 date, Base64 data,
                JSON array or object; the schema's range, choices and a Codable value's shape are
                checked. An optional key takes null to make it nil, and a key of no declared type
                null to remove the user's value ("'null'", single quotes kept, is the string). A locked key is refused
                before its range. Put -- before a VALUE that starts with --. --json prints
                {"key": …, "value": …}.
                """, acceptsJSON: true),
        CommandSpec(
            name: "batch", arguments: [], summary: "apply NAME VALUE lines from stdin as one batch",
            details: """
                One change per line, read as set's NAME VALUE… (words split as a shell splits
                them: a quoted key or value is one word).
                Blank lines and lines starting with # are skipped. The changes are written
                together, in one durable write: a program reading the set sees all of them or
                none. If any line does not parse or is refused, nothing is written (exit 1).
                --json prints {"root": …, "changes": N}.
                """, acceptsJSON: true),
        CommandSpec(
            name: "incr", arguments: ["NAME", "BY?"], summary: "add BY (default 1) to an integer, atomically",
            details: """
                Reads the value under the store's lock and writes the sum in the same step, so
                increments by any number of processes at once are never lost. A key that is not
                set counts from its value as read (site or vendor defaults), else its default; the
                sum is checked against the key's range. --json prints {"key": …, "value": …}.
                """, acceptsJSON: true),
        CommandSpec(
            name: "reset", arguments: [], summary: "put the set back to its defaults",
            details: """
                The sample's set gets the sample defaults written. A program's set has the user's
                values of its schema's keys removed, so it reads its defaults (site, vendor, then
                the ones declared in code); locked keys are left as they are. --json prints the set
                as list --json does.
                """, acceptsJSON: true),
        CommandSpec(
            name: "delete", arguments: [], summary: "remove the set (its root key) from the store",
            details: "A root key that holds nothing is refused (exit 1). --json prints {\"root\": …, \"deleted\": true}.",
            acceptsJSON: true),
        CommandSpec(
            name: "acknowledge", arguments: [], summary: "stop reporting the set's damaged file, moving it aside if it is still there",
            details: """
                What the library's acknowledgeDamage() does. A file no property-list reader reads
                is moved aside (FILE.corrupt-…) by the command that finds it and reported until a
                file is in its place again: acknowledge ends the report, and the set reads as
                empty. A property list the library cannot keep exactly (another program's, say) is
                left in its place, and every write of it is refused: acknowledge moves it aside,
                byte for byte, so the set starts afresh. A suite's file holds every set of the
                suite; a --store-dir set has a file of its own. The files of the system layers
                (site, vendor) are the administrator's, and left alone. --json prints {"root": …
                (null for a suite without --key), "movedTo": PATH or null, "acknowledged": the
                report that ended, or null}.
                """, acceptsJSON: true),
        CommandSpec(name: "roots", arguments: [], summary: "list the root keys in the store", details: "", acceptsJSON: true),
        CommandSpec(
            name: "dump", arguments: [], summary: "print the stored set as an XML property list",
            details: "Read straight from the store, not through the library's cache. --json prints it as JSON.",
            acceptsJSON: true),
        CommandSpec(
            name: "settings", arguments: ["ACTION", "TYPE?", "NAME?", "VALUE?"],
            summary: "show, set or reset the SettingsManageable demo types",
            details: """
                settings show [app|player]         every setting with its type and value
                settings set app|player NAME VALUE  change one setting and save the file
                settings reset [app|player]        back to the defaults (player: the bundled file)
                app is AppSettings (playSFX, themeIndex, fontName, fontSize); player is
                PlayerSettings (team, isMale, gunType, powerLevels). The files live in DIR/settings
                with --store-dir DIR, else in the per-user settings folder. --json: show as a JSON
                object (each setting's value as text), set as {"type.name": value}, reset as the
                list of types reset.
                """, acceptsJSON: true),
        CommandSpec(
            name: "watch", arguments: ["NAME..."], summary: "print each change of the set as it happens, until Ctrl-C",
            details: """
                One line per changed key: time, root key, key = new value ((removed) when removed),
                whoever changed it: another process using the library, plain UserDefaults code
                that synchronises, another harness. NAME… limits it to those keys (full names or
                aliases for the sample); --json prints one JSON object per line. Exit status 0 on Ctrl-C.
                Without --key and without NAME, every set in the suite or --store-dir folder is
                watched (as dconf watch /), each line naming its root key. Values shown are the
                set's as read, over the system layers (a watch of one set); as stored (the whole
                store).
                """, acceptsJSON: true),
        CommandSpec(
            name: "sync", arguments: ["FOLDER"], summary: "publish the set's changes to a sync folder and merge the other devices'",
            details: """
                FOLDER is a folder an engine replicates between machines (Syncthing, Nextcloud,
                Dropbox, iCloud Drive, a git repository); it must exist. Needs --suite: the suite's
                name and the root key name the set on every device. One pass: this device's values
                set since the last pass are written to FOLDER/SUITE/ROOT/DEVICE.plist, and every
                other device's file is merged, the value set last winning per key. Values the set's
                schema refuses (an unknown key, a wrong type, out of range, a locked key) are not
                applied; each is named. Keys the set's program keeps on this device are left out.
                Exit 0 when every value was applied, 1 when some were refused, 2 for a usage error.
                --watch keeps syncing until Ctrl-C (exit 0): a change of the set is published within
                a second, a change of the folder merged as it happens; after the first pass it
                reports each pass that applied something, refused something new, or warns.
                --json prints {"folder", "suite", "root", "applied": [keys], "refused": [{"key",
                "reason"}], "skipped": [{"path", "reason"}], "warnings": […]}, one per report.
                """, acceptsJSON: true, flags: ["--watch"]),
        CommandSpec(
            name: "sync-status", arguments: ["FOLDER"], summary: "show the devices in a sync folder and where each value came from",
            details: """
                Reads FOLDER/SUITE/ROOT (needs --suite) and writes nothing: each device with a file
                there, when it last wrote (its clock's time), and for each key the value that wins
                (or "reset") with the device that set it and when ("held when it first synced" for a
                value a device had before it joined: published so that it overwrites none). Files that are not read (damaged,
                links, another user's) are listed with why. --json prints {"folder", "devices":
                [{"device", "thisDevice", "lastWrote", "files"}], "keys": [{"key", "value",
                "reset", "device", "time"}], "skipped": [{"path", "reason"}]}.
                """, acceptsJSON: true),
        CommandSpec(
            name: "migrate", arguments: [], summary: "carry the set to the sample's schema version",
            details: """
                Runs the migration steps the stored set has not had yet, in one durable write
                under the store's lock (exactly once, however many programs open the set). With
                --dry-run it prints the steps that would run and the set before and after them,
                and writes nothing. The sample is at version 1; its step renames "Int Value"
                to "Integer Value". A set stored by a newer version is left alone (exit 1), and so
                is a program's set (one with a schema file): only its program migrates it.
                """, acceptsJSON: true, flags: ["--dry-run"]),
        CommandSpec(
            name: "defaults", arguments: ["SUBCOMMAND", "ARGS..."],
            summary: "the macOS defaults command, for any suite (or --store-dir set, or plist file)",
            details: """
                defaults domains                       the suites in the preferences folder
                defaults read [DOMAIN [KEY]]           as macOS defaults prints them; --json for JSON
                defaults read-type DOMAIN KEY          Type is string, integer, float, boolean, date,
                                                       data, array or dictionary
                defaults write DOMAIN KEY VALUE        VALUE as property-list text: a bare word is a
                                                       string; ( a, b ), { k = v; }, <integer>5</integer>
                defaults write DOMAIN KEY -TYPE VALUE  -string -int[eger] -float -bool[ean] -date -data
                defaults write DOMAIN KEY -array V...  also -array-add, -dict K V..., -dict-add K V...
                defaults write DOMAIN '{ k = v; }'     replace the whole domain
                defaults delete DOMAIN [KEY]           the whole domain, or one key
                defaults rename DOMAIN OLD NEW         one key, in one write
                defaults export DOMAIN PATH|-          a property list, XML unless it holds what XML cannot
                                                       keep; - prints XML (dates to the second), as macOS does
                defaults import DOMAIN PATH|-          replace the domain with a plist file's dictionary
                A DOMAIN is a suite name ($XDG_CONFIG_HOME/DOMAIN.plist, else ~/.config), a root key
                with --store-dir DIR, or an absolute path to a plist file. Writes take the suite's
                lock, re-read the file, apply only the change and replace the file atomically:
                programs using the library see them at once, plain UserDefaults after synchronize().
                Bad input changes nothing: exit 2 for a usage error, 1 when the change is refused.
                """, acceptsJSON: true),
        CommandSpec(
            name: "list-keys", arguments: [], summary: "list the keys in the set's schema",
            details: """
                The schema is the one the set's program wrote beside it (see PrefsSchema); a set
                without one is described by the sample's own schema. --json prints a JSON array.
                """,
            acceptsJSON: true),
        CommandSpec(
            name: "describe", arguments: ["NAME"], summary: "print the summary of a key from the schema",
            details: """
                As gsettings describe: one line, empty when the key has no summary. An unknown key
                exits 1. --json prints {"key": …, "summary": …} (summary null when there is none).
                """, acceptsJSON: true),
        CommandSpec(
            name: "range", arguments: ["NAME"], summary: "print the type and the values a key allows",
            details: """
                In gsettings range's layout: "range TYPE MIN MAX" for a key with a range, "enum"
                and one choice per line for a key with choices, else "type TYPE"; TYPE is the key's
                type as list shows it (Int, [String], Window). --gsettings prints gsettings' exact
                form, TYPE a GVariant type string where one exists (x for Int, s for String, as for
                [String], a{ss} for [String: String]), else the Swift type's name. --json prints
                {"key", "type", "typeName", "kind", "min", "max", "choices"}: type the GVariant
                string, typeName as list shows it, kind the property-list kind (null where the key
                has none).
                """, acceptsJSON: true, flags: ["--gsettings"]),
        CommandSpec(
            name: "writable", arguments: ["NAME"], summary: "print whether a key can be written (false when locked)",
            details: """
                As gsettings writable: "true", or "false" for a key an administrator locked in a
                system layer. --json prints {"key": …, "writable": true|false}.
                """, acceptsJSON: true),
        CommandSpec(
            name: "schema-file", arguments: [], summary: "print the path of the set's schema file",
            details: """
                Where the set's program writes its schema (whether or not it has yet): beside a
                --store-dir set, in SUITE.schemas/ for a suite. --json prints {"root": …,
                "path": …, "exists": true|false}; path is null for a store without schema files.
                """, acceptsJSON: true),
        CommandSpec(name: "help", arguments: ["COMMAND?"], summary: "show help, or one command's help", details: ""),
        CommandSpec(
            name: "key", arguments: ["ROOT"], summary: "switch to the set under another root key",
            details: "", interactiveOnly: true),
        CommandSpec(name: "quit", arguments: [], summary: "leave (Ctrl-D works too)", details: "", interactiveOnly: true),
    ]

    init(
        name: String, arguments: [String], summary: String, details: String, acceptsJSON: Bool = false,
        interactiveOnly: Bool = false, flags: [String] = []
    ) {
        self.flags = flags
        self.name = name
        self.arguments = arguments
        self.summary = summary
        self.details = details
        self.acceptsJSON = acceptsJSON
        self.interactiveOnly = interactiveOnly
    }

    /// The command named `name`, or `nil`.
    public static func named(_ name: String) -> CommandSpec? {
        all.first { $0.name == name }
    }

    /// `name ARG ARG?` as shown in help.
    public var synopsis: String {
        ([name]
            + arguments.map {
                if $0.hasSuffix("+") { return $0.dropLast() + "..." }
                return $0.hasSuffix("?") || isRepeated($0) ? "[\($0.replacingOccurrences(of: "?", with: ""))]" : $0
            }
            + flags.map { "[\($0)]" } + (acceptsJSON ? ["[--json]"] : []))
            .joined(separator: " ")
    }

    var requiredCount: Int { arguments.filter { !$0.hasSuffix("?") && !$0.hasSuffix("...") }.count }

    /// The most positional arguments it takes (`nil`: any number).
    var maximumCount: Int? { arguments.last.map { isRepeated($0) || $0.hasSuffix("+") } == true ? nil : arguments.count }

    private func isRepeated(_ placeholder: String) -> Bool { placeholder.hasSuffix("...") }
}

/// Parses `prefs-harness [--key ROOT] [--sample] [--suite NAME | --store-dir DIR] COMMAND [ARGS] [--json]`.
public enum CommandLineParser {
    /// What `arguments` (without the program name) ask for.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` naming the problem.
    public static func parse(_ arguments: [String]) throws -> Invocation {
        var options = HarnessOptions()
        var sawKey = false
        var sawStore = false
        var rest = arguments[...]
        while let word = rest.first, word.hasPrefix("-"), word != "--" {
            rest.removeFirst()
            let (name, inlineValue) = split(word)
            switch name {
            case "--help", "-h":
                return .help(nil)
            case "--version":
                return .version
            case "--key":
                guard !sawKey else { throw HarnessError.usage("--key is given twice") }
                sawKey = true
                options.key = try rootKey(try value(of: name, inlineValue, &rest))
            case "--suite":
                guard !sawStore else { throw HarnessError.usage("give one of --suite and --store-dir, once") }
                sawStore = true
                options.store = .suite(try suiteName(try value(of: name, inlineValue, &rest)))
            case "--sample":
                guard inlineValue == nil else { throw HarnessError.usage("--sample takes no value") }
                options.sample = true
            case "--store-dir":
                guard !sawStore else { throw HarnessError.usage("give one of --suite and --store-dir, once") }
                sawStore = true
                let directory = try value(of: name, inlineValue, &rest)
                guard !directory.isEmpty else { throw HarnessError.usage("--store-dir needs a directory") }
                options.store = .directory(directory)
            default:
                throw HarnessError.usage("unknown option '\(word)'")
            }
        }
        if rest.first == "--" { rest.removeFirst() }
        guard let word = rest.popFirst() else { return .interactive(options) }
        let command = try parseCommand(word, Array(rest), interactive: false)
        if command.spec.name == "help" { return .help(try helpTopic(command.arguments.first)) }
        if command.arguments == ["--help"] { return .help(command.spec) }
        return .run(options, command)
    }

    /// Parses a command word and its arguments (also used at the interactive prompt).
    ///
    /// `--help` anywhere gives `arguments == ["--help"]`.
    public static func parseCommand(_ word: String, _ words: [String], interactive: Bool) throws -> Command {
        guard let spec = CommandSpec.named(word), interactive || !spec.interactiveOnly else {
            let names = CommandSpec.all.filter { interactive || !$0.interactiveOnly }.map(\.name)
            throw HarnessError.usage("unknown command '\(word)'; the commands are \(names.joined(separator: ", "))")
        }
        var positional: [String] = []
        var json = false
        var flags: Set<String> = []
        var flagsEnded = false
        for word in words {
            if !flagsEnded && word.hasPrefix("--") {
                switch word {
                case "--":
                    flagsEnded = true
                case "--help":
                    return Command(spec: spec, arguments: ["--help"], json: false)
                case "--json" where spec.acceptsJSON:
                    json = true
                case _ where spec.flags.contains(word):
                    flags.insert(word)
                default:
                    throw HarnessError.usage(
                        "unknown option '\(word)' for \(spec.name) (put -- before a value that starts with --)")
                }
            } else if !flagsEnded && word == "-h" {
                return Command(spec: spec, arguments: ["--help"], json: false)
            } else {
                positional.append(word)
            }
        }
        guard positional.count >= spec.requiredCount else {
            let missing = spec.arguments[positional.count...].filter { !$0.hasSuffix("?") && !$0.hasSuffix("...") }.map { $0.hasSuffix("+") ? String($0.dropLast()) : $0 }
            throw HarnessError.usage("\(spec.name) needs \(missing.joined(separator: " ")) (usage: \(spec.synopsis))")
        }
        guard positional.count <= spec.maximumCount ?? .max else {
            throw HarnessError.usage(
                "too many arguments for \(spec.name): \(positional[spec.arguments.count...].map { "'\($0)'" }.joined(separator: " ")) (usage: \(spec.synopsis); quote a name with spaces)"
            )
        }
        return Command(spec: spec, arguments: positional, json: json, flags: flags)
    }

    static func helpTopic(_ name: String?) throws -> CommandSpec? {
        guard let name else { return nil }
        guard let spec = CommandSpec.named(name) else { throw HarnessError.usage("no help for unknown command '\(name)'") }
        return spec
    }

    /// A root key given on the command line or at the prompt.
    static func rootKey(_ key: String) throws -> String {
        guard !key.allSatisfy(\.isWhitespace) else {
            throw HarnessError.usage("the root key must not be empty or blank")
        }
        return key
    }

    /// A suite name that stays a plain name in the preferences folder.
    static func suiteName(_ name: String) throws -> String {
        guard !name.isEmpty else { throw HarnessError.usage("--suite needs a suite name") }
        guard !name.contains("/"), name != ".", name != "..", !name.contains("\u{0}") else {
            throw HarnessError.usage("the suite name '\(name)' must not contain '/' or be '.' or '..'")
        }
        guard name != "NSGlobalDomain" else {
            throw HarnessError.usage("the suite name 'NSGlobalDomain' names the global domain, not a suite")
        }
        return name
    }

    private static func split(_ word: String) -> (String, String?) {
        guard word.hasPrefix("--"), let equals = word.firstIndex(of: "=") else { return (word, nil) }
        return (String(word[..<equals]), String(word[word.index(after: equals)...]))
    }

    private static func value(of option: String, _ inline: String?, _ rest: inout ArraySlice<String>) throws -> String {
        if let inline { return inline }
        guard let value = rest.popFirst() else { throw HarnessError.usage("\(option) needs a value") }
        return value
    }
}

import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// `settings show|set|reset`: the two ``SettingsManageable`` demo types, `app`
/// (``AppSettings``) and `player` (``PlayerSettings``), from the terminal.
///
/// ```
/// prefs-harness settings show
/// prefs-harness settings set app fontSize 21
/// prefs-harness settings set player powerLevels 1,2,3,4,5
/// prefs-harness settings reset player
/// ```
enum SettingsCommand {
    /// One property of a demo type: its name, type, value as text, and how to set it.
    struct Field {
        let name: String
        let type: String
        let text: () -> String
        let assign: (String) throws -> Void
    }

    /// A demo type: how to load, list, save and reset it.
    struct Kind {
        let name: String
        let load: () throws -> Void
        let fields: () -> [Field]
        let save: () throws -> Void
        let reset: () throws -> Void
    }

    /// Runs `settings ACTION [TYPE [NAME VALUE]]`.
    static func run(_ arguments: [String], json: Bool = false, settingsDirectory: URL?, console: Console) throws {
        if let settingsDirectory { SettingsLocation.directory = settingsDirectory }
        let action = arguments[0]
        let kinds = try selectedKinds(arguments.count > 1 ? arguments[1] : nil)
        switch action {
        case "show":
            guard arguments.count <= 2 else { throw HarnessError.usage("settings show takes at most a TYPE (app or player)") }
            var rows: [(String, String, String)] = [("Setting", "Type", "Value")]
            for kind in kinds {
                try refusing(kind.load)
                rows += kind.fields().map { ("\(kind.name).\($0.name)", $0.type, $0.text()) }
            }
            if json {
                let object = Dictionary(uniqueKeysWithValues: rows.dropFirst().map { ($0.0, $0.2) })
                return console.print(ValueFormatter.jsonText(object))
            }
            for line in aligned(rows) { console.print(line) }
            console.print("Files in \(SettingsLocation.directory?.path ?? SettingsLocation.defaultDirectory.path)")
        case "set":
            guard arguments.count == 4, let kind = kinds.first, kinds.count == 1 else {
                throw HarnessError.usage("settings set needs TYPE NAME VALUE, e.g. settings set app fontSize 21")
            }
            try refusing(kind.load)
            guard let field = kind.fields().first(where: { $0.name.lowercased() == arguments[2].lowercased() }) else {
                let names = kind.fields().map(\.name).joined(separator: ", ")
                throw HarnessError.usage("\(kind.name) has no setting '\(arguments[2])'; its settings are \(names)")
            }
            try field.assign(arguments[3])
            try refusing(kind.save)
            let setting = "\(kind.name).\(field.name)"
            console.print(json ? ValueFormatter.jsonText([setting: field.text()]) : "\(setting) = \(field.text())")
        case "reset":
            guard arguments.count <= 2 else { throw HarnessError.usage("settings reset takes at most a TYPE (app or player)") }
            for kind in kinds {
                try refusing(kind.load)
                try refusing(kind.reset)
                if !json { console.print("Reset \(kind.name) settings.") }
            }
            if json { console.print(ValueFormatter.jsonText(kinds.map(\.name))) }
        default:
            throw HarnessError.usage("unknown settings action '\(action)'; the actions are show, set, reset")
        }
    }

    // MARK: - The two demo types

    private static var app: Kind {
        let settings = AppSettings.shared
        return Kind(
            name: "app",
            load: { try settings.loadThrowing() },
            fields: {
                [
                    field("playSFX", "Bool", { String(settings.playSFX) }, { settings.playSFX = try bool($0, "playSFX") }),
                    field("themeIndex", "Int", { String(settings.themeIndex) }, { settings.themeIndex = try int($0, "themeIndex") }),
                    field("fontName", "String", { settings.fontName }, { settings.fontName = $0 }),
                    field("fontSize", "Double", { "\(settings.fontSize)" }, { settings.fontSize = CGFloat(try double($0, "fontSize")) }),
                ]
            },
            save: { try settings.updateThrowing() },
            reset: { try settings.resetThrowing() }
        )
    }

    private static var player: Kind {
        let box = PlayerBox()
        return Kind(
            name: "player",
            load: { try box.value.loadUsingSettingsFileThrowing() },
            fields: {
                [
                    field("team", "String?", { box.value.team ?? "(none)" }, { box.value.team = $0 }),
                    field("isMale", "Bool?", { box.value.isMale.map { String($0) } ?? "(none)" }, { box.value.isMale = try bool($0, "isMale") }),
                    field("gunType", "Int?", { box.value.gunType.map { String($0) } ?? "(none)" }, { box.value.gunType = try int($0, "gunType") }),
                    field(
                        "powerLevels", "[Int]?", { box.value.powerLevels.map { $0.map(String.init).joined(separator: ", ") } ?? "(none)" },
                        { box.value.powerLevels = try ints($0, "powerLevels") }),
                ]
            },
            save: { try box.value.updateThrowing() },
            reset: { try box.value.resetThrowing() }
        )
    }

    /// Holds the struct so the closures above share one value.
    private final class PlayerBox {
        var value = PlayerSettings()
    }

    private static func selectedKinds(_ name: String?) throws -> [Kind] {
        switch name?.lowercased() {
        case nil: return [app, player]
        case "app", "appsettings": return [app]
        case "player", "playersettings": return [player]
        default: throw HarnessError.usage("unknown settings type '\(name!)'; the types are app and player")
        }
    }

    // MARK: - Parsing and formatting

    private static func field(_ name: String, _ type: String, _ text: @escaping () -> String, _ assign: @escaping (String) throws -> Void) -> Field {
        Field(name: name, type: type, text: text, assign: assign)
    }

    static func bool(_ text: String, _ name: String) throws -> Bool {
        try ValueParser.boolean(text, for: name)
    }

    static func int(_ text: String, _ name: String) throws -> Int {
        try ValueParser.integer(text, for: name)
    }

    static func double(_ text: String, _ name: String) throws -> Double {
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
            throw HarnessError.usage("'\(text)' is not a number for \(name)")
        }
        return value
    }

    static func ints(_ text: String, _ name: String) throws -> [Int] {
        let trimmed = text.trimmingCharacters(in: CharacterSet(charactersIn: "[] "))
        if trimmed.isEmpty { return [] }
        return try trimmed.split(separator: ",").map { try int(String($0), name) }
    }

    private static func aligned(_ rows: [(String, String, String)]) -> [String] {
        let first = rows.map(\.0.count).max() ?? 0
        let second = rows.map(\.1.count).max() ?? 0
        return rows.map {
            "  \($0.0.padding(toLength: first, withPad: " ", startingAt: 0))  \($0.1.padding(toLength: second, withPad: " ", startingAt: 0))  \($0.2)"
        }
    }
}

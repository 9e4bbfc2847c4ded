import Foundation

/// Where `UserDefaults` keeps a suite on Linux, and which suite names are safe.
enum SuitePaths {
    /// Why `name` cannot be a suite name (it would escape the preferences folder or alias a special domain), or `nil`.
    static func problem(with name: String) -> String? {
        if name.isEmpty { return "the suite name is empty" }
        // Bytes, not characters: a slash followed by a combining mark is one `Character`.
        if name.utf8.contains(UInt8(ascii: "/")) || name.utf8.contains(0) { return "the suite name \"\(name)\" contains '/' or NUL" }
        if name == "." || name == ".." || name.hasPrefix("..") { return "the suite name \"\(name)\" is a relative path" }
        if name == "NSGlobalDomain" || name == UserDefaults.globalDomain || name == UserDefaults.argumentDomain
            || name == UserDefaults.registrationDomain
        {
            return "the suite name \"\(name)\" names a special domain"
        }
        return nil
    }

    /// Where swift-corelibs-foundation keeps a suite (`<suite>.plist` in ``directory``; the standard suite is named
    /// after the program), or `nil` for suites of unknown or refused name.
    static func file(suite: String?, isStandard: Bool) -> URL? {
        let name: String
        if isStandard {
            name = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        } else {
            guard let suite, problem(with: suite) == nil else { return nil }
            name = suite
        }
        return directory.appendingPathComponent(name + ".plist", isDirectory: false)
    }

    /// Where the schema of the set under `root` in the suite file `file` is kept: `<suite>.schemas/<root file
    /// name>.json` beside it (the root key named as ``PlistFileStore`` names its files).
    static func schemaFile(besides file: URL, root: String) -> URL {
        URL(fileURLWithPath: schemaFolder(besides: file) + "/" + PlistFileStore.fileStem(forRoot: root) + ".json", isDirectory: false)
    }

    /// The path of the folder of the schemas of the sets in the suite file `file` (`<suite>.schemas` beside it).
    static func schemaFolder(besides file: URL) -> String {
        let name = file.lastPathComponent
        let suite = name.hasSuffix(".plist") && name.utf8.count > 6 ? String(name.dropLast(6)) : file.deletingPathExtension().lastPathComponent
        let folder = file.deletingLastPathComponent().path
        return (folder == "/" ? "" : folder) + "/\(suite).schemas"
    }

    /// The folder of the suites, by swift-corelibs-foundation's rule (`_CFXDGCreateConfigHomePath`): `$XDG_CONFIG_HOME`
    /// when it is an absolute path other than `/`, else `$HOME/.config` (`/.config` when `HOME` is unset or empty).
    static var directory: URL {
        if let configHome = ProcessEnvironment.value("XDG_CONFIG_HOME"), configHome.utf8.count > 1, configHome.hasPrefix("/") {
            return URL(fileURLWithPath: configHome, isDirectory: true)
        }
        return URL(fileURLWithPath: (ProcessEnvironment.value("HOME") ?? "") + "/.config", isDirectory: true)
    }

    /// The suite name of a `UserDefaults` object made elsewhere: swift-corelibs-foundation's stored `suite`; `nil` on Apple's.
    static func suiteName(of defaults: UserDefaults) -> String? { suite(of: defaults) ?? nil }

    /// Whether `defaults` is the program's own domain, made with `UserDefaults()` (its `suite` is `nil`): `.standard`'s file.
    static func isStandardDomain(_ defaults: UserDefaults) -> Bool {
        defaults === UserDefaults.standard || suite(of: defaults) == .some(nil)
    }

    /// The `suite` property of a swift-corelibs-foundation `UserDefaults`: `.some(nil)` for the program's own domain,
    /// `nil` when Foundation has no such property.
    private static func suite(of defaults: UserDefaults) -> String?? {
        guard PlatformChoices.current.seesSuiteNames else { return nil }
        for child in Mirror(reflecting: defaults).children where child.label == "suite" {
            if let name = child.value as? String { return .some(name) }
            if let name = child.value as? String? { return .some(name) }
        }
        return nil
    }
}

import Foundation

/// Where ``SettingsManageable`` files live unless a type overrides
/// ``SettingsManageable/settingsDirectory``.
public enum SettingsLocation {
    private static let override = Locked<URL?>(nil)

    /// The folder for every type's settings files; `nil` restores the default. Set it before
    /// loading anything (command-line tools and tests point it at their own folder).
    public static var directory: URL? {
        get { override.withLock { $0 } }
        set { override.withLock { $0 = newValue } }
    }

    /// The per-user default: `$XDG_CONFIG_HOME/<program>` or `~/.config/<program>` on Linux,
    /// `Application Support/<bundle identifier or program>` on Apple platforms.
    public static var defaultDirectory: URL {
        let program = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        let base =
            PlatformChoices.current.settingsInApplicationSupport
            ? FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
            : SuitePaths.directory  // the folder of the UserDefaults suites
        return base.appendingPathComponent(program, isDirectory: true)
    }

    /// The folder in use: ``directory`` if set, else ``defaultDirectory``.
    static var current: URL { directory ?? defaultDirectory }

    /// The last error of each type's `Bool` methods.
    static let errors = Locked<[String: PersistentPrefs.PrefsError]>([:])
}

import Foundation

/// The former error type of the ``SettingsManageable`` style, which now throws ``PersistentPrefs/PrefsError`` as a
/// preference set does (its own cases, such as ``PersistentPrefs/PrefsError/decodingFailed(path:reason:)``, included).
/// `ioFailed(path:reason:)`, `migrationFailed(path:step:name:reason:)` and `newerSchemaVersion(path:stored:supported:)`
/// still make the folded cases; patterns need the new labels (`ioError(path:reason:)`, and `root:`, the settings
/// file's path, for the other two).
@available(*, deprecated, renamed: "PersistentPrefs.PrefsError")
public typealias SettingsError = PersistentPrefs.PrefsError

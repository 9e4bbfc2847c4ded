import Foundation

/// The error type of the ``SettingsManageable`` style in earlier versions, now one with
/// ``PersistentPrefs/PrefsError``: the Codable style throws and records the same error a
/// preference set does (a failed migration, a newer schema version, a failed read or write, a
/// lock that cannot be had), and the cases only it reports (``PersistentPrefs/PrefsError/encodingFailed(type:reason:)``,
/// ``PersistentPrefs/PrefsError/decodingFailed(path:reason:)``, …) are cases of that type.
///
/// Code that names `SettingsError` keeps compiling: `ioFailed(path:reason:)`,
/// `migrationFailed(path:step:name:reason:)` and `newerSchemaVersion(path:stored:supported:)`
/// make the folded cases. Patterns that spell those three cases' old labels need the new ones
/// (`ioError(path:reason:)`, and `root:`, the settings file's path, for the other two).
@available(*, deprecated, renamed: "PersistentPrefs.PrefsError")
public typealias SettingsError = PersistentPrefs.PrefsError

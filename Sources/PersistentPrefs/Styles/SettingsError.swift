import Foundation

/// Why a ``SettingsManageable`` operation failed.
///
/// The throwing methods (``SettingsManageable/updateThrowing()``, …) throw it; the methods
/// that return `Bool`, as in the original article, record it in
/// ``SettingsManageable/lastSettingsError``.
public enum SettingsError: Error, Equatable, Sendable {
    /// The value could not be encoded as a property list.
    case encodingFailed(type: String, reason: String)
    /// The settings file at `path` could not be decoded as the type; it was left untouched.
    case decodingFailed(path: String, reason: String)
    /// There is no bundled defaults file for the type (`<Type>.plist`).
    case noBundledSettings(type: String)
    /// There is no settings file at `path`.
    case noSettingsFile(path: String)
    /// `reset()` found neither bundled defaults nor an initial copy to go back to.
    case nothingToResetTo(type: String)
    /// Reading or writing `path` failed; `reason` says why. The old file is unchanged.
    case ioFailed(path: String, reason: String)
    /// The settings file at `path` could not be carried to the type's
    /// ``SettingsManageable/schemaVersion``: the step producing version `step` (described by
    /// `name`) threw, or its result does not decode as the type; `reason` says why. The file was
    /// left as it is.
    case migrationFailed(path: String, step: Int, name: String, reason: String)
    /// The settings file at `path` was written by a newer version of the program (schema version
    /// `stored`) than this code knows (`supported`). It can be loaded, but is not overwritten.
    case newerSchemaVersion(path: String, stored: Int, supported: Int)
}

// MARK: - CustomStringConvertible

extension SettingsError: CustomStringConvertible {
    /// One sentence naming the type or file.
    public var description: String {
        switch self {
        case .encodingFailed(let type, let reason):
            return "\(type) could not be encoded as a property list: \(reason.asClause)."
        case .decodingFailed(let path, let reason):
            return "The settings file \(path) could not be read: \(reason.asClause). It was left as it is."
        case .noBundledSettings(let type):
            return "There is no bundled \(type).plist with default settings."
        case .noSettingsFile(let path):
            return "There is no settings file at \(path)."
        case .nothingToResetTo(let type):
            return "\(type) has neither bundled defaults nor an initial copy to reset to."
        case .ioFailed(let path, let reason):
            return "Could not read or write \(path): \(reason.asClause). Nothing was changed."
        case .migrationFailed(let path, let step, let name, let reason):
            return "The settings file \(path) could not be migrated: the step to version \(step) (\(name)) failed: \(reason.asClause). It was left as it is."
        case .newerSchemaVersion(let path, let stored, let supported):
            return "The settings file \(path) was written by a newer version of the program (schema version \(stored); this code knows up to \(supported)), so it is not overwritten."
        }
    }
}

// MARK: - LocalizedError

extension SettingsError: LocalizedError {
    /// The same sentence as ``description``.
    public var errorDescription: String? { description }
}

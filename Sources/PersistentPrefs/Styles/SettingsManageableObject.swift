import Foundation

/// A ``SettingsManageable`` class that copies loaded settings into itself, so `load()`, `loadUsingSettingsFile()` and
/// `reset()` update the object everyone holds, and work on a shared instance kept in a `static let`.
///
/// ```swift
/// final class AppSettings: Codable, SettingsManageableObject {
///     static let shared = AppSettings()
///     var fontSize = 17.0
///     func adopt(_ loaded: AppSettings) { fontSize = loaded.fontSize }
/// }
///
/// _ = AppSettings.shared.load()
/// ```
public protocol SettingsManageableObject: AnyObject, SettingsManageable {
    /// Copies every setting of `loaded` into this object.
    func adopt(_ loaded: Self)
}

extension SettingsManageableObject where Self: Codable {
    /// Loads the settings file into this object, or creates the file from it; `false` on failure
    /// (``SettingsManageable/lastSettingsError`` says why).
    public func load() -> Bool { Self.succeeded { try loadThrowing() } }

    /// `load()`, throwing why it fails.
    public func loadThrowing() throws {
        try SettingsFile(for: self).load(current: self) { adopt($0) }
    }

    /// Loads the settings file into this object, copying the bundled defaults there first; `false` on failure.
    public func loadUsingSettingsFile() -> Bool { Self.succeeded { try loadUsingSettingsFileThrowing() } }

    /// `loadUsingSettingsFile()`, throwing why it fails.
    public func loadUsingSettingsFileThrowing() throws {
        try SettingsFile(for: self).loadUsingSettingsFile { adopt($0) }
    }

    /// Puts this object back to the bundled defaults or the initial copy; `false` when there is nothing to go back to.
    public func reset() -> Bool { Self.succeeded { try resetThrowing() } }

    /// `reset()`, throwing why it fails.
    public func resetThrowing() throws {
        try SettingsFile(for: self).reset(current: self) { adopt($0) }
    }

    /// Changes the settings atomically, across threads and processes: reads the file under its lock into a fresh
    /// object, lets `body` change it, writes it in the same locked step, and copies it into this object.
    ///
    /// ```swift
    /// try AppSettings.shared.update { $0.fontSize += 1 }
    /// ```
    ///
    /// - Throws: What `body` throws (unchanged), or a ``PersistentPrefs/PrefsError``; nothing is written then.
    public func update(_ body: (Self) throws -> Void) throws {
        try SettingsFile(for: self).modify(current: self, { try body($0) }) { adopt($0) }
    }
}

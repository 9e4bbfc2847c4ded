import Foundation

/// A `Codable` type that saves itself to a property-list file, from the article "How to use Swift protocols to
/// manage app configuration" (`AppSettings`-style classes and `PlayerSettings`-style structs).
///
/// Adopt it with `Codable` and the default implementations do the rest:
///
/// ```swift
/// struct PlayerSettings: Codable, SettingsManageable {
///     var team: String?
///     var gunType: Int?
/// }
///
/// var player = PlayerSettings()
/// if player.loadUsingSettingsFile() {      // defaults from the bundled PlayerSettings.plist
///     player.gunType = 1
///     _ = player.update()                  // written atomically
/// }
/// ```
///
/// Files live in ``settingsDirectory`` (not a cache), defaults come from ``bundledSettingsURL``, writes are atomic
/// and durable, and each `Bool` method has a throwing twin (``updateThrowing()``, ``loadThrowing()``, …) that says
/// why it failed and records it in ``lastSettingsError``. The `mutating` methods replace a class's *reference*, not
/// the object others hold: a class with a shared `static let` adopts ``SettingsManageableObject`` instead. See
/// <doc:SavingCodableSettings>.
public protocol SettingsManageable {
    /// The folder of the settings files of this type.
    static var settingsDirectory: URL { get }

    /// The bundled file with default settings, or `nil` when there is none.
    static var bundledSettingsURL: URL? { get }

    /// The settings file: `<settingsDirectory>/<Type>.settings.plist`.
    func settingsURL() -> URL

    /// Writes the current values to the settings file; `false` on failure (see ``lastSettingsError``).
    func update() -> Bool

    /// Loads the settings file, or creates it from the current values (keeping an initial copy,
    /// `<Type>.settings.plist.init`, for ``reset()``) when there is none.
    mutating func load() -> Bool

    /// Loads the settings file, first copying the bundled defaults there when there is none.
    mutating func loadUsingSettingsFile() -> Bool

    /// Deletes the settings file.
    func delete() -> Bool

    /// Goes back to the bundled defaults or, without them, to the initial copy.
    mutating func reset() -> Bool

    /// The settings file as a dictionary, or `nil` when it is missing or unreadable.
    func toDictionary() -> [String: Any?]?

    /// The schema version of this type's settings files (0, the default: no versioning): bump it, and add a step
    /// to ``migrations``, when a new version of the app renames or reshapes a stored property. Files are stamped
    /// with the version that wrote them (under ``PersistentPrefs/schemaVersionKey``, which decoding ignores). An
    /// older file is migrated when loaded, under the file's lock, and written back before it is decoded; a newer one
    /// loads but is never overwritten (``PersistentPrefs/PrefsError/newerSchemaVersion(root:stored:supported:)``).
    static var schemaVersion: Int { get }

    /// The steps that carry an older settings file to ``schemaVersion``: the step at position `n` takes version `n`
    /// to `n + 1` (see ``PrefsMigration``). Steps work on the file's dictionary, so they can read properties the
    /// type no longer has; their result must decode as the type.
    static var migrations: [PrefsMigration] { get }
}

// MARK: - Default implementations

extension SettingsManageable {
    /// ``SettingsLocation/directory`` if set, else ``SettingsLocation/defaultDirectory``.
    public static var settingsDirectory: URL { SettingsLocation.current }

    /// `Bundle.main`'s `<Type>.plist`, if there is one.
    public static var bundledSettingsURL: URL? {
        Bundle.main.url(forResource: "\(Self.self)", withExtension: "plist")
    }

    /// 0: no versioning.
    public static var schemaVersion: Int { 0 }

    /// No steps.
    public static var migrations: [PrefsMigration] { [] }

    /// `<settingsDirectory>/<Type>.settings.plist`: `.settings` keeps it apart from a ``PlistFileStore`` set whose
    /// root key is the type's name (a set's file name never holds a `.` before `.plist`). A `<Type>.plist` that is
    /// the type's own (its initial copy beside it, or XML that decodes as the type) is moved here, with its initial
    /// copy, by the type's first operation that finds no file here.
    public func settingsURL() -> URL {
        Self.settingsDirectory.appendingPathComponent(SettingsFile<Self>.fileName)
    }

    /// Why the latest `Bool` method of this type returned `false`; `nil` after a success.
    public static var lastSettingsError: PersistentPrefs.PrefsError? {
        SettingsLocation.errors.withLock { $0["\(Self.self)"] }
    }

    /// Runs a throwing operation for a `Bool` method, recording its outcome.
    static func succeeded(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            SettingsLocation.errors.withLock { $0["\(Self.self)"] = nil }
            return true
        } catch {
            let failure = SharedSet.mapped(error)
            SettingsLocation.errors.withLock { $0["\(Self.self)"] = failure }
            return false
        }
    }
}

extension SettingsManageable where Self: Codable {
    /// Writes the current values to the settings file, atomically; `false` on failure (``lastSettingsError`` says why).
    public func update() -> Bool { Self.succeeded { try updateThrowing() } }

    /// Writes the current values to the settings file, atomically, or throws why it cannot.
    ///
    /// ```swift
    /// do {
    ///     try player.loadThrowing()
    ///     player.gunType = 2
    ///     try player.updateThrowing()
    /// } catch let error as PersistentPrefs.PrefsError {
    ///     print(error)            // names the file and what went wrong
    /// }
    /// ```
    public func updateThrowing() throws {
        try SettingsFile(for: self).write(self)
    }

    /// Changes the settings atomically, across threads and processes: reads the file under its lock (shared by
    /// every process using this library), lets `body` change them (starting from the current value without a file),
    /// and writes them in the same locked step; `self` then holds the result. A file that does not decode is left
    /// untouched.
    ///
    /// ```swift
    /// try player.update { $0.gunType = ($0.gunType ?? 0) + 1 }
    /// ```
    ///
    /// - Throws: What `body` throws (unchanged), or a ``PersistentPrefs/PrefsError``; nothing is written then.
    public mutating func update(_ body: (inout Self) throws -> Void) throws {
        try SettingsFile(for: self).modify(current: self, body) { self = $0 }
    }

    /// Loads the settings file, or creates it (and its initial copy) from the current values; `false` on failure
    /// (such as a file that does not decode, left untouched), ``lastSettingsError`` says why.
    public mutating func load() -> Bool { Self.succeeded { try loadThrowing() } }

    /// ``load()``, throwing why it fails.
    public mutating func loadThrowing() throws {
        try SettingsFile(for: self).load(current: self) { self = $0 }
    }

    /// Loads the settings file, copying the bundled defaults there first when there is none; `false` when there are
    /// no bundled defaults or the file does not decode.
    public mutating func loadUsingSettingsFile() -> Bool { Self.succeeded { try loadUsingSettingsFileThrowing() } }

    /// ``loadUsingSettingsFile()``, throwing why it fails.
    public mutating func loadUsingSettingsFileThrowing() throws {
        try SettingsFile(for: self).loadUsingSettingsFile { self = $0 }
    }

    /// Deletes the settings file; `false` when there is no file or it cannot be removed.
    public func delete() -> Bool { Self.succeeded { try deleteThrowing() } }

    /// ``delete()``, throwing why it fails.
    public func deleteThrowing() throws {
        try SettingsFile(for: self).delete()
    }

    /// Goes back to the bundled defaults or, without them, to the initial copy made by the first ``load()``; `false`
    /// when there is nothing to go back to.
    public mutating func reset() -> Bool { Self.succeeded { try resetThrowing() } }

    /// ``reset()``, throwing why it fails.
    public mutating func resetThrowing() throws {
        try SettingsFile(for: self).reset(current: self) { self = $0 }
    }

    /// The settings file as a dictionary (numbers as `NSNumber`, so `as?` casts work as on Apple platforms), or
    /// `nil` when it is missing or unreadable.
    public func toDictionary() -> [String: Any?]? {
        SettingsFile(for: self).dictionary()
    }
}


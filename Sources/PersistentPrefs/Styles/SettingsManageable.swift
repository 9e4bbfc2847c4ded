import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `Codable` type that saves itself to a property-list file, from the article
/// "How to use Swift protocols to manage app configuration" (`AppSettings`-style classes and
/// `PlayerSettings`-style structs).
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
/// Beyond the article:
/// - Files live in ``settingsDirectory``, a per-user folder that the system does not purge
///   (not a cache): on Linux `$XDG_CONFIG_HOME/<program>` (or `~/.config/<program>`), on Apple
///   platforms `Application Support/<bundle identifier>`. Override it per type, or for every
///   type with ``SettingsLocation/directory``.
/// - The bundled defaults come from ``bundledSettingsURL`` (`Bundle.main`'s `<Type>.plist` by
///   default); override it to use `Bundle.module` or a path.
/// - Writes are atomic and durable: a crash never leaves a half-written file.
/// - Each `Bool` method has a throwing twin (``updateThrowing()``, ``loadThrowing()``, …)
///   that says why it failed, and records that reason in ``lastSettingsError``.
///
/// ## Classes and structs
/// `load()`, `loadUsingSettingsFile()` and `reset()` are `mutating`, as in the article: on a
/// struct they replace the value. On a class they replace the *reference* in the variable they
/// are called on (a `static var shared` works), not the object the rest of the app holds. A
/// class that keeps its shared instance in a `static let` (as Swift 6 asks) adopts
/// ``SettingsManageableObject`` instead and copies loaded settings into itself, so the object
/// everyone holds is updated in place.
public protocol SettingsManageable {
    /// The folder of the settings files of this type.
    static var settingsDirectory: URL { get }

    /// The bundled file with default settings, or `nil` when there is none.
    static var bundledSettingsURL: URL? { get }

    /// The settings file: `<settingsDirectory>/<Type>.settings.plist`.
    func settingsURL() -> URL

    /// Writes the current values to the settings file; `false` on failure (see
    /// ``lastSettingsError``).
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

    /// The schema version of this type's settings files: bump it, and add a step to
    /// ``migrations``, when a new version of the app renames or reshapes a stored property.
    ///
    /// 0 (the default) means no versioning. Files are stamped with the version that wrote them
    /// (under ``PersistentPrefs/schemaVersionKey``, which decoding ignores). A file of an older
    /// version is migrated when it is loaded, under the file's lock, and written back before it
    /// is decoded; a file of a newer version loads but is never overwritten
    /// (``SettingsError/newerSchemaVersion(path:stored:supported:)``).
    static var schemaVersion: Int { get }

    /// The steps that carry an older settings file to ``schemaVersion``, one per version: the
    /// step at position `n` takes version `n` to `n + 1` (see ``PrefsMigration``). Steps work
    /// on the file's dictionary, so they can read properties the type no longer has; their
    /// result must decode as the type.
    static var migrations: [PrefsMigration] { get }
}

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
        #if canImport(Darwin)
            let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        #else
            let base = SuitePaths.directory  // the folder of the UserDefaults suites
        #endif
        return base.appendingPathComponent(program, isDirectory: true)
    }

    /// The folder in use: ``directory`` if set, else ``defaultDirectory``.
    static var current: URL { directory ?? defaultDirectory }

    /// The last error of each type's `Bool` methods.
    static let errors = Locked<[String: SettingsError]>([:])
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

    /// `<settingsDirectory>/<Type>.settings.plist`.
    ///
    /// The `.settings` part keeps the file apart from a ``PlistFileStore`` set in the same folder
    /// whose root key is the type's name: a set's file name never holds a `.` before `.plist`.
    /// A file under the name earlier versions used, `<Type>.plist`, is moved to this name (with
    /// its initial copy) by the type's first operation that finds no file here, when it is the
    /// type's own: it has its initial copy beside it, or is XML that decodes as the type (a set's
    /// file stays).
    public func settingsURL() -> URL {
        Self.settingsDirectory.appendingPathComponent(SettingsFile<Self>.fileName)
    }

    /// Why the latest `Bool` method of this type returned `false`; `nil` after a success.
    public static var lastSettingsError: SettingsError? {
        SettingsLocation.errors.withLock { $0["\(Self.self)"] }
    }

    /// Runs a throwing operation for a `Bool` method, recording its outcome.
    static func succeeded(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            SettingsLocation.errors.withLock { $0["\(Self.self)"] = nil }
            return true
        } catch {
            let failure = (error as? SettingsError) ?? .ioFailed(path: "\(Self.self)", reason: "\(error)")
            SettingsLocation.errors.withLock { $0["\(Self.self)"] = failure }
            return false
        }
    }
}

extension SettingsManageable where Self: Codable {
    /// Writes the current values to the settings file, atomically.
    ///
    /// - Returns: `false` on failure; ``lastSettingsError`` says why.
    public func update() -> Bool { Self.succeeded { try updateThrowing() } }

    /// Writes the current values to the settings file, atomically, or throws why it cannot.
    ///
    /// ```swift
    /// do {
    ///     try player.loadThrowing()
    ///     player.gunType = 2
    ///     try player.updateThrowing()
    /// } catch let error as SettingsError {
    ///     print(error)            // names the file and what went wrong
    /// }
    /// ```
    public func updateThrowing() throws {
        try SettingsFile(for: self).write(self)
    }

    /// Changes the settings atomically, across threads and processes: reads the file under its
    /// lock (shared by every process using this library), lets `body` change the settings it
    /// holds, and writes them in the same locked step; `self` then holds the result.
    ///
    /// ```swift
    /// var player = PlayerSettings()
    /// try player.update { $0.gunType = ($0.gunType ?? 0) + 1 }
    /// ```
    ///
    /// Without a file, `body` starts from the current value. A file that does not decode is left
    /// untouched.
    ///
    /// - Parameter body: Changes the settings.
    /// - Throws: What `body` throws (unchanged), or a ``SettingsError``; nothing is written then.
    public mutating func update(_ body: (inout Self) throws -> Void) throws {
        try SettingsFile(for: self).modify(current: self, body) { self = $0 }
    }

    /// Loads the settings file, or creates it (and its initial copy) from the current values.
    ///
    /// - Returns: `false` on failure (for example a file that does not decode, which is left
    ///   untouched); ``lastSettingsError`` says why.
    public mutating func load() -> Bool { Self.succeeded { try loadThrowing() } }

    /// ``load()``, throwing why it fails.
    public mutating func loadThrowing() throws {
        try SettingsFile(for: self).load(current: self) { self = $0 }
    }

    /// Loads the settings file, copying the bundled defaults there first when there is none.
    ///
    /// - Returns: `false` when there are no bundled defaults or the file does not decode.
    public mutating func loadUsingSettingsFile() -> Bool { Self.succeeded { try loadUsingSettingsFileThrowing() } }

    /// ``loadUsingSettingsFile()``, throwing why it fails.
    public mutating func loadUsingSettingsFileThrowing() throws {
        try SettingsFile(for: self).loadUsingSettingsFile { self = $0 }
    }

    /// Deletes the settings file.
    ///
    /// - Returns: `false` when there is no file or it cannot be removed.
    public func delete() -> Bool { Self.succeeded { try deleteThrowing() } }

    /// ``delete()``, throwing why it fails.
    public func deleteThrowing() throws {
        try SettingsFile(for: self).delete()
    }

    /// Goes back to the bundled defaults or, without them, to the initial copy made by the
    /// first ``load()``.
    ///
    /// - Returns: `false` when there is nothing to go back to.
    public mutating func reset() -> Bool { Self.succeeded { try resetThrowing() } }

    /// ``reset()``, throwing why it fails.
    public mutating func resetThrowing() throws {
        try SettingsFile(for: self).reset(current: self) { self = $0 }
    }

    /// The settings file as a dictionary (numbers as `NSNumber`, so `as?` casts work as on
    /// Apple platforms), or `nil` when it is missing or unreadable.
    public func toDictionary() -> [String: Any?]? {
        SettingsFile(for: self).dictionary()
    }
}

// MARK: - Classes updated in place

/// A ``SettingsManageable`` class that copies loaded settings into itself, so `load()`,
/// `loadUsingSettingsFile()` and `reset()` update the object everyone holds, and work on a
/// shared instance kept in a `static let`.
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
    /// Loads the settings file into this object, or creates the file from it.
    ///
    /// - Returns: `false` on failure; ``SettingsManageable/lastSettingsError`` says why.
    public func load() -> Bool { Self.succeeded { try loadThrowing() } }

    /// `load()`, throwing why it fails.
    public func loadThrowing() throws {
        try SettingsFile(for: self).load(current: self) { adopt($0) }
    }

    /// Loads the settings file into this object, copying the bundled defaults there first.
    ///
    /// - Returns: `false` on failure.
    public func loadUsingSettingsFile() -> Bool { Self.succeeded { try loadUsingSettingsFileThrowing() } }

    /// `loadUsingSettingsFile()`, throwing why it fails.
    public func loadUsingSettingsFileThrowing() throws {
        try SettingsFile(for: self).loadUsingSettingsFile { adopt($0) }
    }

    /// Puts this object back to the bundled defaults or the initial copy.
    ///
    /// - Returns: `false` when there is nothing to go back to.
    public func reset() -> Bool { Self.succeeded { try resetThrowing() } }

    /// `reset()`, throwing why it fails.
    public func resetThrowing() throws {
        try SettingsFile(for: self).reset(current: self) { adopt($0) }
    }

    /// Changes the settings atomically, across threads and processes: reads the file under its
    /// lock into a fresh object, lets `body` change it, writes it in the same locked step, and
    /// copies it into this object.
    ///
    /// ```swift
    /// try AppSettings.shared.update { $0.fontSize += 1 }
    /// ```
    ///
    /// - Parameter body: Changes the settings, on the object it is given.
    /// - Throws: What `body` throws (unchanged), or a ``SettingsError``; nothing is written then.
    public func update(_ body: (Self) throws -> Void) throws {
        try SettingsFile(for: self).modify(current: self, { try body($0) }) { adopt($0) }
    }
}

// MARK: - The file operations, once for classes and structs

/// The files under a ``SettingsManageable`` type's earlier name (`<Type>.plist`) this process
/// found to be no settings file of the type and left where they are, by path.
private let earlierFilesLeft = Locked<Set<String>>([])

/// The settings file of one ``SettingsManageable`` type and the operations on it; `apply`
/// closures put a loaded value in place (`self = $0` for values, `adopt($0)` for objects).
struct SettingsFile<Settings: SettingsManageable> {
    let url: URL

    /// The name of a type's file in ``SettingsManageable/settingsDirectory``.
    static var fileName: String { "\(Settings.self).settings.plist" }

    /// The file earlier versions named `<Type>.plist`, when the type keeps the default
    /// ``SettingsManageable/settingsURL()``; `nil` otherwise.
    private let earlier: URL?

    init(for settings: Settings) {
        url = settings.settingsURL()
        let directory = Settings.settingsDirectory
        earlier = url == directory.appendingPathComponent(Self.fileName) ? directory.appendingPathComponent("\(Settings.self).plist") : nil
    }

    var initialCopy: URL { url.appendingPathExtension("init") }
}

extension SettingsFile where Settings: Codable {
    /// Writes `settings` under the file's lock.
    func write(_ settings: Settings) throws {
        try adoptEarlierFile()
        try locked { try writeUnlocked(settings) }
    }

    /// Moves the file an earlier version named `<Type>.plist` (see ``earlier``), and its initial
    /// copy, to ``url`` and ``initialCopy``, under both names' locks, while no file has the new
    /// name. Left where it is: a file without an initial copy beside it that is binary (a
    /// ``PlistFileStore`` set of the same name) or does not decode as the type. The
    /// initial copy moves first, so a crash in between leaves the file to be moved next time.
    /// Anything but a regular file (or a link to one) the user may read stays too. Every
    /// operation calls it first; it costs one `stat` when there is no file under the earlier
    /// name, and nothing more once this process has left one where it is.
    private func adoptEarlierFile() throws {
        guard let earlier, FileManager.default.fileExists(atPath: earlier.path), !FileManager.default.fileExists(atPath: url.path),
            !earlierFilesLeft.withLock({ $0.contains(earlier.path) })
        else { return }
        try locked {
            guard FileManager.default.fileExists(atPath: earlier.path), !FileManager.default.fileExists(atPath: url.path) else { return }
            let earlierCopy = earlier.appendingPathExtension("init")
            let hasCopy = FileManager.default.fileExists(atPath: earlierCopy.path)
            let contents = (try? AtomicFile.readRegular(earlier.path, limit: PlistFile.maximumReadSize)) ?? nil
            // The type's own file: made by `load` (with its initial copy), or XML (as the type
            // writes it; a set's file is binary) that decodes as the type. Anything else stays.
            let isBinary = contents?.data.starts(with: Data("bplist".utf8)) ?? false
            guard let contents, hasCopy || (!isBinary && (try? decode(contents.data, from: earlier)) != nil) else {
                earlierFilesLeft.withLock { _ = $0.insert(earlier.path) }
                return
            }
            // Also under the earlier name's lock: a process of an earlier version writes there.
            try FileLock.withLock(for: earlier, label: "\(Settings.self)") {
                if hasCopy, !FileManager.default.fileExists(atPath: initialCopy.path) { try move(earlierCopy, to: initialCopy) }
                try move(earlier, to: url)
            }
        }
    }

    /// Renames `file` to `destination` and makes the rename durable.
    private func move(_ file: URL, to destination: URL) throws {
        guard rename(file.path, destination.path) == 0 else {
            let failure = AtomicFile.posixFailure("rename", file.path)
            throw SettingsError.ioFailed(path: failure.path, reason: failure.reason)
        }
        do {
            try AtomicFile.syncDirectory(destination.deletingLastPathComponent().path)
        } catch {
            throw SettingsError.ioFailed(path: error.path, reason: error.reason)
        }
    }

    /// Reads the settings under the file's lock (`current` when there is no file), lets `body`
    /// change them, writes them in the same locked step, then hands them to `apply`.
    func modify(current: Settings, _ body: (inout Settings) throws -> Void, apply: (Settings) -> Void) throws {
        try adoptEarlierFile()
        let value = try locked { () throws -> Settings in
            var value = FileManager.default.fileExists(atPath: url.path) ? try decodeCurrent() : current
            try body(&value)
            try writeUnlocked(value)
            return value
        }
        apply(value)
    }

    /// Runs `body` holding the exclusive lock of the settings file (waiting for it at most
    /// ``PersistentPrefs/lockTimeout``).
    private func locked<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try FileLock.withLock(for: url, label: "\(Settings.self)", body)
        } catch PersistentPrefs.PrefsError.ioError(let path, let reason) {
            throw SettingsError.ioFailed(path: path, reason: reason)
        } catch let error as PersistentPrefs.PrefsError {
            switch error {
            case .lockTimeout, .transactionInProgress: throw SettingsError.ioFailed(path: url.path, reason: error.description)
            default: throw error
            }
        }
    }

    /// The settings file decoded without taking its lock, when it exists and needs no migration
    /// (the usual load, which a stopped writer must not delay); `nil` otherwise.
    private func decodedWithoutLock() throws -> Settings? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data = try contents(of: url)
        guard try migrated(data) == nil else { return nil }
        return try decode(data, from: url)
    }

    /// Writes `settings`, stamped with the type's schema version; refuses to overwrite a file
    /// of a newer version.
    private func writeUnlocked(_ settings: Settings) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        let data: Data
        do {
            data = try encoder.encode(settings)
        } catch {
            throw SettingsError.encodingFailed(type: "\(Settings.self)", reason: "\(error)")
        }
        if let existing = (try? AtomicFile.readRegular(url.path, limit: PlistFile.maximumReadSize)) ?? nil, let set = Self.dictionary(existing.data) {
            let stored = Self.version(of: set)
            if stored > Settings.schemaVersion {
                throw SettingsError.newerSchemaVersion(path: url.path, stored: stored, supported: Settings.schemaVersion)
            }
        }
        try replace(url, with: Self.stamped(data))
    }

    func load(current: Settings, apply: (Settings) -> Void) throws {
        try adoptEarlierFile()
        if let loaded = try decodedWithoutLock() { return apply(loaded) }
        let loaded = try locked { () throws -> Settings? in
            guard FileManager.default.fileExists(atPath: url.path) else {
                try writeUnlocked(current)
                if !FileManager.default.fileExists(atPath: initialCopy.path) {
                    try replace(initialCopy, with: try contents(of: url))
                }
                return nil
            }
            return try decodeCurrent()
        }
        loaded.map(apply)
    }

    func loadUsingSettingsFile(apply: (Settings) -> Void) throws {
        guard let bundled = Settings.bundledSettingsURL, FileManager.default.fileExists(atPath: bundled.path) else {
            throw SettingsError.noBundledSettings(type: "\(Settings.self)")
        }
        try adoptEarlierFile()
        if let loaded = try decodedWithoutLock() { return apply(loaded) }
        apply(
            try locked {
                if !FileManager.default.fileExists(atPath: url.path) {
                    let defaults = try contents(of: bundled)
                    _ = try decode(defaults, from: bundled)  // refuse defaults that do not decode, before copying them
                    try replace(url, with: Self.stamped(defaults))  // shipped with this version
                }
                return try decodeCurrent()
            })
    }

    // MARK: - Schema versions

    /// The settings file decoded, migrated first (and written back) when an older version wrote
    /// it. Call it holding the file's lock.
    private func decodeCurrent() throws -> Settings {
        let data = try contents(of: url)
        guard let migrated = try migrated(data) else { return try decode(data, from: url) }
        let value = try decode(migrated, from: url)
        try replace(url, with: migrated)
        return value
    }

    /// `data`, a settings file, carried to the type's schema version by the pending steps and
    /// stamped; `nil` when there is nothing to do (no versioning, current or newer, not a
    /// dictionary).
    private func migrated(_ data: Data) throws -> Data? {
        let version = Settings.schemaVersion
        guard version > 0, var set = Self.dictionary(data) else { return nil }
        let stored = SchemaPlan.take(from: &set)
        guard stored < version, !set.isEmpty else { return nil }
        let plan = SchemaPlan(version: version, writesNewer: false) {
            SchemaPlan.Migration(steps: Settings.migrations, allowed: nil, rules: nil)
        }
        let report: PrefsMigrationReport
        do {
            report = try plan.report(on: set, from: stored, root: "\(Settings.self)")
        } catch PersistentPrefs.PrefsError.migrationFailed(_, let step, let name, let reason) {
            throw SettingsError.migrationFailed(path: url.path, step: step, name: name, reason: reason)
        }
        var result = report.after
        result[PersistentPrefs.schemaVersionKey] = version
        let encoded: Data
        do {
            encoded = try PlistValue.foundationData(result, format: .xml)
            _ = try PropertyListDecoder().decode(Settings.self, from: encoded)
        } catch {
            let last = Settings.migrations[version - 1]
            throw SettingsError.migrationFailed(
                path: url.path, step: version, name: last.description,
                reason: "the result does not decode as \(Settings.self): \(Self.describe(error))")
        }
        return encoded
    }

    /// `data` (an encoded settings value) with the type's schema version added, when it has one.
    private static func stamped(_ data: Data) -> Data {
        let version = Settings.schemaVersion
        guard version > 0, var set = dictionary(data) else { return data }
        set[PersistentPrefs.schemaVersionKey] = version
        return (try? PlistValue.foundationData(set, format: .xml)) ?? data
    }

    /// A property list's top-level dictionary, normalised; `nil` when it is not one.
    private static func dictionary(_ data: Data) -> [String: Any]? {
        guard let top = try? PropertyListSerialization.propertyList(from: data, format: nil),
            let set = PlistValue.stringKeyedDictionary(top),
            case .success(let normalized) = PlistValue.normalizedSet(set, for: .loading)
        else { return nil }
        return normalized
    }

    /// The schema version a settings dictionary was stamped with (0 when none).
    private static func version(of set: [String: Any]) -> Int {
        var set = set
        return SchemaPlan.take(from: &set)
    }

    func delete() throws {
        try adoptEarlierFile()
        do {
            guard try AtomicFile.remove(url) else { throw SettingsError.noSettingsFile(path: url.path) }
        } catch let failure as AtomicFile.Failure {
            throw SettingsError.ioFailed(path: failure.path, reason: failure.reason)
        }
    }

    func reset(current: Settings, apply: (Settings) -> Void) throws {
        try adoptEarlierFile()
        if let bundled = Settings.bundledSettingsURL, FileManager.default.fileExists(atPath: bundled.path) {
            let defaults = try contents(of: bundled)
            let value = try decode(defaults, from: bundled)
            try locked { try replace(url, with: Self.stamped(defaults)) }  // shipped with this version
            apply(value)
        } else if FileManager.default.fileExists(atPath: initialCopy.path) {
            // The initial copy keeps the version that made it: migrated like any older file.
            let initial = try contents(of: initialCopy)
            let data = try migrated(initial) ?? initial
            let value = try decode(data, from: initialCopy)
            try locked { try replace(url, with: data) }
            apply(value)
        } else {
            throw SettingsError.nothingToResetTo(type: "\(Settings.self)")
        }
    }

    func dictionary() -> [String: Any?]? {
        try? adoptEarlierFile()
        guard var dictionary = (try? PlistFile.read(url, movingAside: false)) ?? nil else { return nil }
        dictionary[PersistentPrefs.schemaVersionKey] = nil  // the library's own
        return dictionary.mapValues { PlistValue.normalized($0, for: .loading) }
    }

    // MARK: - Private

    private func decode(_ file: URL) throws -> Settings {
        try decode(try contents(of: file), from: file)
    }

    private func decode(_ data: Data, from file: URL) throws -> Settings {
        do {
            return try PropertyListDecoder().decode(Settings.self, from: data)
        } catch {
            throw SettingsError.decodingFailed(path: file.path, reason: Self.describe(error))
        }
    }

    private func contents(of file: URL) throws -> Data {
        do throws(AtomicFile.Failure) {
            guard let contents = try AtomicFile.readRegular(file.path, limit: PlistFile.maximumReadSize) else {
                throw AtomicFile.Failure(path: file.path, reason: "the file does not exist")
            }
            return contents.data
        } catch {
            throw SettingsError.ioFailed(path: error.path, reason: error.reason)
        }
    }

    private func replace(_ file: URL, with data: Data) throws {
        do {
            try AtomicFile.write(data, to: file)
        } catch {
            throw SettingsError.ioFailed(path: error.path, reason: error.reason)
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "the key \"\(key.stringValue)\" is missing"
        case DecodingError.typeMismatch(let type, let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) is not a \(type)"
        case DecodingError.valueNotFound(let type, let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has no \(type)"
        case DecodingError.dataCorrupted: return "it is not a valid property list"
        default: return "\(error)"
        }
    }
}

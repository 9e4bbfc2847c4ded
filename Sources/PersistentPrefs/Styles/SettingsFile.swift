import Foundation

/// The files under a type's earlier name (`<Type>.plist`) this process found to be no settings file of the type and
/// left where they are, by path.
private let earlierFilesLeft = Locked<Set<String>>([])

/// The settings file of one ``SettingsManageable`` type and the operations on it; `apply` closures put a loaded
/// value in place (`self = $0` for values, `adopt($0)` for objects).
struct SettingsFile<Settings: SettingsManageable> {
    let url: URL

    /// The name of a type's file in ``SettingsManageable/settingsDirectory``.
    static var fileName: String { "\(Settings.self).settings.plist" }

    /// The file earlier versions named `<Type>.plist`, when the type keeps the default
    /// ``SettingsManageable/settingsURL()``.
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

    /// Moves the ``earlier`` file and its initial copy to ``url`` and ``initialCopy``, under both names' locks, while
    /// no file has the new name. Left where it is: a file without an initial copy beside it that is binary (a
    /// ``PlistFileStore`` set of the same name) or does not decode as the type, and anything but a readable regular
    /// file (or a link to one). The initial copy moves first, so a crash in between leaves the file to be moved next
    /// time. Every operation calls it first: one `stat` when there is no earlier file, nothing once one was left.
    private func adoptEarlierFile() throws {
        guard let earlier, FileManager.default.fileExists(atPath: earlier.path), !FileManager.default.fileExists(atPath: url.path),
            !earlierFilesLeft.withLock({ $0.contains(earlier.path) })
        else { return }
        try locked {
            guard FileManager.default.fileExists(atPath: earlier.path), !FileManager.default.fileExists(atPath: url.path) else { return }
            let earlierCopy = earlier.appendingPathExtension("init")
            let hasCopy = FileManager.default.fileExists(atPath: earlierCopy.path)
            let contents = (try? AtomicFile.readRegular(earlier.path, limit: PlistFile.maximumReadSize)) ?? nil
            // The type's own file: made by `load` (with its initial copy), or XML (a set's file is binary) that decodes
            // as the type. Anything else stays.
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
            throw PersistentPrefs.PrefsError.ioError(path: failure.path, reason: failure.reason)
        }
        do {
            try AtomicFile.syncDirectory(destination.deletingLastPathComponent().path)
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: error.path, reason: error.reason)
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

    /// Runs `body` holding the settings file's exclusive lock, as a set's: at most ``PersistentPrefs/lockTimeout``,
    /// then ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)``; a write of the file inside an `update`
    /// body, which would wait for itself, throws ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` (the path).
    private func locked<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try FileLock.withLock(for: url, label: "\(Settings.self)", body)
        } catch PersistentPrefs.PrefsError.transactionInProgress {
            throw PersistentPrefs.PrefsError.transactionInProgress(root: url.path)
        }
    }

    /// The settings file decoded without its lock, when it exists and needs no migration (the usual load, which a
    /// stopped writer must not delay); `nil` otherwise.
    private func decodedWithoutLock() throws -> Settings? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data = try contents(of: url)
        guard try migrated(data) == nil else { return nil }
        return try decode(data, from: url)
    }

    /// Writes `settings`, stamped with the type's schema version; refuses to overwrite a file of a newer version.
    private func writeUnlocked(_ settings: Settings) throws {
        let encoder = PropertyListEncoder()
        // Binary keeps every value exactly (a date's fraction of a second); `stamped` writes XML where XML can.
        encoder.outputFormat = .binary
        let data: Data
        do {
            data = try encoder.encode(settings)
        } catch {
            throw PersistentPrefs.PrefsError.encodingFailed(type: "\(Settings.self)", reason: "\(error)")
        }
        if let existing = (try? AtomicFile.readRegular(url.path, limit: PlistFile.maximumReadSize)) ?? nil, let set = Self.dictionary(existing.data) {
            let stored = Self.version(of: set)
            if stored > Settings.schemaVersion {
                throw PersistentPrefs.PrefsError.newerSchemaVersion(root: url.path, stored: stored, supported: Settings.schemaVersion)
            }
            // A file its migration cannot carry is not replaced (as a set that fails to migrate is not).
            if stored < Settings.schemaVersion { _ = try migrated(existing.data) }
        }
        try replace(url, with: Self.stamped(data, rewriting: true))
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
            throw PersistentPrefs.PrefsError.noBundledSettings(type: "\(Settings.self)")
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

    /// The settings file decoded, migrated first (and written back) when an older version wrote it. Call it holding
    /// the file's lock.
    private func decodeCurrent() throws -> Settings {
        let data = try contents(of: url)
        guard let migrated = try migrated(data) else { return try decode(data, from: url) }
        let value = try decode(migrated, from: url)
        try replace(url, with: migrated)
        return value
    }

    /// `data`, a settings file, carried to the type's schema version by the pending steps and stamped; `nil` when there
    /// is nothing to do (no versioning, current or newer, not a dictionary).
    private func migrated(_ data: Data) throws -> Data? {
        let version = Settings.schemaVersion
        guard version > 0, var set = Self.dictionary(data) else { return nil }
        let stored = SchemaPlan.take(from: &set)
        guard stored < version, !set.isEmpty else { return nil }
        let plan = SchemaPlan(version: version, writesNewer: false) {
            SchemaPlan.Migration(steps: Settings.migrations, vetting: .anyKey)
        }
        let report = try plan.report(on: set, from: stored, root: url.path)
        var result = report.after
        result[PersistentPrefs.schemaVersionKey] = version
        let encoded: Data
        do {
            encoded = try PlistWriting.portableData(result)
            _ = try PropertyListDecoder().decode(Settings.self, from: encoded)
        } catch {
            let last = Settings.migrations[version - 1]
            throw PersistentPrefs.PrefsError.migrationFailed(
                root: url.path, step: version, name: last.description,
                reason: "the result does not decode as \(Settings.self): \(Self.describe(error))")
        }
        return encoded
    }

    /// `data` (an encoded settings value) with the type's schema version added, if any, in the form every reader reads
    /// back the same (`PlistWriting.portableData(_:)`); an unversioned file's bytes are kept unless `rewriting`.
    private static func stamped(_ data: Data, rewriting: Bool = false) -> Data {
        let version = Settings.schemaVersion
        guard version > 0 || rewriting, var set = dictionary(data) else { return data }
        if version > 0 { set[PersistentPrefs.schemaVersionKey] = version }
        return (try? PlistWriting.portableData(set)) ?? data
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
            guard try AtomicFile.remove(url) else { throw PersistentPrefs.PrefsError.noSettingsFile(path: url.path) }
        } catch let failure as AtomicFile.Failure {
            throw PersistentPrefs.PrefsError.ioError(path: failure.path, reason: failure.reason)
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
            throw PersistentPrefs.PrefsError.nothingToResetTo(type: "\(Settings.self)")
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
            throw PersistentPrefs.PrefsError.decodingFailed(path: file.path, reason: Self.describe(error))
        }
    }

    private func contents(of file: URL) throws -> Data {
        do throws(AtomicFile.Failure) {
            guard let contents = try AtomicFile.readRegular(file.path, limit: PlistFile.maximumReadSize) else {
                throw AtomicFile.Failure(path: file.path, reason: "the file does not exist")
            }
            return contents.data
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: error.path, reason: error.reason)
        }
    }

    private func replace(_ file: URL, with data: Data) throws {
        do {
            try AtomicFile.write(data, to: file)
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: error.path, reason: error.reason)
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

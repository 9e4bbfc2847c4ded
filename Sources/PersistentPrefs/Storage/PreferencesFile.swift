import Foundation

/// A property-list file of top-level keys (the file of a `UserDefaults` suite on Linux, or any property-list file
/// holding a dictionary) read and changed the way ``UserDefaultsStore`` changes suites there.
///
/// Every change takes the suite's lock, reads the file again, applies only what it changes, replaces the file
/// atomically and is durable when it returns. Programs using the library on the suite see the change at once;
/// programs using plain `UserDefaults` see it after their next `synchronize()`, and a plain save that raced the
/// change does not undo it. Reads take no lock and never write. A damaged suite file is moved aside and reported; a
/// file named by path (``init(url:)``) that is not a property list is reported and left as it is.
///
/// ```swift
/// let suite = try PreferencesFile(suiteName: "com.example.app")
/// try suite.update { keys in keys["Launches"] = ((keys["Launches"] as? Int) ?? 0) + 1 }
/// print(try suite.contents() ?? [:])
/// ```
///
/// On Apple platforms `cfprefsd` owns the preferences files; use `UserDefaults` (or the `defaults` command) there.
public struct PreferencesFile: Sendable {
    /// The property-list file.
    public let url: URL

    /// Whether a damaged file is moved aside (a suite's file) or left where it is (a file named by path).
    private let movesDamagedFileAside: Bool

    /// The system layer files of the suite or set the file is (none for a file the library does not know).
    private let layers: LayerReader

    /// Whether the file is a ``PlistFileStore`` set file (its keys are the set's), not a suite's (keys are root keys).
    private let holdsSet: Bool

    /// The file at `url`, which need not exist yet. It is never moved aside: one that is not a property list of
    /// top-level keys (or not a regular file) is reported, and left as it is. A file the library knows keeps its system
    /// layers however its path is spelled: a suite's file in ``preferencesDirectory`` has the suite's, a `.plist` in a
    /// folder inside it those of the set a ``PlistFileStore`` keeps there (see <doc:LayersAndLockdown>). A change of a
    /// key they lock is refused.
    public init(url: URL) {
        self.url = url
        movesDamagedFileAside = false
        let files = LayerPaths.files(forFileAt: url)
        layers = LayerReader(files: files)
        holdsSet = files.contains { !$0.holdsRoots }
    }

    /// The file of the `UserDefaults` suite `suiteName` in ``preferencesDirectory``.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/invalidSuiteName(name:reason:)`` for a name with `/` or `..`, an empty
    ///   name, or a special domain.
    public init(suiteName: String) throws {
        if let problem = SuitePaths.problem(with: suiteName) {
            throw PersistentPrefs.PrefsError.invalidSuiteName(name: suiteName, reason: problem)
        }
        url = Self.preferencesDirectory.appendingPathComponent(suiteName + ".plist", isDirectory: false)
        movesDamagedFileAside = true
        layers = LayerReader(files: LayerPaths.files(relativeFolder: "", name: url.lastPathComponent, holdsRoots: true))
        holdsSet = false
    }

    /// Where Foundation on Linux keeps `UserDefaults` suites: `$XDG_CONFIG_HOME` when it is an absolute path, else
    /// `~/.config`. The same rule holds on Apple platforms, where `cfprefsd` keeps suites elsewhere (use ``init(url:)``).
    public static var preferencesDirectory: URL { SuitePaths.directory }

    /// The suites in ``preferencesDirectory`` (its `*.plist` files), sorted; none when the folder does not exist.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when it cannot be listed.
    public static func suiteNames() throws -> [String] {
        let directory = preferencesDirectory
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch CocoaError.fileReadNoSuchFile {
            return []
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: directory.path, reason: (error as NSError).localizedDescription)
        }
        return names.filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") && $0 != ".plist" }
            .map { String($0.dropLast(".plist".count)) }
            .filter { SuitePaths.problem(with: $0) == nil }
            .sorted()
    }

    /// The file's top-level keys and values as the file holds them (a value a stale plain save put back, too, until
    /// the library's next write puts it right); `nil` when there is no file. Takes no lock and writes nothing.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` for a damaged file (a suite's file is moved
    ///   aside and ``damageNotice`` reports it until written again; a file named by path is left where it is);
    ///   ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when it cannot be read, or is not a regular file.
    public func contents() throws -> [String: Any]? {
        try PlistFile.read(url, movingAside: movesDamagedFileAside)
    }

    /// Changes the file's top-level keys with `change`, in one durable, atomic write under the suite's lock; the file
    /// is created when it does not exist. `change` runs on the file as read again under the lock, and may run more
    /// than once (on a newer file, when another program rewrites it meanwhile): keep it free of other side effects.
    ///
    /// - Throws: What `change` throws; ``PersistentPrefs/PrefsError/valuesNotPlistCompatible(invalidElements:)``
    ///   naming the keys whose new values a property list cannot hold; ``PersistentPrefs/PrefsError/keyLocked(key:)``
    ///   for a key locked in the system layers (<doc:LayersAndLockdown>);
    ///   ``PersistentPrefs/PrefsError/ioError(path:reason:)``. Nothing is written then.
    public func update(_ change: (inout [String: Any]) throws -> Void) throws {
        // A file named by path that is not a property list is refused before a lock file is made beside it.
        if !movesDamagedFileAside { _ = try contents() }
        try UserDefaultsStore.update(
            suiteFile: url, describing: "the suite", label: url.lastPathComponent, layers: layers, movingAside: movesDamagedFileAside
        ) { suite in
            let before = suite
            try change(&suite)
            var refused: [String] = []
            let changed = PlistValue.changedKeys(before, suite)
            for key in changed {
                guard let value = suite[key] else { continue }
                if let normalized = PlistValue.normalized(value) { suite[key] = normalized } else { refused.append(key) }
            }
            if !refused.isEmpty { throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: refused.sorted()) }
            try checkLocks(from: before, to: suite)
            return .write(changed: changed)  // the write records these (a value normalised back to its old self too: harmless)
        }
    }

    /// Removes the file (the whole suite) under the suite's lock, with its lock file (`<file>.lock`, holding the
    /// ledger) and damage note (`<file>.damaged`). The suite's schemas (`<suite>.schemas/`) and damaged copies moved
    /// aside (`<file>.corrupt-…`) stay.
    ///
    /// - Returns: Whether there was a file to remove.
    /// - Throws: ``PersistentPrefs/PrefsError/keyLocked(key:)`` when the file holds a value of a locked key;
    ///   ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when it cannot be removed.
    @discardableResult
    public func remove() throws -> Bool {
        if !movesDamagedFileAside { _ = try contents() }  // a file that is not a property list is left alone
        return try FileLock.withLock(for: url, label: url.lastPathComponent) { lock in
            // Locked keys the user's file holds stay: removing them is a change as well.
            if let stored = try PlistFile.read(url, movingAside: movesDamagedFileAside) { try checkLocks(from: stored, to: [:]) }
            let existed = FileManager.default.fileExists(atPath: url.path)
            try PlistFile.write(nil, to: url, format: .xml)
            SuiteLedger.clear(lock)  // removed on purpose: nothing to put back (kept should the removal below fail)
            DamageNote.clear(for: url)
            lock.removeFile()  // last, while still held: see FileLock.Held.removeFile()
            return existed
        }
    }

    /// Refuses with ``PersistentPrefs/PrefsError/keyLocked(key:)`` a change of the file's keys that changes a locked
    /// key (a suite's root key or a key of a root key's set; in a set file, a key of the set).
    private func checkLocks(from before: [String: Any], to after: [String: Any]) throws {
        guard holdsSet else { return try layers.checkSuiteChange(from: before, to: after) }
        let set = layers.stack(root: nil)
        if let key = set.lockedChange(stored: before, to: after) {
            throw PersistentPrefs.PrefsError.keyLocked(key: key)
        }
    }

    /// Where the library keeps the schema of the set under the top-level key `root` (see ``PrefsSchema``):
    /// `<suite>.schemas/<root file name>.json` beside the file (it may not exist). A schema this process's writes
    /// publish is there when it answers.
    public func schemaFileURL(forRoot root: String) -> URL {
        SchemaPublishing.waitForAll()
        return SuitePaths.schemaFile(besides: url, root: root)
    }

    /// Whether the folder of this suite's schemas (``schemaFileURL(forRoot:)``) exists: without it no set in the suite
    /// has a schema. For `prefs-harness`.
    package var hasSchemaFolder: Bool {
        SchemaPublishing.waitForAll()
        var info = stat()
        return stat(SuitePaths.schemaFolder(besides: url), &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// The damage reported for this file, or `nil`: after a damaged file was moved aside, every reader reports
    /// ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` (naming where it went) until the file is written again.
    public var damageNotice: PersistentPrefs.PrefsError? { DamageNote.notice(for: url) }
}

import Foundation

extension PersistentPrefs {
    /// Why an operation failed, in every style. The non-throwing API puts it in ``PersistentPrefs/lastError``, the
    /// throwing API throws it. Every case names the offending keys, root key or path; a failed operation changes
    /// nothing, in memory or in the store.
    ///
    /// ```swift
    /// switch prefs.lastError {
    /// case nil: break                                              // the last operation worked
    /// case .typeMismatch(let key, let expected, let found)?:
    ///     print("\(key) holds \(found), not \(expected); the default was used")
    /// case let error?: print(error)                                // every case has a sentence
    /// }
    /// ```
    public enum PrefsError: Error {
        /// A write used keys that are not in ``PersistentPrefs/keys`` (`invalidElements`, sorted). Nothing was written.
        case incorrectKeys(invalidElements: [String])

        /// A write contained values a property list cannot hold or read back (nested over 100 deep, dates not finite
        /// or outside the years 1–9999). `invalidElements`: the *top-level* keys, sorted. Nothing was written.
        case valuesNotPlistCompatible(invalidElements: [String])

        /// Kept for source compatibility with RVS_PersistentPrefs; never produced (nothing stored reads as empty).
        case noStoredPrefsForKey(key: String)

        /// A failure no other case describes, with its underlying error when there is one.
        case unknownError(error: (any Error)?)

        /// The selected `UserDefaults` suite could not be opened (`UserDefaults(suiteName:)` or an override of
        /// ``PersistentPrefs/userDefaults`` returned `nil`). Nothing was read or written.
        case userDefaultsUnavailable

        /// The object stored under the root key `key` is not a string-keyed dictionary. Reads return an empty set; it
        /// is left alone until a whole-set write (``PersistentPrefs/values``, ``PersistentPrefs/clear()``) replaces it.
        case invalidStoredValue(key: String)

        /// The store's data at `path` could not be parsed; `reason` says why and where the file was moved, or that it
        /// was left as it is (no write replaces it). Every reader of a set in it reports this (the set reads as empty)
        /// until the file is written again or ``PersistentPrefs/acknowledgeDamage()`` is called.
        case corruptStore(path: String, reason: String)

        /// Reading or writing `path` failed; `reason` says why. Nothing was changed.
        case ioError(path: String, reason: String)

        /// `name` cannot be a `UserDefaults` suite (it escapes the folder or names a special domain; `reason` says which).
        case invalidSuiteName(name: String, reason: String)

        /// The value stored under `key` is `found`, not the declared `expected`: the read returned the default.
        case typeMismatch(key: String, expected: String, found: String)

        /// A write cannot run because it would wait for this thread's own write of the set `root`: an
        /// ``PersistentPrefs/update(_:)`` inside a ``PersistentPrefs/batch(_:)`` of the same instance; inside an
        /// `update` body, a write of the same set or of another set in the same file; or a write of a set whose
        /// writer waits to write `root`. Nothing was written (see <doc:Transactions>).
        case transactionInProgress(root: String)

        /// The value for `key` is not one its declaration (type, `in:`, `validate:`, ``PersistentPrefs/validators``)
        /// allows; `reason` says why, naming the value. A refused write changes nothing; a stored value reads as the
        /// default and stays stored. A locked key is reported as ``keyLocked(key:)`` instead.
        case invalidValue(key: String, reason: String)

        /// The set `root` (for a ``SettingsManageable`` type, its file's path) could not be migrated: the step to
        /// version `step` (`name`) threw, or its result was refused (`reason`). Nothing was written; the set stays
        /// readable, and writes are refused until a migration succeeds (<doc:EvolvingAPreferenceSet>).
        case migrationFailed(root: String, step: Int, name: String, reason: String)

        /// The set `root` (for a ``SettingsManageable`` type, its file's path) was stored at schema version `stored`,
        /// newer than this code's `supported`. It stays readable and untouched; writes are refused unless the subclass
        /// opts in with ``PersistentPrefs/writesNewerSchemaVersions``.
        case newerSchemaVersion(root: String, stored: Int, supported: Int)

        /// A write gave up waiting `waited` seconds (over ``PersistentPrefs/lockTimeout``) for the lock of `path`, held
        /// by `holderPID` where known (always on Linux), typically a stopped or stuck process. Nothing was written;
        /// reads never wait. See <doc:SharedMachines> and, for `UserDefaults` on Apple platforms, <doc:ApplePlatforms>.
        case lockTimeout(path: String, holderPID: Int32?, waited: TimeInterval)

        /// Other programs' changes to `path` are not reported at once: the operating system's file watching cannot be
        /// used (`reason` says why), so the library polls the file instead; values stay current, a little later.
        /// Listed in ``PersistentPrefs/problems`` and ``PrefsObservation/problem`` while it lasts (<doc:SharedMachines>).
        case watchDegraded(path: String, reason: String)

        /// Several `@Pref` properties use the key `key` with different types (`types`, sorted). Reported when an
        /// instance is made, and in ``PersistentPrefs/problems``; give each property its own key.
        case conflictingDeclarations(key: String, types: [String])

        /// The write would change `key`, which an administrator locked in a system layer (see
        /// ``PersistentPrefs/isLocked(_:)`` and <doc:LayersAndLockdown>). Nothing was written.
        case keyLocked(key: String)

        /// A ``SettingsManageable`` value of `type` could not be encoded (`reason`). Nothing was written.
        case encodingFailed(type: String, reason: String)

        /// The ``SettingsManageable`` settings file at `path` could not be decoded (`reason`); it was left as it is.
        case decodingFailed(path: String, reason: String)

        /// There is no bundled `<Type>.plist` for the ``SettingsManageable`` type `type`.
        case noBundledSettings(type: String)

        /// There is no ``SettingsManageable`` settings file at `path` (from ``SettingsManageable/delete()``).
        case noSettingsFile(path: String)

        /// ``SettingsManageable/reset()`` of `type` found neither bundled defaults nor an initial copy. Nothing changed.
        case nothingToResetTo(type: String)
    }
}

// MARK: - Names of the Codable style's earlier error type

extension PersistentPrefs.PrefsError {
    /// The ``ioError(path:reason:)`` case, under the name the Codable style's own error type used.
    @available(*, deprecated, renamed: "ioError(path:reason:)")
    public static func ioFailed(path: String, reason: String) -> Self {
        .ioError(path: path, reason: reason)
    }

    /// ``migrationFailed(root:step:name:reason:)`` under the Codable style's old labels.
    @available(*, deprecated, renamed: "migrationFailed(root:step:name:reason:)")
    public static func migrationFailed(path: String, step: Int, name: String, reason: String) -> Self {
        .migrationFailed(root: path, step: step, name: name, reason: reason)
    }

    /// ``newerSchemaVersion(root:stored:supported:)`` under the Codable style's old labels.
    @available(*, deprecated, renamed: "newerSchemaVersion(root:stored:supported:)")
    public static func newerSchemaVersion(path: String, stored: Int, supported: Int) -> Self {
        .newerSchemaVersion(root: path, stored: stored, supported: supported)
    }
}

// MARK: - Equatable

extension PersistentPrefs.PrefsError: Equatable {
    /// The same case with equal associated values; `unknownError` compares its errors' `String(reflecting:)`.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case let (.incorrectKeys(a), .incorrectKeys(b)): return a == b
        case let (.valuesNotPlistCompatible(a), .valuesNotPlistCompatible(b)): return a == b
        case let (.noStoredPrefsForKey(a), .noStoredPrefsForKey(b)): return a == b
        case let (.unknownError(a), .unknownError(b)):
            return a.map { String(reflecting: $0) } == b.map { String(reflecting: $0) }
        case (.userDefaultsUnavailable, .userDefaultsUnavailable): return true
        case let (.invalidStoredValue(a), .invalidStoredValue(b)): return a == b
        case let (.corruptStore(p1, r1), .corruptStore(p2, r2)): return p1 == p2 && r1 == r2
        case let (.ioError(p1, r1), .ioError(p2, r2)): return p1 == p2 && r1 == r2
        case let (.typeMismatch(k1, e1, f1), .typeMismatch(k2, e2, f2)): return k1 == k2 && e1 == e2 && f1 == f2
        case let (.invalidSuiteName(n1, r1), .invalidSuiteName(n2, r2)): return n1 == n2 && r1 == r2
        case let (.transactionInProgress(a), .transactionInProgress(b)): return a == b
        case let (.invalidValue(k1, r1), .invalidValue(k2, r2)): return k1 == k2 && r1 == r2
        case let (.migrationFailed(a1, s1, n1, r1), .migrationFailed(a2, s2, n2, r2)):
            return a1 == a2 && s1 == s2 && n1 == n2 && r1 == r2
        case let (.newerSchemaVersion(r1, s1, k1), .newerSchemaVersion(r2, s2, k2)): return r1 == r2 && s1 == s2 && k1 == k2
        case let (.conflictingDeclarations(k1, t1), .conflictingDeclarations(k2, t2)): return k1 == k2 && t1 == t2
        case let (.lockTimeout(p1, h1, w1), .lockTimeout(p2, h2, w2)): return p1 == p2 && h1 == h2 && w1 == w2
        case let (.watchDegraded(p1, r1), .watchDegraded(p2, r2)): return p1 == p2 && r1 == r2
        case let (.keyLocked(a), .keyLocked(b)): return a == b
        case let (.encodingFailed(t1, r1), .encodingFailed(t2, r2)): return t1 == t2 && r1 == r2
        case let (.decodingFailed(p1, r1), .decodingFailed(p2, r2)): return p1 == p2 && r1 == r2
        case let (.noBundledSettings(a), .noBundledSettings(b)): return a == b
        case let (.noSettingsFile(a), .noSettingsFile(b)): return a == b
        case let (.nothingToResetTo(a), .nothingToResetTo(b)): return a == b
        default: return false
        }
    }
}

// MARK: - CustomStringConvertible

extension PersistentPrefs.PrefsError: CustomStringConvertible {
    /// One sentence naming the offending keys, value, rule, root key or path, and what was left as it was.
    public var description: String {
        switch self {
        case .incorrectKeys(let keys):
            return "\(keys.quotedList) \(keys.count == 1 ? "is not a key" : "are not keys") of this preference set, so nothing was written."
        case .valuesNotPlistCompatible(let keys):
            return "The \(keys.count == 1 ? "value" : "values") for \(keys.quotedList) cannot be stored in a property list, so nothing was written."
        case .noStoredPrefsForKey(let key):
            return "Nothing is stored under the root key \"\(key)\"."
        case .unknownError(let error):
            return "An unexpected error occurred: \(error.map { String(describing: $0).asClause } ?? "no details")."
        case .userDefaultsUnavailable:
            return "The UserDefaults suite for these preferences could not be opened, so nothing was read or written."
        case .invalidStoredValue(let key):
            return "The value stored under the root key \"\(key)\" is not a dictionary with String keys, so the set reads as empty and the stored value is left untouched."
        case .corruptStore(let path, let reason):
            return "The preferences store at \(path) is unreadable: \(reason.asClause)."
        case .ioError(let path, let reason):
            return "Could not read or write \(path) (\(reason.asClause)), so nothing was changed."
        case .invalidSuiteName(let name, let reason):
            return "\"\(name)\" cannot be a UserDefaults suite (\(reason.asClause)), so nothing was read or written."
        case .typeMismatch(let key, let expected, let found):
            return "The value stored under \"\(key)\" is \(found), not \(expected), so it reads as the default and stays stored as it is."
        case .invalidValue(let key, let reason):
            return "The value for \"\(key)\" is not allowed: \(reason.asClause)."
        case .migrationFailed(let root, let step, let name, let reason):
            return "The set \"\(root)\" could not be migrated because the step to version \(step) (\(name)) failed (\(reason.asClause)), so nothing was written: the set stays as stored, and writes to it are refused until it can be migrated."
        case .conflictingDeclarations(let key, let types):
            return "Several @Pref properties use the key \"\(key)\" with different types (\(types.joined(separator: ", "))), so they overwrite each other's values; give each its own key."
        case .newerSchemaVersion(let root, let stored, let supported):
            return "The set \"\(root)\" was stored by a newer version of the program (schema version \(stored); this code knows up to \(supported)), so it stays readable and untouched, and writes to it are refused."
        case .lockTimeout(let path, let holder, let waited):
            let who = holder.map { "process \($0) holds it" } ?? "another process holds it"
            let lock = path.hasPrefix("/") ? "its lock (\(path).lock)" : "its write lock"
            return "Gave up writing \(path) after waiting \(String(format: "%.1f", waited)) s for \(lock): \(who), perhaps stopped or stuck; nothing was written, and reads are not affected."
        case .watchDegraded(let path, let reason):
            return "Changes to \(path) by other programs are not reported at once (\(reason.asClause)); values stay current, a little later."
        case .keyLocked(let key):
            return "The key \"\(key)\" is locked by the system administrator, so nothing was written: it reads the value the system sets."
        case .encodingFailed(let type, let reason):
            return "\(type) could not be encoded as a property list (\(reason.asClause)), so nothing was written."
        case .decodingFailed(let path, let reason):
            return "The settings file \(path) could not be read: \(reason.asClause). It was left as it is."
        case .noBundledSettings(let type):
            return "There is no bundled \(type).plist with default settings."
        case .noSettingsFile(let path):
            return "There is no settings file at \(path)."
        case .nothingToResetTo(let type):
            return "\(type) has neither bundled defaults nor an initial copy to reset to, so nothing was changed."
        case .transactionInProgress(let root):
            return "The set \"\(root)\" is in the middle of a batch or update on this thread, so this write cannot run here and nothing was written (it would wait for itself, as would a write of another set in the same file, or of a set whose writer is waiting for this one); make the change through the batch or the update's dictionary, or after it."
        }
    }
}

// MARK: - LocalizedError

extension PersistentPrefs.PrefsError: LocalizedError {
    /// The same sentence as ``description``.
    public var errorDescription: String? { description }
}


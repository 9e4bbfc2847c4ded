import Foundation

/// One step of a set's schema migrations: it takes the set from one version to the next.
///
/// A subclass lists its steps in ``PersistentPrefs/migrations``; the step at position `n`
/// (counting from 0) takes a set stored at version `n` to version `n + 1`, so the version each
/// step produces is its position plus one, and ``PersistentPrefs/schemaVersion`` must equal the
/// number of steps.
///
/// ```swift
/// override class var schemaVersion: Int { 2 }
/// override class var migrations: [PrefsMigration] {
///     [
///         .renameKey("Font Size", to: "Editor Font Size"),                 // 0 → 1
///         .transform("Dark Mode") { ($0 as? Bool) == true ? "dark" : "light" },  // 1 → 2
///     ]
/// }
/// ```
///
/// Steps get the set in its stored form (`NSNumber`, `String`, `Date`, `Data`, arrays and
/// dictionaries of those) and may read every stored key, including keys that ``PersistentPrefs/keys``
/// no longer lists. They run on a copy, under the store's cross-process lock, and their result
/// is written in one store write; keep them free of side effects other than the set (a step runs
/// again if a program that does not use this library rewrites the file at that moment).
public struct PrefsMigration: Sendable, CustomStringConvertible {
    /// What the step does, for error messages and the harness's `migrate --dry-run`.
    public let description: String
    let body: @Sendable (inout [String: Any]) throws -> Void

    /// A step that changes the set with `body`, described by `description`.
    ///
    /// ```swift
    /// PrefsMigration("split Window into Width and Height") { set in
    ///     guard let window = set.removeValue(forKey: "Window") as? [String: Any] else { return }
    ///     set["Width"] = window["w"]
    ///     set["Height"] = window["h"]
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - description: What the step does.
    ///   - body: Changes the set; throws to refuse the migration (nothing is then written).
    public init(_ description: String, _ body: @escaping @Sendable (inout [String: Any]) throws -> Void) {
        self.description = description
        self.body = body
    }

    /// Moves the value stored under `from` to `to`. Nothing happens when `from` holds nothing;
    /// otherwise its value replaces any value under `to`.
    ///
    /// - Parameters:
    ///   - from: The old key.
    ///   - to: The new key.
    /// - Returns: The step.
    public static func renameKey(_ from: String, to: String) -> PrefsMigration {
        PrefsMigration("rename \"\(from)\" to \"\(to)\"") { set in
            guard let value = set.removeValue(forKey: from) else { return }
            set[to] = value
        }
    }

    /// Removes the value stored under `key`, if any.
    ///
    /// - Parameter key: The key to remove.
    /// - Returns: The step.
    public static func removeKey(_ key: String) -> PrefsMigration {
        PrefsMigration("remove \"\(key)\"") { set in set[key] = nil }
    }

    /// Replaces the value stored under `key` with what `body` makes of it; `nil` removes it.
    /// Not called when `key` holds nothing.
    ///
    /// ```swift
    /// .transform("Dark Mode") { ($0 as? Bool) == true ? "dark" : "light" }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key whose value changes.
    ///   - body: The new value for the stored one; throws to refuse the migration.
    /// - Returns: The step.
    public static func transform(_ key: String, _ body: @escaping @Sendable (Any) throws -> Any?) -> PrefsMigration {
        PrefsMigration("transform \"\(key)\"") { set in
            guard let value = set[key] else { return }
            set[key] = try body(value)
        }
    }

    /// A step that changes the set as a whole with `body`.
    ///
    /// - Parameter body: Changes the set; throws to refuse the migration.
    /// - Returns: The step.
    public static func custom(_ body: @escaping @Sendable (inout [String: Any]) throws -> Void) -> PrefsMigration {
        PrefsMigration("custom step", body)
    }
}

/// What a migration did, or would do: see ``PersistentPrefs/migrate()`` and
/// ``PersistentPrefs/migrationPreview()``.
public struct PrefsMigrationReport {
    /// The schema version the set was stored at.
    public let fromVersion: Int
    /// The schema version the steps take it to: the subclass's ``PersistentPrefs/schemaVersion``
    /// (or `fromVersion`, when no step runs).
    public let toVersion: Int
    /// The steps that ran (or would run), in order, each described as "version N: …".
    public let steps: [String]
    /// The set before the steps (without the reserved version key).
    public let before: [String: Any]
    /// The set after the steps (without the reserved version key).
    public let after: [String: Any]
}

extension PersistentPrefs {
    /// The reserved key under which a set stores its schema version.
    ///
    /// The library writes it; it is not one of ``keys``, never shows in ``values`` or the
    /// subscript, and never makes a write fail (a value given for it is ignored). A set without
    /// it is at version 0.
    public static let schemaVersionKey = "PersistentPrefs.schemaVersion"

    /// The schema version this instance's set is stored at (0 for a set stored without one),
    /// or `nil` when the set cannot be read.
    public var storedSchemaVersion: Int? {
        try? resolvedDomain().schemaVersion()
    }

    /// Runs the pending migration steps now, and says what they did.
    ///
    /// Steps normally run on their own, the first time an instance touches a set stored at an
    /// older version (unless it was made inside ``withoutAutomaticMigration(_:)``); this runs
    /// them explicitly, for example to handle a failure with `try`. When the set is already at
    /// ``schemaVersion`` (another process migrated it, or nothing is stored), no step runs and
    /// the report's `steps` is empty.
    ///
    /// ```swift
    /// do {
    ///     let report = try prefs.migrate()
    ///     print("migrated from version", report.fromVersion)
    /// } catch PersistentPrefs.PrefsError.migrationFailed(_, let step, let name, let reason) {
    ///     print("step \(step) (\(name)) failed: \(reason)")
    /// }
    /// ```
    ///
    /// - Returns: What ran.
    /// - Throws: ``PrefsError/migrationFailed(root:step:name:reason:)``,
    ///   ``PrefsError/newerSchemaVersion(root:stored:supported:)``, or a store error. Nothing
    ///   is written when it throws.
    @discardableResult
    public func migrate() throws -> PrefsMigrationReport {
        var report: PrefsMigrationReport?
        try recordingThrows {
            report = try resolvedDomain().migrate(schemaPlan)
        }
        return report!
    }

    /// What ``migrate()`` would do to the set as stored now, without writing anything: the
    /// steps that would run and the set before and after them, vetted as a migration is.
    ///
    /// Open the instance inside ``withoutAutomaticMigration(_:)``, or the steps will already
    /// have run.
    ///
    /// - Returns: What would run.
    /// - Throws: What ``migrate()`` would throw.
    public func migrationPreview() throws -> PrefsMigrationReport {
        let plan = schemaPlan
        var report: PrefsMigrationReport?
        try recordingThrows {
            let domain = try resolvedDomain()
            let stored = try domain.reload()
            report = try plan.report(on: stored, from: try domain.schemaVersion(), root: key)
        }
        return report!
    }

    /// Runs `body` with automatic migration turned off: instances made inside do not migrate the
    /// set they open on first use (their writes still migrate it first, since nothing may be
    /// written at an older version). For tools that inspect stored sets, such as a dry run.
    ///
    /// ```swift
    /// let report = try PersistentPrefs.withoutAutomaticMigration {
    ///     try AppPrefs(key: "Main").migrationPreview()
    /// }
    /// ```
    ///
    /// - Parameter body: Makes and uses the instances.
    /// - Returns: What `body` returns.
    public static func withoutAutomaticMigration<Result>(_ body: () throws -> Result) rethrows -> Result {
        try MigrationControl.$automatic.withValue(false, operation: body)
    }

    /// The subclass's versioning, as the write path carries it.
    var schemaPlan: SchemaPlan {
        let type = type(of: self)
        let version = type.schemaVersion
        guard version != 0 else {
            return SchemaPlan(version: 0, writesNewer: type.writesNewerSchemaVersions, migration: nil, publication: schemaPublication)
        }
        // Worked out only when a migration runs (under the store's lock): the keys, rules and steps.
        return SchemaPlan(
            version: version, writesNewer: type.writesNewerSchemaVersions,
            migration: { [self] in SchemaPlan.Migration(steps: type.migrations, allowed: Set(keys), rules: ruleCheck()) },
            publication: schemaPublication)
    }

    /// Migrates the set of a newly resolved `domain` if it is stored at an older version, and
    /// reports a failure in ``lastError`` without failing the operation that resolved it: the
    /// set stays readable. (A set stored at a newer version is readable as it is; its writes
    /// report it.)
    func migrateOnFirstUse(_ domain: PrefsDomain) {
        guard MigrationControl.automatic else { return }
        let plan = schemaPlan
        guard plan.version > 0, let stored = try? domain.schemaVersion(), stored < plan.version else { return }
        do {
            try domain.migrate(plan)
        } catch {
            lastError = PrefsDomain.mapped(error)
        }
    }
}

/// Whether instances migrate on first use (see ``PersistentPrefs/withoutAutomaticMigration(_:)``).
enum MigrationControl {
    @TaskLocal static var automatic = true
}

/// A subclass's schema version and migrations, carried by every write of its instances: each
/// write re-reads the stored version under the store's lock, migrates an older set first,
/// refuses a newer one (unless allowed), and stamps the version it writes, all in the same
/// store write.
struct SchemaPlan {
    let version: Int
    let writesNewer: Bool
    /// The steps, keys and rules; `nil` for an unversioned class.
    let migration: (() -> Migration)?
    /// The writer's schema, written beside the set after a write (see ``PrefsSchema``); `nil`:
    /// none.
    var publication: SchemaPublication?

    init(version: Int, writesNewer: Bool, migration: (() -> Migration)?, publication: SchemaPublication? = nil) {
        self.version = version
        self.writesNewer = writesNewer
        self.migration = migration
        self.publication = publication
    }

    /// The steps of a subclass with what vets their result.
    struct Migration {
        let steps: [PrefsMigration]
        /// The keys the result may add or change; `nil`: any (a `Codable` type's decoder judges).
        let allowed: Set<String>?
        let rules: PersistentPrefs.Rules?
    }

    /// Thrown inside a migration-only write that finds the set already migrated: the store
    /// then writes nothing.
    struct AlreadyCurrent: Error {}

    /// The stored version in `set`, removed from it (0 when absent or not an integer).
    static func take(from set: inout [String: Any]) -> Int {
        guard let stamp = set.removeValue(forKey: PersistentPrefs.schemaVersionKey) else { return 0 }
        return ExactNumber(stamp)?.int ?? 0
    }

    func newer(stored: Int, root: String) -> PersistentPrefs.PrefsError {
        .newerSchemaVersion(root: root, stored: stored, supported: version)
    }

    /// `change`, as a write that re-reads the stored version under the store's lock: it migrates
    /// an older set first, refuses a newer one (unless allowed), and stamps the version.
    ///
    /// - Parameters:
    ///   - onlyMigrate: For a migration on its own: refuse (``AlreadyCurrent``) when there is
    ///     nothing to migrate, so the store writes nothing.
    ///   - log: Receives what the migration did, when it ran.
    func wrapped(_ change: PrefsChange, root: String, onlyMigrate: Bool = false, log: ((PrefsMigrationReport) -> Void)? = nil)
        -> PrefsChange
    {
        .transform { raw in
            var set = raw
            let stored = set[PersistentPrefs.schemaVersionKey] == nil ? 0 : Self.take(from: &set)
            if stored < version, !set.isEmpty {
                let report: PrefsMigrationReport
                do {
                    guard case .success(let current) = PlistValue.normalizedSet(set, for: .loading) else {
                        throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
                    }
                    report = try self.report(on: current, from: stored, root: root)
                } catch {
                    throw PrefsDomain.TransformFailure(underlying: error)
                }
                log?(report)
                set = report.after
            } else if onlyMigrate {
                throw PrefsDomain.TransformFailure(underlying: AlreadyCurrent())
            } else if stored > version, !writesNewer {
                throw PrefsDomain.TransformFailure(underlying: newer(stored: stored, root: root))
            }
            var result = try change.applied(to: set)
            let stamp = max(stored, version)
            if stamp > 0, !result.isEmpty {
                result[PersistentPrefs.schemaVersionKey] = stamp
            } else if result[PersistentPrefs.schemaVersionKey] != nil {
                result[PersistentPrefs.schemaVersionKey] = nil  // a value given for the reserved key is ignored
            }
            return result
        }
    }

    /// The steps from `stored` to ``version`` run on a copy of `set`, and the result vetted
    /// (keys the steps add or change must be allowed, their values storable and within their
    /// rules). Writes nothing.
    ///
    /// - Parameter locks: For a dry run (``PersistentPrefs/problems``): the set's layers, so a
    ///   migration that changes a locked key — which the write refuses with
    ///   ``PersistentPrefs/PrefsError/keyLocked(key:)`` — is reported naming its step and the key.
    /// - Throws: ``PersistentPrefs/PrefsError/migrationFailed(root:step:name:reason:)`` naming
    ///   the step that threw, or the last step that changed a refused or locked key;
    ///   ``PersistentPrefs/PrefsError/newerSchemaVersion(root:stored:supported:)``.
    func report(on set: [String: Any], from stored: Int, root: String, locks: LayerStack? = nil) throws -> PrefsMigrationReport {
        if stored > version {
            if writesNewer { return PrefsMigrationReport(fromVersion: stored, toVersion: stored, steps: [], before: set, after: set) }
            throw newer(stored: stored, root: root)
        }
        guard stored < version, !set.isEmpty, let migration = migration?() else {
            return PrefsMigrationReport(fromVersion: stored, toVersion: stored, steps: [], before: set, after: set)
        }
        let steps = migration.steps
        guard steps.count == version else {
            throw PersistentPrefs.PrefsError.migrationFailed(
                root: root, step: min(steps.count, version - 1) + 1, name: "migrations",
                reason: "schemaVersion is \(version) but migrations lists \(steps.count) step\(steps.count == 1 ? "" : "s") (the step at position n takes version n to n + 1)")
        }
        var current = set
        var lastChange: [String: Int] = [:]  // key → the version of the step that last changed it
        for produced in (stored + 1)...version {
            let step = steps[produced - 1]
            var next = current
            do {
                try step.body(&next)
            } catch {
                throw PersistentPrefs.PrefsError.migrationFailed(root: root, step: produced, name: step.description, reason: Self.describe(error))
            }
            next[PersistentPrefs.schemaVersionKey] = nil  // the library's own
            for key in PlistValue.changedKeys(current, next) { lastChange[key] = produced }
            current = next
        }
        let after: [String: Any]
        do {
            if let allowed = migration.allowed {
                after = try PersistentPrefs.vetted(current, changing: set, allowed: allowed, rules: migration.rules)
            } else {
                after = try PlistValue.normalizedSet(current).get()
            }
            if let key = locks?.lockedChange(from: set, to: after) { throw PersistentPrefs.PrefsError.keyLocked(key: key) }
        } catch let refusal as PersistentPrefs.PrefsError {
            let produced = refusal.offendingKey.flatMap { lastChange[$0] } ?? version
            throw PersistentPrefs.PrefsError.migrationFailed(
                root: root, step: produced, name: steps[produced - 1].description, reason: refusal.description)
        }
        return PrefsMigrationReport(
            fromVersion: stored, toVersion: version,
            steps: ((stored + 1)...version).map { "version \($0): \(steps[$0 - 1].description)" }, before: set, after: after)
    }

    private static func describe(_ error: any Error) -> String {
        (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
    }
}

extension PersistentPrefs.PrefsError {
    /// The first key a refusal names, if it names one.
    var offendingKey: String? {
        switch self {
        case .incorrectKeys(let keys), .valuesNotPlistCompatible(let keys): return keys.first
        case .invalidValue(let key, _), .typeMismatch(let key, _, _), .keyLocked(let key): return key
        default: return nil
        }
    }
}

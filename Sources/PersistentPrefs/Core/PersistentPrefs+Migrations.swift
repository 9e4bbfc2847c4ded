import Foundation

extension PersistentPrefs {
    /// The reserved key under which a set stores its schema version (absent: 0). The library writes it; it is not one
    /// of ``keys``, never shows in ``values`` or the subscript, and a value given for it is ignored.
    public static let schemaVersionKey = LayerStack.schemaVersionKey

    /// The schema version this instance's set is stored at (0 without one), or `nil` when it cannot be read.
    public var storedSchemaVersion: Int? {
        try? resolvedSet().schemaVersion()
    }

    /// Runs the pending migration steps now (they normally run on first use), and says what they did; when the set
    /// is already at ``schemaVersion`` the report's `steps` is empty. See <doc:EvolvingAPreferenceSet>.
    ///
    /// ```swift
    /// let report = try prefs.migrate()
    /// print("migrated from version", report.fromVersion)
    /// ```
    ///
    /// - Throws: ``PrefsError/migrationFailed(root:step:name:reason:)``,
    ///   ``PrefsError/newerSchemaVersion(root:stored:supported:)``, or a store error. Nothing is written then.
    @discardableResult
    public func migrate() throws -> PrefsMigrationReport {
        var report: PrefsMigrationReport?
        try reportingAndThrowing {
            report = try resolvedSet().migrate(schemaPlan)
        }
        return report!
    }

    /// What ``migrate()`` would do to the set as stored now, without writing anything. Open the instance inside
    /// ``withoutAutomaticMigration(_:)``, or the steps will already have run.
    ///
    /// - Throws: What ``migrate()`` would throw.
    public func migrationPreview() throws -> PrefsMigrationReport {
        let plan = schemaPlan
        var report: PrefsMigrationReport?
        try reportingAndThrowing {
            let sharedSet = try resolvedSet()
            let stored = try sharedSet.reload()
            report = try plan.report(on: stored, from: try sharedSet.schemaVersion(), root: key)
        }
        return report!
    }

    /// Runs `body` with automatic migration turned off: instances made inside do not migrate their set on first use
    /// (their writes still migrate it first). For tools that inspect stored sets, such as a dry run.
    ///
    /// ```swift
    /// let report = try PersistentPrefs.withoutAutomaticMigration {
    ///     try AppPrefs(key: "Main").migrationPreview()
    /// }
    /// ```
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
            migration: { [self] in migration(vetting(checkingTypes: false)) },
            publication: schemaPublication)
    }

    /// The migration steps of the subclass, with the vetting of their result.
    private func migration(_ vetting: Vetting) -> SchemaPlan.Migration {
        SchemaPlan.Migration(steps: type(of: self).migrations, vetting: vetting)
    }

    /// ``schemaPlan`` worked out now, holding nothing of this instance, for staged changes written after it is gone;
    /// its schema is published only if it is not yet beside `sharedSet`.
    func detachedSchemaPlan(for sharedSet: SharedSet) -> SchemaPlan {
        let type = type(of: self)
        var migration: (() -> SchemaPlan.Migration)?
        if type.schemaVersion != 0 {
            // Without the instance's set for its locks: a refusal then reads as a rule's.
            let worked = self.migration(vetting(checkingTypes: false, reportsLocks: false))
            migration = { worked }
        }
        var publication: SchemaPublication?
        if let publishing = schemaPublication, !sharedSet.cell.withLock({ $0.publishedBy.contains(publishing.classID) }) {
            let described = publishing.schema()
            publication = SchemaPublication(classID: publishing.classID) { described }
        }
        return SchemaPlan(version: type.schemaVersion, writesNewer: type.writesNewerSchemaVersions, migration: migration, publication: publication)
    }

    /// Migrates a newly resolved set stored at an older version; a failure goes to ``lastError`` without failing the
    /// operation that resolved it (the set stays readable).
    func migrateOnFirstUse(_ sharedSet: SharedSet) {
        guard MigrationControl.automatic else { return }
        let plan = schemaPlan
        guard plan.version > 0, let stored = try? sharedSet.schemaVersion(), stored < plan.version else { return }
        do {
            try sharedSet.migrate(plan)
        } catch {
            lastError = SharedSet.mapped(error)
        }
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

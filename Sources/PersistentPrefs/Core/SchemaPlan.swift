import Foundation

/// Whether instances migrate on first use (see ``PersistentPrefs/withoutAutomaticMigration(_:)``).
enum MigrationControl {
    @TaskLocal static var automatic = true
}

/// A subclass's schema version and migrations, carried by every write (in its ``SetPlan``): under the store's lock
/// an older set is migrated first, a newer one refused (unless allowed), and the version stamped.
struct SchemaPlan {
    let version: Int
    let writesNewer: Bool
    /// The steps, keys and rules; `nil` for an unversioned class.
    let migration: (() -> Migration)?
    /// The writer's schema, written beside the set after a write (see ``PrefsSchema``); `nil`: none.
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
        /// What the keys the result adds or changes must pass (``PersistentPrefs/Vetting/anyKey`` for a `Codable` type).
        let vetting: PersistentPrefs.Vetting
    }

    /// The stored version in `set`, removed from it (0 when absent or not an integer).
    static func take(from set: inout [String: Any]) -> Int {
        guard let stamp = set.removeValue(forKey: PersistentPrefs.schemaVersionKey) else { return 0 }
        return NumberCasts(stamp)?.int ?? 0
    }

    /// Why a set stored at schema version `stored` refuses this writer (newer, and not allowed); `nil`: it may be written.
    func refusal(ofStored stored: Int, root: String) -> PersistentPrefs.PrefsError? {
        guard stored > version, !writesNewer else { return nil }
        return .newerSchemaVersion(root: root, stored: stored, supported: version)
    }

    /// The steps from `stored` to ``version`` run on a copy of `set`, the result vetted; writes nothing. `locks`: for a
    /// dry run (``PersistentPrefs/problems``), the set's layers, so a step changing a locked key is reported.
    /// - Throws: ``PersistentPrefs/PrefsError/migrationFailed(root:step:name:reason:)`` naming the step that threw, or
    ///   the last step that changed a refused or locked key; `newerSchemaVersion`.
    func report(on set: [String: Any], from stored: Int, root: String, locks: LayerStack? = nil) throws -> PrefsMigrationReport {
        if let refusal = refusal(ofStored: stored, root: root) { throw refusal }
        if stored > version { return PrefsMigrationReport(fromVersion: stored, toVersion: stored, steps: [], before: set, after: set) }
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
            after = try migration.vetting.vet(current, changing: set, scope: .changed)
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

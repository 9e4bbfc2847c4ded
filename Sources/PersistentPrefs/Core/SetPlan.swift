import Foundation

/// One write of a set, as a value: everything the engine decides before the store's lock is
/// taken (the changes a coalescing set staged, this write's change, the writer's schema and
/// migrations), and ``apply(to:layers:)``, the one function that makes the set to store of the
/// set as stored. See ARCHITECTURE.md, "A write, end to end".
///
/// `apply` has no file, lock or clock in it. The closures it calls are the exception: an
/// `update` body and migration steps (the user's), and the vetting of their results, which
/// reads the instance's keys and rules under the instance's lock and words a rule's refusal of a
/// locked key by the layers the set last read. A store may apply a plan more than once, to a
/// newer file each time; the last outcome is the one carried out.
struct SetPlan {
    /// A change of the set beside the staged ones.
    enum Edit {
        /// A change as the public API names it: a setter's `set`, a `merge`, a `replace`, the
        /// `transform` of an `update` body.
        case change(PrefsChange)
        /// What a batch collected (without a base: a batch that replaced the set is a
        /// ``PrefsChange/replace(_:)``).
        case batch(PendingChanges)

        /// Whether the edit replaces the whole set, needing nothing of it.
        var replaces: Bool {
            if case .change(.replace) = self { return true }
            return false
        }
    }

    /// What applying the plan came to.
    enum Outcome: PlanOutcome {
        /// Write `set`; `changed` names the keys whose stored value differs from the set as
        /// stored (never the schema version); `migration` tells what a migration did, when one ran.
        case write(set: [String: Any], changed: Set<String>, migration: PrefsMigrationReport?)
        /// Nothing written: the plan only migrates, and the set needs no migration.
        case current
        /// Nothing written: why the change cannot be written (thrown to the caller unchanged).
        case refused(any Error)

        var written: (set: [String: Any], changed: Set<String>)? {
            guard case .write(let set, let changed, _) = self else { return nil }
            return (set, changed)
        }

        var refusal: (any Error)? {
            guard case .refused(let error) = self else { return nil }
            return error
        }
    }

    /// The root key of the set, named by refusals.
    let root: String
    /// The changes a coalescing set staged, written first (`nil`: none).
    let staged: PendingChanges?
    /// This write's own change (`nil`: only the staged changes, or only a migration).
    let edit: Edit?
    /// The writer's schema version and migrations.
    let schema: SchemaPlan
    /// Whether the plan only migrates: it ends as ``Outcome/current`` when there is nothing to
    /// migrate, and the staged changes wait for the next write.
    let onlyMigrate: Bool

    init(root: String, staged: PendingChanges?, edit: Edit?, schema: SchemaPlan, onlyMigrate: Bool = false) {
        self.root = root
        // A replacement leaves nothing of what was staged before it.
        self.staged = onlyMigrate || edit?.replaces == true ? nil : staged
        self.edit = edit
        self.schema = schema
        self.onlyMigrate = onlyMigrate
    }

    /// Whether the plan writes anything at all: a change, staged changes, or a migration.
    var isEmpty: Bool { staged == nil && edit == nil && !onlyMigrate }

    /// Whether the plan's change builds on the set as stored (so an unreadable set is reported
    /// rather than overwritten); `false` for a replacement.
    var buildsOnCurrent: Bool { edit?.replaces != true }

    /// The plan as a store carries it out: it always reads the set, for the stored schema
    /// version a replacement must respect too.
    var storePlan: WritePlan<Outcome> {
        WritePlan(buildsOnCurrent: true, apply: apply(to:layers:))
    }

    /// The set to store of `stored` (`nil`: what is stored under the root key is not a set)
    /// with `layers` in force, in this order:
    ///
    /// 1. A root that holds no set refuses any change but a replacement, which is applied to an
    ///    empty set.
    /// 2. The stored schema version is taken out of the set; an older set is migrated (the steps'
    ///    result vetted), a newer one refused (unless the writer writes newer versions), and
    ///    otherwise a plan that only migrates ends as ``Outcome/current``: nothing to migrate.
    /// 3. The staged changes are laid over the set, a key `layers` lock keeping its stored value
    ///    (it was locked after the change was staged, and the lock wins); then the edit.
    /// 4. The keys changed are found (after a migration, against the set as stored); the schema
    ///    version is stamped on a set that is not empty (a value given for it is ignored).
    /// 5. A change of a key `layers` lock is refused.
    ///
    /// What an edit's closure or a migration step throws, and every refusal, is the outcome
    /// ``Outcome/refused(_:)``, never thrown.
    func apply(to stored: [String: Any]?, layers: LayerStack) -> Outcome {
        do {
            return try applying(to: stored, layers: layers)
        } catch {
            return .refused(error)
        }
    }

    private func applying(to stored: [String: Any]?, layers: LayerStack) throws -> Outcome {
        guard let raw = stored ?? (buildsOnCurrent ? nil : [:]) else {
            throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
        }
        var set = raw
        let storedVersion = set[PersistentPrefs.schemaVersionKey] == nil ? 0 : SchemaPlan.take(from: &set)
        var migration: PrefsMigrationReport?
        // After a migration, or when a set that cannot be read is replaced, the keys changed are
        // found against the set as stored.
        var changedAgainstStored = false
        if storedVersion < schema.version, !set.isEmpty {
            changedAgainstStored = true
            if case .success(let current) = PlistValue.normalizedSet(set, for: .loading) {
                let report = try schema.report(on: current, from: storedVersion, root: root)
                migration = report
                set = report.after
            } else if buildsOnCurrent {
                throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
            } else {
                set = [:]  // a replacement repairs a set that cannot be read
            }
        } else if let refusal = schema.refusal(ofStored: storedVersion, root: root) {
            throw refusal
        } else if onlyMigrate {
            return .current
        }
        var (result, changed) = try edited(set, layers: layers)
        if changedAgainstStored { changed = PlistValue.changedKeys(raw, result) }
        changed.remove(PersistentPrefs.schemaVersionKey)
        let stamp = max(storedVersion, schema.version)
        if stamp > 0, !result.isEmpty {
            result[PersistentPrefs.schemaVersionKey] = stamp
        } else {
            result[PersistentPrefs.schemaVersionKey] = nil
        }
        if let key = layers.lockedChange(stored: raw, to: result) {
            throw PersistentPrefs.PrefsError.keyLocked(key: key)
        }
        return .write(set: result, changed: changed, migration: migration)
    }

    /// `set` (without its schema version) with the staged changes, then the edit, applied, and
    /// the keys whose value differs from `set`.
    private func edited(_ set: [String: Any], layers: LayerStack) throws -> (set: [String: Any], changed: Set<String>) {
        var result = set
        var changed: Set<String> = []
        if let staged {
            (result, changed) = staged.applying(to: set)
            if layers.hasLocks {
                for key in Set(result.keys).union(set.keys) where layers.isLocked(key) { result[key] = set[key] }
            }
        }
        let after: (set: [String: Any], changed: Set<String>)?
        switch edit {
        case .change(let change)?: after = try change.applying(to: result)
        case .batch(let pending)?: after = pending.applying(to: result)
        case nil: after = nil
        }
        if let after {
            result = after.set
            // Without staged changes, the edit's own keys as they are: no set of 1,000 keys hashed again.
            if changed.isEmpty { changed = after.changed } else { changed.formUnion(after.changed) }
        }
        if staged != nil { changed = changed.filter { !PlistValue.same(set[$0], result[$0]) } }
        return (result, changed)
    }
}

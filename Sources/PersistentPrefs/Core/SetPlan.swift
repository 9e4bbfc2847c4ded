import Foundation

/// One write of a set, as a value: what the engine decides before the store's lock is taken (staged changes, this
/// write's change, the writer's schema), and ``apply(to:layers:)``, which makes the set to store of the set as stored.
/// `apply` is pure (no file, lock or clock) apart from the closures it calls: user code (an `update` body, migration
/// steps) and the vetting of their results. A store may apply a plan more than once, to a newer file each time; the
/// last outcome is the one carried out.
struct SetPlan {
    /// A change of the set beside the staged ones.
    enum Edit {
        /// A change as the public API names it (a `set`, `merge`, `replace`, or an `update`'s `transform`).
        case change(PrefsChange)
        /// What a batch collected (without a base: one that replaced the set is a ``PrefsChange/replace(_:)``).
        case batch(PendingChanges)

        /// Whether the edit replaces the whole set, needing nothing of it.
        var replaces: Bool {
            if case .change(.replace) = self { return true }
            return false
        }
    }

    /// What applying the plan came to.
    enum Outcome: PlanOutcome {
        /// Write `set`; `changed`: the keys whose stored value changed (never the schema version); `migration`: what
        /// a migration did, when one ran.
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
    /// Whether the plan only migrates (``Outcome/current`` when there is nothing to; staged changes wait).
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

    /// Whether the change builds on the set as stored (an unreadable set is then reported); `false` for a replacement.
    var buildsOnCurrent: Bool { edit?.replaces != true }

    /// The plan as a store carries it out: always reading the set, whose schema version a replacement respects too.
    var storePlan: WritePlan<Outcome> {
        WritePlan(buildsOnCurrent: true, apply: apply(to:layers:))
    }

    /// The set to store of `stored` (`nil`: not a set) under `layers`, in this order:
    ///
    /// 1. A root holding no set refuses any change but a replacement, applied to an empty set.
    /// 2. The stored schema version is taken out; an older set is migrated, a newer one refused (unless allowed);
    ///    otherwise a plan that only migrates ends as ``Outcome/current``.
    /// 3. The staged changes are laid over the set, a locked key keeping its stored value (the lock wins); then the edit.
    /// 4. The keys changed are found (after a migration, against the set as stored); a non-empty set is stamped.
    /// 5. A change of a locked key is refused.
    ///
    /// What a closure or a step throws, and every refusal, is the outcome ``Outcome/refused(_:)``, never thrown.
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
        // After a migration, or when an unreadable set is replaced, the keys changed are found against the set as stored.
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

    /// `set` (without its schema version) with the staged changes, then the edit, applied, and the keys changed.
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

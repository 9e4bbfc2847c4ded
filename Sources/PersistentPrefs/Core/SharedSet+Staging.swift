import Foundation

// Staged changes of a coalescing set (see ``PersistentPrefs/coalescingInterval``): a setter
// applies its change to the cache at once and stages it; the next write of the set writes
// what is staged first, in the same store write. A background write is due `interval` after
// the first change staged since the last write took them, so the changes of one interval reach
// the file in one durable write, merged per key under the store's lock like any other write.
// Staged changes hold a use of the shared set, so it outlives its last instance until they are
// written; they are also written when the process exits normally and by
// ``PersistentPrefs/synchronize()``. A write that fails is retried an interval later, the
// changes staying staged (and shown); one the store refuses for good (a newer schema version, a
// failed migration) drops them and reads the set again.

extension SharedSet {
    /// The staged changes of a set and their background write.
    struct Staging {
        /// What the write holding the turn writes, or what a failed write left to write again.
        var writing: PendingChanges?
        /// The changes staged since ``writing`` was taken.
        var waiting: PendingChanges?
        /// The schema plan staged changes are written under, holding no instance (see
        /// ``PersistentPrefs/detachedSchemaPlan(for:)``): the last staging class's. Kept once
        /// made, so a class stages its changes without working it out again.
        var plan: SchemaPlan?
        /// The class whose plan ``plan`` is.
        var planOwner: ObjectIdentifier?
        /// How long the last change staged may wait for its write.
        var interval: TimeInterval = 0
        /// When the first of the ``waiting`` changes was staged: their write is due an
        /// ``interval`` later.
        var waitingSince = DispatchTime.now()
        /// Whether a background write is due.
        var scheduled = false
        /// The lease the staged changes hold on the shared set (see ``SetLease``), so it outlives
        /// its last instance until they are written.
        var lease: SetLease?
        /// Why the last write of staged changes failed; `nil` once a write of the set succeeds.
        var failure: PersistentPrefs.PrefsError?
        /// The refusal for which a background write dropped staged changes, until
        /// ``PersistentPrefs/synchronize()`` reports it or a later write of staged changes succeeds.
        var dropped: PersistentPrefs.PrefsError?

        var isEmpty: Bool { writing == nil && waiting == nil }

        /// Ends the changes the write holding the turn took (written or dropped).
        ///
        /// - Returns: The lease the staged changes held, when nothing is staged any more: the
        ///   caller ends it outside every lock.
        mutating func endWriting() -> SetLease? {
            writing = nil
            guard waiting == nil else { return nil }
            return lease.take()
        }
        /// The staged changes, in the order they apply.
        var changes: [PendingChanges] { [writing, waiting].compactMap { $0 } }
    }

    /// `state` — the set as the store holds it — with the staged changes of `staging` applied
    /// over the user's values.
    static func staged(_ state: State, _ staging: Staging) -> State {
        let changes = staging.changes
        guard !changes.isEmpty else { return state }
        var user = state.user
        for change in changes { user = change.applied(to: user) }
        return state.holding(user)
    }

    /// The class whose schema plan staged changes are written under (see ``Staging/plan``).
    var stagingPlanOwner: ObjectIdentifier? {
        cell.withLock { $0.staging.planOwner }
    }

    /// Applies `change` (a vetted ``PrefsChange/isStageable`` change) to the state at once and
    /// stages it for a background write within `interval`. Observers hear of it as of any write.
    ///
    /// - Parameters:
    ///   - plan: The schema plan of `owner`, the class of the instance staging the change; `nil`
    ///     when ``stagingPlanOwner`` is that class already.
    /// - Returns: Whether the change was staged: `false` when the set is stored at an older schema
    ///   version than the plan's (not yet stamped, or its migration failed: a durable write
    ///   migrates and stamps it first, or reports why not) or is no longer shared (its last use
    ///   ended meanwhile), so the caller writes the change durably.
    /// - Throws: What the store would refuse, now rather than at the write: the set stored by a
    ///   newer schema version, a change of a key the system layers lock. Nothing is staged then.
    func stage(_ change: PrefsChange, plan: SchemaPlan?, owner: ObjectIdentifier, interval: TimeInterval) throws -> Bool {
        defer { feed.deliver() }
        // The lease staged changes hold is taken before the change is staged, outside the lock;
        // one taken by a change that then stages nothing (refused, or not staged) ends when this
        // returns, outside the lock.
        var taken: SetLease?
        defer { WriteScope.ending(taken) }
        while true {
            if taken == nil, cell.withLock({ $0.staging.lease == nil }) {
                // A set no longer shared (its last lease ended meanwhile) stages nothing.
                guard let lease = lease(watching: false) else { return false }
                taken = lease
            }
            let outcome = try withLoadedCell { cell -> (staged: Bool, schedules: Bool)? in
                let current = cell.state!
                guard let schema = plan ?? cell.staging.plan else { preconditionFailure("a staged change without a schema plan") }
                if let refusal = schema.refusal(ofStored: current.schema, root: root) { throw refusal }
                guard current.schema >= schema.version else { return (false, false) }
                let updated = try change.applied(to: current.user)
                if let locked = current.layers.lockedChange(from: current.user, to: updated) { throw PersistentPrefs.PrefsError.keyLocked(key: locked) }
                // The lease was ended by a write meanwhile: take one again first.
                guard cell.staging.lease != nil || taken != nil else { return nil }
                let next = current.holding(updated)
                // A setter's one key is compared alone; other changes compare the sets.
                let changed: Set<String>
                if case .set(let key, _) = change {
                    changed = PlistValue.same(current.effective[key], next.effective[key]) ? [] : [key]
                } else {
                    changed = PlistValue.changedKeys(current.effective, next.effective)
                }
                if cell.staging.lease == nil { cell.staging.lease = taken.take() }  // now held by the staged changes
                if cell.staging.waiting == nil {
                    cell.staging.waiting = PendingChanges(base: nil)
                    cell.staging.waitingSince = .now()
                }
                cell.staging.waiting!.collect(change)
                if let plan { (cell.staging.plan, cell.staging.planOwner) = (plan, owner) }
                cell.staging.interval = interval
                let schedules = !cell.staging.scheduled
                cell.staging.scheduled = true
                cell.install(next, changed: changed)
                feed.post(changed)
                return (true, schedules)
            }
            guard let outcome else { continue }
            if outcome.schedules {
                _ = SharedSet.writesStagedAtExit
                scheduleStagedWrite(at: .now() + interval)
            }
            return outcome.staged
        }
    }

    /// Writes the staged changes now, in one store write under the set's turn (after a write in
    /// progress); returns at once when nothing is staged.
    ///
    /// - Parameter background: Whether the background write calls it, so a refusal is kept for
    ///   the next ``PersistentPrefs/synchronize()`` (which throws one of its own at once).
    /// - Throws: Why the write failed, also listed in ``PersistentPrefs/problems`` until a write
    ///   of the set succeeds: after a failure that may pass (an I/O error, a lock held too
    ///   long) the changes stay staged and are retried; after a refusal no retry can overcome
    ///   (see `PrefsError.refusesTheWrite`) they are dropped and the set is read again. With
    ///   nothing staged: the refusal for which a background write dropped changes, once.
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` (called inside a write of
    ///   this set) changes nothing.
    func writeStaged(background: Bool = false) throws {
        let planned = cell.withLock { cell -> (plan: SchemaPlan?, dropped: PersistentPrefs.PrefsError?) in
            guard cell.staging.isEmpty else { return (cell.staging.plan, nil) }
            guard !background else { return (nil, nil) }
            defer { cell.staging.dropped = nil }
            return (nil, cell.staging.dropped)
        }
        guard let plan = planned.plan else {
            if let dropped = planned.dropped { throw dropped }
            return
        }
        do {
            try write(nil, schema: plan)
        } catch PersistentPrefs.PrefsError.transactionInProgress(let root) {
            throw PersistentPrefs.PrefsError.transactionInProgress(root: root)
        } catch {
            let failure = SharedSet.mapped(error)
            cell.withLock { cell in
                cell.staging.failure = failure
                if background, failure.refusesTheWrite { cell.staging.dropped = failure }
            }
            throw failure
        }
    }

    /// Drops the staged changes the write holding the turn took, which the store refused for
    /// good; call it holding the turn.
    ///
    /// - Returns: The lease the staged changes held, when nothing is staged any more: the caller
    ///   ends it outside every lock.
    func dropTakenStaged() -> SetLease? {
        cell.withLock { $0.staging.endWriting() }
    }

    /// Moves the changes staged since the last write into ``Staging/writing`` and returns all
    /// of them, for the write holding the turn (their effect together stays as it was).
    func takeStaged() -> PendingChanges? {
        cell.withLock { cell in
            if let waiting = cell.staging.waiting {
                if cell.staging.writing == nil {
                    cell.staging.writing = waiting
                } else {
                    cell.staging.writing!.append(waiting)
                }
                cell.staging.waiting = nil
            }
            return cell.staging.writing
        }
    }

    /// Notes that the write holding the turn succeeded, having written ``Staging/writing`` when
    /// `staged`; call it holding the lock, as the set it wrote is installed.
    ///
    /// - Returns: The lease the staged changes held, when nothing is staged any more: the caller
    ///   ends it outside every lock.
    static func wrote(staged: Bool, in staging: inout Staging) -> SetLease? {
        staging.failure = nil
        guard staged else { return nil }
        staging.dropped = nil
        return staging.endWriting()
    }

    /// Why the last write of staged changes failed (they are retried, or were dropped when
    /// refused), until a write of the set succeeds; `nil` when none failed.
    var stagingFailure: PersistentPrefs.PrefsError? {
        cell.withLock { $0.staging.failure }
    }

    /// Runs the background write at `deadline`; while changes stay staged, the next one an
    /// interval after the first of them was staged (or after this write, when it failed).
    private func scheduleStagedWrite(at deadline: DispatchTime) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: deadline) { [self] in
            try? writeStaged(background: true)  // a failure is listed in `problems`; one that may pass is retried
            let next = cell.withLock { cell -> DispatchTime? in
                guard !cell.staging.isEmpty else {
                    cell.staging.scheduled = false
                    return nil
                }
                let since = cell.staging.writing == nil ? cell.staging.waitingSince : .now()
                return max(since + cell.staging.interval, .now())
            }
            if let next { scheduleStagedWrite(at: next) }
        }
    }

    /// Writes every set's staged changes when the process exits normally (`exit`, or the end
    /// of `main`); evaluated when a first change is staged.
    static let writesStagedAtExit: Void = {
        atexit { SharedSet.writeAllStaged() }
    }()
}

extension PersistentPrefs.PrefsError {
    /// Whether the error refuses a write for what it writes or for the set as stored, so that
    /// writing it again cannot succeed by itself (a set stored by a newer version, a failed
    /// migration, a locked key, a refused value); `false` for failures that may pass (an I/O
    /// error, a lock held too long, a damaged file moved aside).
    var refusesTheWrite: Bool {
        switch self {
        case .incorrectKeys, .valuesNotPlistCompatible, .typeMismatch, .invalidStoredValue, .invalidValue, .migrationFailed,
            .newerSchemaVersion, .conflictingDeclarations, .keyLocked, .invalidSuiteName, .encodingFailed, .decodingFailed,
            .noBundledSettings, .noSettingsFile, .nothingToResetTo:
            return true
        case .userDefaultsUnavailable, .corruptStore, .ioError, .transactionInProgress, .lockTimeout, .watchDegraded, .unknownError,
            .noStoredPrefsForKey:
            return false
        }
    }
}

extension PrefsChange {
    /// Whether the change can be staged on a coalescing set: it needs nothing of the set as
    /// stored, and leaves the schema version alone.
    var isStageable: Bool {
        switch self {
        case .set(let key, _): return key != PersistentPrefs.schemaVersionKey
        case .merge(let values), .replace(let values): return values[PersistentPrefs.schemaVersionKey] == nil
        case .fillMissing, .transform: return false
        }
    }
}

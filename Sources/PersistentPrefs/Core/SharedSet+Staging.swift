import Foundation

// Staged changes of a coalescing set (see ``PersistentPrefs/coalescingInterval``): shown at once, written first by the
// set's next write, or by a background write an interval after the first of them. They hold a lease on the set.

extension SharedSet {
    /// The staged changes of a set and their background write.
    struct Staging {
        /// What the write holding the turn writes, or what a failed write left to write again.
        var writing: PendingChanges?
        /// The changes staged since ``writing`` was taken.
        var waiting: PendingChanges?
        /// The last staging class's schema plan, holding no instance (``PersistentPrefs/detachedSchemaPlan(for:)``),
        /// and that class.
        var plan: SchemaPlan?
        var planOwner: ObjectIdentifier?
        /// How long the last change staged may wait for its write.
        var interval: TimeInterval = 0
        /// When the first of the ``waiting`` changes was staged: their write is due an ``interval`` later.
        var waitingSince = DispatchTime.now()
        /// Whether a background write is due.
        var scheduled = false
        /// The lease the staged changes hold, so the set outlives its last instance until they are written.
        var lease: SetLease?
        /// Why the last write of staged changes failed; `nil` once a write of the set succeeds.
        var failure: PersistentPrefs.PrefsError?
        /// Why a background write dropped staged changes, until ``PersistentPrefs/synchronize()`` or a later write reports it.
        var dropped: PersistentPrefs.PrefsError?

        var isEmpty: Bool { writing == nil && waiting == nil }

        /// Ends the taken changes (written or dropped); returns the lease, to end outside every lock, once nothing is staged.
        mutating func endWriting() -> SetLease? {
            writing = nil
            guard waiting == nil else { return nil }
            return lease.take()
        }
        /// The staged changes, in the order they apply.
        var changes: [PendingChanges] { [writing, waiting].compactMap { $0 } }
    }

    /// `state` (as the store holds it) with the staged changes of `staging` over the user's values.
    static func staged(_ state: State, _ staging: Staging) -> State {
        let changes = staging.changes
        guard !changes.isEmpty else { return state }
        var user = state.user
        for change in changes { user = change.applied(to: user) }
        return state.holding(user)
    }

    /// Applies `change` (vetted, ``PrefsChange/isStageable``) to the state at once and stages it for a background
    /// write within `interval`; observers hear of it as of any write. `plan`: the schema plan of `owner`, the
    /// staging instance's class; `nil` when ``Staging/planOwner`` is that class already.
    ///
    /// - Returns: `false` (the caller then writes durably) when the set is at an older schema version or no longer shared.
    /// - Throws: What the store would refuse (a newer schema version, a locked key); nothing is staged then.
    func stage(_ change: PrefsChange, plan: SchemaPlan?, owner: ObjectIdentifier, interval: TimeInterval) throws -> Bool {
        defer { feed.deliver() }
        // The lease is taken outside the lock; one a change then does not need ends when this returns.
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

    /// Writes the staged changes now in one store write; returns at once when nothing is staged. `background`: the
    /// background write calls it, so a refusal is kept for the next ``PersistentPrefs/synchronize()``.
    ///
    /// - Throws: Why the write failed, listed in ``PersistentPrefs/problems`` until a write succeeds: the changes
    ///   stay staged after a failure that may pass, are dropped after one that ``PersistentPrefs/PrefsError/refusesTheWrite``.
    ///   With nothing staged: a background write's refusal, once. `transactionInProgress` changes nothing.
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

    /// Moves the changes staged since the last write into ``Staging/writing`` and returns them all, for the write
    /// holding the turn.
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

    /// Notes that the write holding the turn succeeded (having written ``Staging/writing`` when `staged`); call it
    /// under the lock. Returns the lease as ``Staging/endWriting()`` does.
    static func wrote(staged: Bool, in staging: inout Staging) -> SetLease? {
        staging.failure = nil
        guard staged else { return nil }
        staging.dropped = nil
        return staging.endWriting()
    }

    /// Runs the background write at `deadline`; while changes stay staged, the next an interval later.
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

    /// Writes every set's staged changes when the process exits normally; evaluated when a first change is staged.
    static let writesStagedAtExit: Void = {
        atexit { SharedSet.writeAllStaged() }
    }()
}

extension PersistentPrefs.PrefsError {
    /// Whether the error refuses a write for what it writes or the set as stored, so no retry can succeed; `false`
    /// for failures that may pass (an I/O error, a lock held too long, a damaged file moved aside).
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
    /// Whether the change can be staged: it needs nothing of the set as stored and leaves the schema version alone.
    var isStageable: Bool {
        switch self {
        case .set(let key, _): return key != PersistentPrefs.schemaVersionKey
        case .merge(let values), .replace(let values): return values[PersistentPrefs.schemaVersionKey] == nil
        case .fillMissing, .transform: return false
        }
    }
}

import Foundation

// Staged changes of a coalescing set (see ``PersistentPrefs/coalescingInterval``): a setter
// applies its change to the cache at once and stages it; the next write of the set writes
// what is staged first, in the same store write. A background write is due `interval` after
// the first change staged, so the changes of one interval reach the file in one durable write,
// merged per key under the store's lock like any other write. Staged changes are also written
// when the last instance of the set goes away, when the process exits normally and by
// ``PersistentPrefs/synchronize()``; until a write succeeds they stay staged (and shown).

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
        /// Whether a background write is due.
        var scheduled = false
        /// Whether the staged changes hold a use of the shared set (see ``SharedSet/retain(_:)``),
        /// so it outlives its last instance until they are written.
        var holdsUse = false
        /// Why the last write of staged changes failed; `nil` once one succeeds.
        var failure: PersistentPrefs.PrefsError?

        var isEmpty: Bool { writing == nil && waiting == nil }
        /// The staged changes, in the order they apply.
        var changes: [PendingChanges] { [writing, waiting].compactMap { $0 } }
    }

    /// `built` — the set as the store holds it — with the staged changes applied over the
    /// user's values; call it holding the cache lock.
    func staged(_ built: (Snapshot, Layered?)) -> (Snapshot, Layered?) {
        let changes = staging.withLock { $0.changes }
        guard !changes.isEmpty else { return built }
        var user = built.1?.stored ?? built.0.values
        for change in changes { user = change.applied(to: user) }
        return built.0.holding(user, under: built.1)
    }

    /// The class whose schema plan staged changes are written under (see ``Staging/plan``).
    var stagingPlanOwner: ObjectIdentifier? {
        staging.withLock { $0.planOwner }
    }

    /// Applies `change` (a vetted ``PrefsChange/isStageable`` change) to the cached set at once
    /// and stages it for a background write within `interval`. Observers hear of it as of any
    /// write.
    ///
    /// - Parameters:
    ///   - plan: The schema plan of `owner`, the class of the instance staging the change; `nil`
    ///     when ``stagingPlanOwner`` is that class already.
    /// - Throws: What the store would refuse, now rather than at the write: the set stored by a
    ///   newer schema version, a change of a key the system layers lock. Nothing is staged then.
    func stage(_ change: PrefsChange, plan: SchemaPlan?, owner: ObjectIdentifier, interval: TimeInterval) throws {
        defer { feed.deliver() }
        let schedules = try withLoadedCache { cache -> Bool in
            let current = cache!
            guard let schema = plan ?? staging.withLock({ $0.plan }) else { preconditionFailure("a staged change without a schema plan") }
            if current.schema > schema.version, !schema.writesNewer { throw schema.newer(stored: current.schema, root: root) }
            let layered = layering.withLock { $0 }
            let user = layered?.stored ?? current.values
            let updated = try change.applied(to: user)
            if let locked = layered?.stack.lockedChange(from: user, to: updated) { throw PersistentPrefs.PrefsError.keyLocked(key: locked) }
            let built = current.holding(updated, under: layered)
            let changed =
                change.touchedKeys.map { $0.filter { !PlistValue.same(current.values[$0], built.0.values[$0]) } }
                ?? PlistValue.changedKeys(current.values, built.0.values)
            let (retains, schedules) = staging.withLock { staging in
                if staging.waiting == nil { staging.waiting = PendingChanges(base: nil) }
                staging.waiting!.collect(change)
                if let plan { (staging.plan, staging.planOwner) = (plan, owner) }
                staging.interval = interval
                defer { (staging.holdsUse, staging.scheduled) = (true, true) }
                return (!staging.holdsUse, !staging.scheduled)
            }
            // Under the cache lock, where the write that empties the staging releases it: each
            // use is taken before the release that ends it.
            if retains { _ = SharedSet.retain(self, watching: false) }
            install(built, changed: changed, in: &cache)
            feed.post(changed)
            return schedules
        }
        if schedules {
            _ = SharedSet.writesStagedAtExit
            scheduleStagedWrite(after: interval)
        }
    }

    /// Writes the staged changes now, in one store write under the set's turn (after a write in
    /// progress); returns at once when nothing is staged.
    ///
    /// - Throws: Why the write failed; the changes stay staged and are retried.
    func writeStaged() throws {
        guard let plan = staging.withLock({ $0.isEmpty ? nil : $0.plan }) else { return }
        do {
            try write(nil, schema: plan)
        } catch {
            let failure = SharedSet.mapped(error)
            staging.withLock { $0.failure = failure }
            throw failure
        }
    }

    /// Moves the changes staged since the last write into ``Staging/writing`` and returns all
    /// of them, for the write holding the turn (their effect together stays as it was).
    func takeStaged() -> PendingChanges? {
        staging.withLock { staging in
            if let waiting = staging.waiting {
                if staging.writing == nil {
                    staging.writing = waiting
                } else {
                    staging.writing!.append(waiting)
                }
                staging.waiting = nil
            }
            return staging.writing
        }
    }

    /// Notes that the write holding the turn wrote ``Staging/writing``; call it holding the
    /// cache lock, as the set it wrote is installed.
    ///
    /// - Returns: Whether nothing is staged any more and the use the staged changes held is to
    ///   be released (outside every lock).
    func wroteStaged() -> Bool {
        staging.withLock { staging in
            staging.writing = nil
            staging.failure = nil
            guard staging.waiting == nil, staging.holdsUse else { return false }
            staging.holdsUse = false
            return true
        }
    }

    /// Why the last write of staged changes failed (they are retried), or `nil`.
    var stagingFailure: PersistentPrefs.PrefsError? {
        staging.withLock { $0.isEmpty ? nil : $0.failure }
    }

    /// Whether the only use of the set the registry may still count, after its last instance
    /// went away, is the one its staged changes hold.
    var holdsStagedUse: Bool {
        staging.withLock { $0.holdsUse }
    }

    /// Runs the background write `interval` from now; while changes stay staged (staged since,
    /// or the write failed), the next one an interval later.
    private func scheduleStagedWrite(after interval: TimeInterval) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + interval) { [self] in
            try? writeStaged()  // a failure stays staged, is listed in `problems` and retried
            let again = staging.withLock { staging -> TimeInterval? in
                guard !staging.isEmpty else {
                    staging.scheduled = false
                    return nil
                }
                return staging.interval
            }
            if let again { scheduleStagedWrite(after: again) }
        }
    }

    /// Writes every set's staged changes when the process exits normally (`exit`, or the end
    /// of `main`); evaluated when a first change is staged.
    static let writesStagedAtExit: Void = {
        atexit { SharedSet.writeAllStaged() }
    }()
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

import Foundation

// The write protocol of a shared set (see ``SharedSet``): writes, reloads and outside changes the watcher reports.

extension SharedSet {
    /// Runs `plan`'s pending steps in one store write (none when already migrated: the set is then re-read); returns what ran.
    @discardableResult
    func migrate(_ plan: SchemaPlan) throws -> PrefsMigrationReport {
        if let report = try write(nil, schema: plan, onlyMigrate: true) { return report }
        let schema = try schemaVersion()
        let stored = try values()
        return PrefsMigrationReport(fromVersion: schema, toVersion: schema, steps: [], before: stored, after: stored)
    }

    /// ``SetStorage/acknowledgeDamage(root:)``, then reads the set again; returns where a file was moved, or `nil`.
    func acknowledgeDamage() throws -> String? {
        let aside = try store.acknowledgeDamage(root: root)
        try reload()
        return aside
    }

    /// Reads the set from the store again; observers hear of the keys that changed. `retrying`: read once more after
    /// a failure (a damaged file is moved aside by the first read, so the second reads it empty).
    @discardableResult
    func reload(retrying: Bool = false) throws -> [String: Any] {
        defer { feed.deliver() }
        return try turn.take(root: root) { try reloadTakingTurn(retrying: retrying) }
    }

    /// The body of ``reload(retrying:)``, for a caller that holds the turn.
    func reloadTakingTurn(retrying: Bool) throws -> [String: Any] {
        // Read outside the lock: readers keep the old state meanwhile.
        let fresh: State
        do {
            do {
                fresh = try fetched()
            } catch where retrying {
                fresh = try fetched()
            }
        } catch {
            cell.withLock { $0.uninstall() }  // its readers report why
            throw error
        }
        return cell.withLock { cell in
            let next = Self.staged(fresh, cell.staging)
            let changed = cell.state.map { PlistValue.changedKeys($0.effective, next.effective) }
            cell.install(next, changed: changed)
            if let changed { feed.post(changed) }
            return next.user
        }
    }

    /// Reads the set again after the watcher reported a change, unless it was never loaded or the file is as this copy
    /// knows it (the process's own write): checked first outside the turn, so a write never waits for that check, and
    /// a failed check again within the turn before reading, so a write that took the turn first is not read back.
    func storeChanged() {
        guard isLoaded() else { return }
        defer { feed.deliver() }
        if isCurrent() { return }
        // The event of a write in progress often arrives before it is done: look again once it is, within the same
        // turn, so a write that takes the turn first is not read back.
        _ = try? turn.take(root: root) { if !isCurrent() { _ = try reloadTakingTurn(retrying: true) } }
    }

    /// Whether the state holds the store's current version, or one only this process's writes of other sets of the
    /// same file moved on (the state then takes the current version, unless a newer state was installed meanwhile).
    private func isCurrent() -> Bool {
        guard let version = cell.withLock({ $0.state?.version }), let current = store.currentVersion(root: root) else { return false }
        if current == version { return true }
        guard store.unchangedByOwnWrites(root: root, from: version, to: current) else { return false }
        cell.withLock { cell in
            guard let state = cell.state, state.version == version else { return }
            cell.state = State(user: state.user, layers: state.layers, version: current, schema: state.schema)
        }
        return true
    }

    /// Reads the set again after one of its system layer files changed (no version check: the user's file may not have).
    func layersChanged() {
        guard isLoaded() else { return }
        defer { feed.deliver() }
        _ = try? turn.take(root: root) { _ = try reloadTakingTurn(retrying: true) }
    }

    /// Starts listening for outside changes of the set and its layer files, once; a set already loaded is then
    /// checked against the store, so a change made before the watch began is not missed.
    func startWatching() {
        guard store.canWatch || !layerReader.files.isEmpty else { return }
        let begins = cell.withLock { cell -> Bool in
            guard case .idle = cell.watch else {
                if case .stopped = cell.watch { cell.unwatched = false }  // no longer shared
                return false
            }
            cell.watch = .watching(nil)
            return true
        }
        guard begins else { return }
        defer {
            cell.withLock { $0.unwatched = false }
            // Off the reader's thread, so a read never waits for a reload (nor for a write in progress).
            let layered = !layerReader.files.isEmpty
            Detached.run { [self] in
                storeChanged()
                if layered { layersChanged() }
            }
        }
        // Strong, dropped by ``stopWatching()``: a weak one would slow every retain on the read path (side table).
        let storeCancel = store.canWatch ? store.watch(root: root) { [self] in storeChanged() } : nil
        let layerCancels = layerReader.files.map { file in ChangeWatcher.shared.watchingFollowingLinks(file.url) { [self] in layersChanged() } }
        var cancel = storeCancel
        if !layerCancels.isEmpty {
            cancel = { @Sendable in
                storeCancel?()
                for cancel in layerCancels { cancel() }
            }
        }
        let late = cell.withLock { cell -> Bool in
            guard case .watching = cell.watch else { return true }
            cell.watch = .watching(cancel)
            return false
        }
        if late { cancel?() }  // stopped while the registration was being made
    }

    /// Whether the set is watched for outside changes now.
    var isWatching: Bool {
        cell.withLock { cell in
            if case .watching = cell.watch { return true }
            return false
        }
    }

    /// Why outside changes reach the set late (``SetStorage/watchProblem(root:)``), or `nil`.
    func watchProblem() -> PersistentPrefs.PrefsError? {
        startWatching()  // a caller asking how current the set is relies on the watch
        guard isWatching else { return nil }
        return store.watchProblem(root: root)
    }

    /// Stops listening for outside changes (the last user is gone).
    func stopWatching() {
        let cancel = cell.withLock { cell -> (@Sendable () -> Void)? in
            defer { cell.watch = .stopped }
            if case .watching(let cancel) = cell.watch { return cancel }
            return nil
        }
        cancel?()
    }

    /// Writes `edit` (`nil`: only the staged changes) after the staged changes, as one ``SetPlan``, and installs
    /// what the store wrote. A refused write of staged changes alone drops them and reads the set again.
    /// `onlyMigrate`: for ``migrate(_:)``, write nothing when there is nothing to migrate.
    /// - Throws: What ``carryOut(_:writesStaged:endedLease:)`` throws;
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` when called inside this set's own write.
    /// - Returns: What a migration did, when one ran.
    @discardableResult
    func write(_ edit: SetPlan.Edit?, schema: SchemaPlan, onlyMigrate: Bool = false) throws -> PrefsMigrationReport? {
        defer { feed.deliver() }
        // The lease of staged changes all written or dropped: it ends outside every lock (``WriteScope/afterWrites(_:)``).
        var endedLease: SetLease?
        defer { WriteScope.ending(endedLease) }
        // A write inside another holding this store's lock would wait for itself: refused before taking the turn.
        if let scope = store.writeScope(root: root) { try WriteScope.check(scope) }
        let migration = try turn.take(root: root) { () -> PrefsMigrationReport? in
            // Staged changes go first, in the same store write (a migration alone leaves them).
            let staged = onlyMigrate ? nil : takeStaged()
            let plan = SetPlan(root: root, staged: staged, edit: edit, schema: schema, onlyMigrate: onlyMigrate)
            guard !plan.isEmpty else { return nil }
            do {
                return try carryOut(plan, writesStaged: staged != nil, endedLease: &endedLease)
            } catch where edit == nil && staged != nil && SharedSet.mapped(error).refusesTheWrite {
                // No retry can write these changes: drop them (the lease ends outside every lock), show the set as stored.
                endedLease = cell.withLock { $0.staging.endWriting() }
                _ = try? reloadTakingTurn(retrying: true)
                throw error
            }
        }
        // Written: the writer's schema beside the set (once per process and class), outside the turn.
        if let publication = schema.publication, cell.withLock({ $0.publishedBy.insert(publication.classID).inserted }),
            let described = publication.schema()
        {
            store.publish(described, classID: publication.classID, root: root, inline: !PersistentPrefs.watchesSets)
        }
        return migration
    }

    /// Loads the set when `plan` builds on it (an unreadable set is then reported, not overwritten), has the store
    /// carry the plan out and installs what it wrote; call it holding the turn. Returns what a migration did.
    /// - Throws: The plan's refusal, or what a transform threw, unchanged (after a newer schema version the set is
    ///   read again); what loading or the store threw.
    private func carryOut(_ plan: SetPlan, writesStaged: Bool, endedLease: inout SetLease?) throws -> PrefsMigrationReport? {
        // Loaded first, so observers can be told what changed; a replacement can still repair an unreadable set.
        if plan.buildsOnCurrent {
            try withLoaded { _ in }
        } else {
            _ = try? withLoaded { _ in }
        }
        let written: StoreWrite<SetPlan.Outcome>
        do {
            written = try store.write(plan.storePlan, root: root)
        } catch {
            throw SharedSet.mapped(error)
        }
        switch written.outcome {
        case .write(_, _, let migration):
            endedLease = try install(written, writesStaged: writesStaged)
            return migration
        case .current:
            _ = try reloadTakingTurn(retrying: false)  // nothing to migrate: maybe someone migrated it meanwhile
            return nil
        case .refused(let refusal):
            if case .newerSchemaVersion? = refusal as? PersistentPrefs.PrefsError {
                _ = try? reloadTakingTurn(retrying: false)  // a newer version wrote it since this state was read
            }
            throw refusal
        }
    }

    /// Installs the set the store wrote (with the staged changes ``takeStaged()`` took, when `writesStaged`); call it
    /// holding the turn. The store's changed keys are used when it read the state's version and no layer lies
    /// between; otherwise the states are compared. Returns the lease to end outside every lock (``wrote(staged:in:)``).
    private func install(_ written: StoreWrite<SetPlan.Outcome>, writesStaged: Bool) throws -> SetLease? {
        guard case .success(let values) = PlistValue.normalizedSet(written.set, for: .loading) else {
            throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
        }
        // Built before taking the lock readers wait for.
        let fresh = State.stored(values, version: written.version, layers: written.layers)
        return cell.withLock { cell -> SetLease? in
            // Whether the state before showed no staged change over the stored set.
            let showedStored = cell.staging.isEmpty
            let releases = Self.wrote(staged: writesStaged, in: &cell.staging)
            // Changes staged while the store wrote stay shown over what it wrote.
            let next = Self.staged(fresh, cell.staging)
            let changed: Set<String>
            if let before = cell.state, let known = written.changed, let read = written.readVersion, read == before.version,
                before.layers.isEmpty, next.layers.isEmpty
            {
                // Staged changes shown before or after may hide some of them from readers.
                changed = showedStored && cell.staging.isEmpty ? known : known.filter { !PlistValue.same(before.effective[$0], next.effective[$0]) }
            } else {
                changed = PlistValue.changedKeys(cell.state?.effective ?? [:], next.effective)
            }
            cell.install(next, changed: changed)
            cell.damaged = false  // the store is written again, so it reports no damage
            feed.post(changed)
            return releases
        }
    }
}

// MARK: - Turns

extension SharedSet {
    /// The turn writes and reloads of one set take, one at a time: a lock that knows its holder, so a write that
    /// would wait for its own thread (inside a write of the same set, or closing a circle of waits between sets) is
    /// refused. All turns share one table of holders and waits under one lock; a thread records its wait before it
    /// waits, so the last thread to close a circle sees it and is refused.
    final class Turn: @unchecked Sendable {  // `holder` is only touched under `Turn.waits`' lock
        private let lock = NSLock()
        /// The thread holding the turn, and the set it holds it for.
        private var holder: (thread: ObjectIdentifier, root: String)?
        /// What ``WriteScope`` knows this turn by.
        private let scope = "turn " + UUID().uuidString

        /// The turn each thread is waiting for, by thread.
        private static let waits = Locked<[ObjectIdentifier: Turn]>([:])

        /// Runs `body` once no other write or reload of the set runs.
        /// - Throws: ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the set this thread is writing,
        ///   when it holds this turn already or waiting would wait for itself; otherwise what `body` throws.
        func take<Result>(root: String, _ body: () throws -> Result) throws -> Result {
            let me = ObjectIdentifier(Thread.current)
            try WriteScope.check(scope)
            try Self.waits.withLock { waits in
                if let circle = heldCircle(from: me, waits) { throw PersistentPrefs.PrefsError.transactionInProgress(root: circle) }
                waits[me] = self
            }
            // Recorded from before the turn is taken until after it is let go (see ``WriteScope``).
            return try WriteScope.holding(scope, label: root) {
                #if DEBUG
                    LockLevel.entering(.turn)
                    defer { LockLevel.leaving(.turn) }
                #endif
                lock.lock()
                Self.waits.withLock { waits in
                    waits[me] = nil
                    holder = (me, root)
                }
                defer {
                    Self.waits.withLock { _ in holder = nil }
                    lock.unlock()
                }
                return try body()
            }
        }

        /// The set whose turn `thread` holds, when the chain of holders and waits from this turn comes back to
        /// `thread`; else `nil`. Call it under the table's lock.
        private func heldCircle(from thread: ObjectIdentifier, _ waits: [ObjectIdentifier: Turn]) -> String? {
            var turn = self
            // Each thread waits for one turn at most: a longer chain is a circle not through `thread`.
            for _ in 0...waits.count {
                guard let holder = turn.holder else { return nil }
                if holder.thread == thread { return holder.root }
                guard let next = waits[holder.thread] else { return nil }
                turn = next
            }
            return nil
        }
    }
}

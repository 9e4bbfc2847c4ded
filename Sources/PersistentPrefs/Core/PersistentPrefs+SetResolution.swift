import Foundation

// An instance's own state, and how it finds its shared set from its root key, store and `groupID` generation.

extension PersistentPrefs {
    /// What one instance keeps, under the lock of ``state``.
    struct InstanceState {
        /// The root key as set through ``key``.
        var key = "" {
            didSet { keyChanges += 1 }
        }
        /// How many times ``key`` was set: a set resolved from an older key is not installed.
        var keyChanges = 0
        var lastError: PrefsError?
        /// Whether ``lastError`` is set.
        var failed: Bool {
            // Not `!= nil`: for an `Equatable` error that copies it and compares it with `nil`.
            if case .some = lastError { return true }
            return false
        }
        /// The lease on the shared set this instance works on, resolved under ``generation``; `nil` until resolved.
        var lease: SetLease?
        /// The shared set this instance works on; `nil` until resolved.
        var sharedSet: SharedSet? { lease?.sharedSet }
        /// The ``PersistentPrefs/groupID`` generation ``sharedSet`` was resolved under.
        var generation = -1
        /// The changes collected by a running ``batch(_:)`` or typed ``update(_:_:)``; `nil` outside one.
        var pending: PendingChanges?
        /// The last ``PersistentPrefs/keys`` list vetting saw, and its set (see `PersistentPrefs.allowedKeys()`).
        var allowedKeys: (list: [String], set: Set<String>)?
        #if canImport(ObjectiveC)
            /// Tells KVO observers of ``values`` about changes of the shared set (Apple platforms).
            var keyValueNotifications: PrefsObservation?
        #endif

        /// The shared set when a read can be served from its state at once (see ``servesAtOnce(generation:keepingError:)``).
        func quickSet(generation: Int, keepingError: Bool) -> SharedSet? {
            servesAtOnce(generation: generation, keepingError: keepingError) ? sharedSet : nil
        }

        /// The ``SharedSet/readStamp`` of ``quickSet(generation:keepingError:)``; 0 when there is none.
        func quickStamp(generation: Int, keepingError: Bool) -> Int {
            guard servesAtOnce(generation: generation, keepingError: keepingError), let lease else { return 0 }
            return lease.sharedSet.readStamp.load()
        }

        /// Whether a read can be served at once: resolved under `generation`, no batch, no ``lastError`` unless `keepingError`.
        private func servesAtOnce(generation: Int, keepingError: Bool) -> Bool {
            pending == nil && (keepingError || !failed) && self.generation == generation
        }

        /// The shared set when it was resolved under `generation`, else `nil`.
        func sharedSet(generation: Int) -> SharedSet? {
            self.generation == generation ? sharedSet : nil
        }
    }

    /// Runs `body` on this instance's pending batch (`nil` outside a batch), under the state lock.
    func withPending<Result>(_ body: (inout PendingChanges?) throws -> Result) rethrows -> Result {
        try state.withLock { try body(&$0.pending) }
    }

    /// Lets go of the shared set, so the next operation resolves it again.
    func dropSharedSet() {
        let ended = state.withLock { state in
            defer { (state.lease, state.generation) = (nil, -1) }
            return state.lease
        }
        withExtendedLifetime(ended) {}  // the lease ends here, outside the lock
    }

    /// The ``groupID`` generation this instance follows (0 with an explicit store).
    func currentGeneration() -> Int {
        followsGroupID ? Self.groupGeneration.load() : 0
    }

    /// The shared set this instance has resolved, without resolving it (`nil` when it has not).
    var cachedSet: SharedSet? {
        let generation = currentGeneration()
        return state.withLock { $0.sharedSet(generation: generation) }
    }

    /// The shared set for this instance's root key and store.
    func resolvedSet() throws -> SharedSet {
        var lease: SetLease
        var generation: Int
        while true {
            generation = currentGeneration()
            let (cached, keyChanges) = state.withLock { ($0.sharedSet(generation: generation), $0.keyChanges) }
            if let cached { return cached }
            // Overridable members run outside every lock.
            let root = key
            let store: any PrefsStore
            if let explicitStore {
                store = explicitStore
            } else if let defaults = userDefaults {
                store = UserDefaultsStore(userDefaults: defaults)
            } else if let suite = Self.groupID, !suite.isEmpty, let problem = SuitePaths.problem(with: suite) {
                throw PrefsError.invalidSuiteName(name: suite, reason: problem)
            } else {
                throw PrefsError.userDefaultsUnavailable
            }
            lease = SharedSet.acquire(store: store, root: root)
            let (installed, previous) = state.withLock { state -> (Bool, SetLease?) in
                // The key was set on another thread meanwhile: this set is the old key's.
                guard state.keyChanges == keyChanges else { return (false, nil) }
                defer { (state.lease, state.generation) = (lease, generation) }
                return (true, state.lease)
            }
            withExtendedLifetime(previous) {}  // the lease replaced ends here, outside the lock
            if installed { break }
        }
        let sharedSet = lease.sharedSet
        migrateOnFirstUse(sharedSet)
        #if canImport(ObjectiveC)
            let notifications = keyValueNotifications(for: sharedSet)
            let replaced = state.withLock { state in
                defer { state.keyValueNotifications = notifications }
                return state.keyValueNotifications
            }
            replaced?.cancel()
        #endif
        return sharedSet
    }
}

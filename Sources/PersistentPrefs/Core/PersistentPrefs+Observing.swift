import Foundation

extension PersistentPrefs {
    /// Calls `handler` after each change of this set, whoever made it (this process at once, other processes as soon
    /// as the operating system reports it). The handler runs after every lock is released, one event at a time, in
    /// order, on the thread that made the change or one of the library's: keep it short. The observation keeps the
    /// set this instance uses now live, even if the instance goes away. See <doc:ObservingChanges>.
    ///
    /// ```swift
    /// let observation = prefs.observeChanges(to: ["Volume"]) { event in
    ///     print("\(event.root): \(event.keys.sorted()) changed")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; empty (the default) for every key.
    ///   - handler: Called with each change that touches one of `keys`; the event lists every key that changed.
    /// - Returns: The observation, until cancelled or deallocated; cancelled when the set cannot be reached (see
    ///   ``lastError``). When its file cannot be watched, ``lastError`` and ``PrefsObservation/problem`` are
    ///   ``PrefsError/watchDegraded(path:reason:)``.
    public func observeChanges(
        to keys: [String] = [], _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void
    ) -> PrefsObservation {
        var observation = PrefsObservation(nil)
        reportingErrors {
            let lease = try observedSet()
            let sharedSet = lease.sharedSet
            let id = sharedSet.feed.subscribe(keys: Set(keys), handler)
            observation = PrefsObservation(
                {
                    sharedSet.feed.unsubscribe(id)
                    withExtendedLifetime(lease) {}  // the observation's use of the set ends with it
                }, problem: { sharedSet.watchProblem() })
        }
        // The observation runs; `lastError` says when other programs' changes will reach it late.
        if let problem = observation.problem { lastError = problem }
        return observation
    }

    /// The events ``observeChanges(to:_:)`` delivers, as an async sequence that ends when the iterating task is cancelled.
    ///
    /// ```swift
    /// for await event in prefs.changes(to: ["Volume"]) {
    ///     updateSlider(prefs.volume)
    /// }
    /// ```
    ///
    /// - Parameter keys: The keys to watch; empty (the default) for every key.
    /// - Returns: The events, in order; empty when the set cannot be reached (``lastError`` says why).
    public func changes(to keys: [String] = []) -> AsyncStream<PrefsChangeEvent> {
        PrefsObservation.stream { observeChanges(to: keys, $0) }
    }

    /// A lease on this instance's set, loaded, for an observation.
    private func observedSet() throws -> SetLease {
        while true {
            let sharedSet = try resolvedSet()
            _ = try sharedSet.values()  // loaded, so that changes can be told from the first read
            if let lease = sharedSet.lease() { return lease }
            // The instance moved to another set meanwhile: observe that one.
        }
    }
}

// MARK: - Every set of a store

extension PersistentPrefs {
    /// Calls `handler` after each change of any set in `store`, whoever made it, as `dconf watch /` does: one event
    /// per set that changed, naming the keys whose stored (user's) values changed; a set that appears or is removed
    /// with all its keys. Events come one at a time, on a thread of the library's, with no lock held.
    ///
    /// ```swift
    /// let observation = PersistentPrefs.observeStore(PlistFileStore(directory: folder)) { event in
    ///     print("\(event.root): \(event.keys.sorted())")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - store: A ``PlistFileStore`` or ``UserDefaultsStore`` (on Apple platforms only this process's changes:
    ///     <doc:ApplePlatforms>); any other store gives an observation already cancelled.
    ///   - handler: Called with each change.
    /// - Returns: The observation, until cancelled or deallocated; its ``PrefsObservation/problem`` tells when the
    ///   operating system cannot watch the store.
    public static func observeStore(_ store: any PrefsStore, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation {
        let watchable = SetStorageAdapter.adapting(store)
        let snapshot = Locked(Self.allSets(of: store))
        let cancel = watchable.watchAllSets {
            let now = Self.allSets(of: store)
            let before = snapshot.withLock { previous in
                defer { previous = now }
                return previous
            }
            for root in Set(before.keys).union(now.keys).sorted() {
                let keys = PlistValue.changedKeys(before[root] ?? [:], now[root] ?? [:]).subtracting([PersistentPrefs.schemaVersionKey])
                if !keys.isEmpty { handler(PrefsChangeEvent(root: root, keys: keys)) }
            }
        }
        guard let cancel else { return PrefsObservation(nil) }
        return PrefsObservation(cancel, problem: { watchable.allSetsWatchProblem })
    }

    /// Every set in `store` as stored, normalised (sets that cannot be read are left out).
    private static func allSets(of store: any PrefsStore) -> [String: [String: Any]] {
        var sets: [String: [String: Any]] = [:]
        for root in (try? store.roots()) ?? [] {
            guard let raw = (try? store.load(root: root)) ?? nil, case .success(let set) = PlistValue.normalizedSet(raw, for: .loading) else { continue }
            sets[root] = set
        }
        return sets
    }
}


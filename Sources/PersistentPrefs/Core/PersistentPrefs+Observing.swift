import Foundation

extension PersistentPrefs {
    /// Calls `handler` after each change of this set, whoever made it.
    ///
    /// Changes made through the library in this process are reported as they are written; changes
    /// by other processes (this library, plain `UserDefaults` code that calls `synchronize()`,
    /// `prefs-harness`), and the removal or replacement of the store's file, as soon as the
    /// operating system reports them — typically within a few milliseconds. By then every
    /// instance of the set reads the new values.
    ///
    /// - The handler runs after every lock of the library is released: it may read and write the
    ///   set, and cancel its own observation. Events of one set are delivered one at a time, in
    ///   the order the set changed; a burst of outside writes may arrive as one event, and the
    ///   set then holds the last of them.
    /// - It runs on the thread that made the change (for outside changes, a thread of the
    ///   library's, on which one set is reloaded at a time: a slow handler delays no other set):
    ///   keep it short, or hand the work to your own queue or actor.
    /// - The observation keeps the set live (read, watched) while it runs, even if this instance
    ///   goes away; it observes the set this instance uses now (its root key and store).
    ///
    /// ```swift
    /// let observation = prefs.observeChanges(to: ["Volume"]) { event in
    ///     print("\(event.root): \(event.keys.sorted()) changed")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; empty (the default) for every key.
    ///   - handler: Called with each change that touches one of `keys`; the event lists every key
    ///     that changed.
    /// - Returns: The observation; observing stops when it is cancelled or deallocated. When the
    ///   set cannot be reached (an invalid suite, for example), it is returned cancelled and
    ///   ``lastError`` says why. When the operating system cannot watch the store's file, the
    ///   observation runs on polling and ``lastError`` (and the observation's
    ///   ``PrefsObservation/problem``) is ``PrefsError/watchDegraded(path:reason:)``.
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

    /// The changes of this set as an async sequence: the events ``observeChanges(to:_:)``
    /// delivers, buffered until the loop takes them. The sequence ends when the task iterating
    /// it is cancelled.
    ///
    /// ```swift
    /// for await event in prefs.changes(to: ["Volume"]) {
    ///     updateSlider(prefs.volume)
    /// }
    /// ```
    ///
    /// - Parameter keys: The keys to watch; empty (the default) for every key.
    /// - Returns: The events, in the order the set changed. When the set cannot be reached, the
    ///   sequence is empty and ``lastError`` says why.
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
    /// Calls `handler` after each change of any set in `store` — a suite, a ``PlistFileStore``
    /// folder — whoever made it, as `dconf watch /` does: one event per set that changed, naming
    /// its root key and the keys whose stored values changed. A set that appears or is removed is
    /// reported with all its keys.
    ///
    /// The sets are compared as stored (the user's values; see <doc:LayersAndLockdown> for the
    /// system layers beneath them, which ``observeChanges(to:_:)`` follows). Events are delivered
    /// one at a time, on a thread of the library's, after every lock is released.
    ///
    /// ```swift
    /// let observation = PersistentPrefs.observeStore(PlistFileStore(directory: folder)) { event in
    ///     print("\(event.root): \(event.keys.sorted())")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - store: The store to watch: ``PlistFileStore`` (its folder) or ``UserDefaultsStore``
    ///     (on Linux its suite's file; on Apple platforms, where `cfprefsd` owns the files, the
    ///     changes this process makes through its `UserDefaults` object only — see
    ///     <doc:ApplePlatforms>); any other store gives an observation that is already cancelled.
    ///   - handler: Called with each change.
    /// - Returns: The observation; observing stops when it is cancelled or deallocated. Its
    ///   ``PrefsObservation/problem`` tells when the operating system cannot watch the store.
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


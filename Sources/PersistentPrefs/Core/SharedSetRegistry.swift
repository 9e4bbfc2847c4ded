import Foundation

// The registry of shared sets: one SharedSet per store and root key in this process, each with
// the leases that keep it.

/// One use of a shared set: while a lease lives, its set stays the one shared for its store and
/// root key (and its watch runs); the lease's end ends the use. An instance holds one for the set it
/// resolved, an observation one for the set it observes, and a set's staged changes one until they
/// are written. The last lease's end drops the set and stops its watch, which takes the set's
/// lock: a lease ends outside every lock of the library.
final class SetLease: Sendable {
    let sharedSet: SharedSet

    fileprivate init(_ sharedSet: SharedSet) {
        self.sharedSet = sharedSet
    }

    deinit {
        SharedSet.release(sharedSet)
    }
}

extension SharedSet {
    private struct Key: Hashable {
        let store: String
        let root: String
    }

    /// The shared sets in use in this process, by store identifier and root key, each with the
    /// number of leases on it. A shared set lives as long as a lease does: while one does, new
    /// instances of that set share its state without touching the store; once none does, it is
    /// dropped and the next instance loads the set afresh (so changes made behind the library's
    /// back, such as a removed suite, are seen).
    ///
    /// A count rather than a weak reference: an object with weak references pays more for
    /// every retain and release, and the read path retains the shared set on every read.
    private static let registry = Locked<[Key: (sharedSet: SharedSet, leases: Int)]>([:])

    /// Makes the registry the listener of ``PrefsStore/setDidChange(root:)`` (once).
    private static let listening: Void = StoreChanges.listener.withLock {
        $0 = { identifier, root in existing(storeIdentifier: identifier, root: root)?.storeChanged() }
    }

    /// A lease on the shared set for `root` in `store`. A new shared set starts watching its
    /// store for outside changes (unless ``PersistentPrefs/watchesSets`` is `false` here: then its
    /// first observation starts the watch).
    static func acquire(store: any PrefsStore, root: String) -> SetLease {
        _ = listening
        let key = Key(store: store.identifier, root: root)
        let (sharedSet, isNew) = registry.withLock { registry in
            if let entry = registry[key] {
                registry[key] = (entry.sharedSet, entry.leases + 1)
                return (entry.sharedSet, false)
            }
            let sharedSet = SharedSet(store: store, root: root)
            registry[key] = (sharedSet, 1)
            return (sharedSet, true)
        }
        if isNew, PersistentPrefs.watchesSets { sharedSet.startWatching() }
        return SetLease(sharedSet)
    }

    /// One more lease on this set, or `nil` when it is no longer the shared one. An observation
    /// keeps its set live, and watched from now on (`watching`); staged changes keep it live until
    /// they are written.
    func lease(watching: Bool = true) -> SetLease? {
        let key = Key(store: store.identifier, root: root)
        let leased = Self.registry.withLock { registry in
            guard let entry = registry[key], entry.sharedSet === self else { return false }
            registry[key] = (entry.sharedSet, entry.leases + 1)
            return true
        }
        guard leased else { return nil }
        if watching { startWatching() }
        return SetLease(self)
    }

    /// Ends one lease on `sharedSet` (see ``SetLease``).
    fileprivate static func release(_ sharedSet: SharedSet) {
        let key = Key(store: sharedSet.store.identifier, root: sharedSet.root)
        let last = registry.withLock { registry in
            guard let entry = registry[key], entry.sharedSet === sharedSet else { return false }
            registry[key] = entry.leases > 1 ? (entry.sharedSet, entry.leases - 1) : nil
            return entry.leases == 1
        }
        if last { sharedSet.stopWatching() }
    }

    /// Writes the staged changes of every shared set (see ``writesStagedAtExit``); failures stay
    /// staged.
    static func writeAllStaged() {
        let sharedSets = registry.withLock { $0.values.map(\.sharedSet) }
        for sharedSet in sharedSets { try? sharedSet.writeStaged() }
    }

    /// The shared set in use for `root` in the store named `identifier`, if any.
    static func existing(storeIdentifier identifier: String, root: String) -> SharedSet? {
        registry.withLock { $0[Key(store: identifier, root: root)]?.sharedSet }
    }
}

import Foundation

/// One use of a shared set (by an instance, an observation, or staged changes): while a lease lives, its set stays
/// the one shared for its store and root key. The last lease's end drops the set and stops its watch, which takes
/// the set's lock: a lease ends outside every lock of the library.
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

    /// The shared sets in use, by store identifier and root key, with their lease counts; once none is left the
    /// next instance loads the set afresh. A count, not a weak reference, which would slow every retain on the read path.
    private static let registry = Locked<[Key: (sharedSet: SharedSet, leases: Int)]>([:])

    /// Makes the registry the listener of ``PrefsStore/setDidChange(root:)`` (once).
    private static let listening: Void = StoreChanges.listener.withLock {
        $0 = { identifier, root in existing(storeIdentifier: identifier, root: root)?.storeChanged() }
    }

    /// A lease on the shared set for `root` in `store`; a new one starts watching (if ``PersistentPrefs/watchesSets``).
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

    /// One more lease on this set (starting its watch when `watching`), or `nil` when it is no longer the shared one.
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

    /// Writes the staged changes of every shared set (see ``writesStagedAtExit``); failures stay staged.
    static func writeAllStaged() {
        let sharedSets = registry.withLock { $0.values.map(\.sharedSet) }
        for sharedSet in sharedSets { try? sharedSet.writeStaged() }
        SchemaPublishing.waitForAll()  // those writes' schema files too, whichever exit handler runs last
    }

    /// The shared set in use for `root` in the store named `identifier`, if any.
    static func existing(storeIdentifier identifier: String, root: String) -> SharedSet? {
        registry.withLock { $0[Key(store: identifier, root: root)]?.sharedSet }
    }
}

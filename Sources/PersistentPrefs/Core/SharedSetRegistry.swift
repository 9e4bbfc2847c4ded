import Foundation

// The registry of shared sets: one SharedSet per store and root key in this process.

extension SharedSet {
    private struct Key: Hashable {
        let store: String
        let root: String
    }

    /// The shared sets in use in this process, by store identifier and root key, each with the
    /// number of instances using it. A shared set lives as long as some instance uses it: while
    /// one does, new instances of that set share its cache without touching the store; once
    /// none does, it is dropped and the next instance loads the set afresh (so changes made
    /// behind the library's back, such as a removed suite, are seen).
    ///
    /// A count rather than a weak reference: an object with weak references pays more for
    /// every retain and release, and the read path retains the shared set on every read.
    private static let registry = Locked<[Key: (sharedSet: SharedSet, users: Int)]>([:])

    /// The shared set for `root` in `store`, counted as used until ``release(_:)``.
    /// A new shared set starts watching its store for outside changes (unless
    /// ``PersistentPrefs/watchesSets`` is `false` here: then its first observation starts the
    /// watch); the last release stops it.
    static func acquire(store: any PrefsStore, root: String) -> SharedSet {
        let key = Key(store: store.identifier, root: root)
        let (sharedSet, isNew) = registry.withLock { registry in
            if let entry = registry[key] {
                registry[key] = (entry.sharedSet, entry.users + 1)
                return (entry.sharedSet, false)
            }
            let sharedSet = SharedSet(store: store, root: root)
            registry[key] = (sharedSet, 1)
            return (sharedSet, true)
        }
        if isNew, PersistentPrefs.watchesSets { sharedSet.startWatching() }
        return sharedSet
    }

    /// One more use of a shared set already in use, or `false` when `sharedSet` is no longer the
    /// shared one. An observation keeps its set live, and watched from now on (`watching`); staged
    /// changes keep it live until they are written.
    static func retain(_ sharedSet: SharedSet, watching: Bool = true) -> Bool {
        let key = Key(store: sharedSet.store.identifier, root: sharedSet.root)
        let retained = registry.withLock { registry in
            guard let entry = registry[key], entry.sharedSet === sharedSet else { return false }
            registry[key] = (entry.sharedSet, entry.users + 1)
            return true
        }
        if retained, watching { sharedSet.startWatching() }
        return retained
    }

    /// Ends one use of `sharedSet` begun by ``acquire(store:root:)`` or ``retain(_:watching:)``.
    static func release(_ sharedSet: SharedSet) {
        let key = Key(store: sharedSet.store.identifier, root: sharedSet.root)
        let last = registry.withLock { registry in
            guard let entry = registry[key], entry.sharedSet === sharedSet else { return false }
            registry[key] = entry.users > 1 ? (entry.sharedSet, entry.users - 1) : nil
            return entry.users == 1
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

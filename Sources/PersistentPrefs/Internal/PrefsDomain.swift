import Foundation

/// The one in-memory copy of a set, shared by every instance that uses the same store and
/// root key in this process.
///
/// Reads are served from the cache (loaded on first use, reloaded by ``reload()``). Writes
/// run under the lock: the store applies the change and returns only when it is durable, then
/// the cache is replaced by the set the store returned. A failed write changes nothing.
final class PrefsDomain: @unchecked Sendable {  // `cache` is a Locked; `store` and `root` are immutable
    let store: any PrefsStore
    let root: String
    /// `nil` until the set has been loaded successfully.
    private let cache = Locked<Snapshot?>(nil)
    /// 1 while the store reports damage for this set: read on every read, so an atomic, and
    /// kept apart from the snapshot, which the read path copies.
    private let damaged = Counter()

    /// The set, and the `as?` answers for its numbers (see ``ExactNumber``).
    private struct Snapshot {
        var values: [String: Any]
        var numbers: [String: ExactNumber]

        init(_ values: [String: Any]) {
            self.values = values
            numbers = ExactNumber.table(for: values)
        }
    }

    init(store: any PrefsStore, root: String) {
        self.store = store
        self.root = root
    }

    /// The whole set.
    func values() throws -> [String: Any] {
        try cache.withLock { cache in try loaded(&cache).values }
    }

    /// One value of the set.
    func value(forKey key: String) throws -> Any? {
        try cache.withLock { cache in
            if let snapshot = cache { return snapshot.values[key] }
            return try loaded(&cache).values[key]
        }
    }

    /// The `as?` answers for one value; `nil` when it is absent or not a number.
    func number(forKey key: String) throws -> ExactNumber? {
        try cache.withLock { cache in
            if let snapshot = cache { return snapshot.numbers[key] }
            return try loaded(&cache).numbers[key]
        }
    }

    /// The damage every reader of this set reports (see ``DamageNote``), or `nil`.
    ///
    /// Free while there is none (one atomic load); while there is, the store is asked again
    /// on each call, so a write to another set of the same file ends the report here too.
    func damageNotice() -> PersistentPrefs.PrefsError? {
        guard damaged.load() != 0 else { return nil }
        let notice = (store as? any DamageNoticing)?.damageNotice(root: root)
        if notice == nil { damaged.store(0) }
        return notice
    }

    /// Forgets the store's damage notice for this set and reads the set again.
    func acknowledgeDamage() throws {
        try (store as? any DamageNoticing)?.acknowledgeDamage(root: root)
        try reload()
    }

    /// Drops the cache and reads the set from the store again.
    @discardableResult
    func reload() throws -> [String: Any] {
        try cache.withLock { cache in
            cache = nil
            return try loaded(&cache).values
        }
    }

    /// Applies `change` through the store and caches the set the store returns.
    ///
    /// A change that builds on the current set (a merge or a one-key change) writes nothing
    /// when the set cannot be loaded, so an unreadable set is reported, not overwritten.
    func write(_ change: PrefsChange) throws {
        try cache.withLock { cache in
            if change.buildsOnCurrent { _ = try loaded(&cache) }
            let stored: [String: Any]
            do {
                stored = try store.apply(change, root: root)
            } catch {
                throw PrefsDomain.mapped(error)
            }
            guard case .success(let values) = PlistValue.normalizedSet(stored, for: .loading) else {
                throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
            }
            cache = Snapshot(values)
            damaged.store(0)  // the store is written again, so it no longer reports damage
        }
    }

    // MARK: - Private

    private func loaded(_ cache: inout Snapshot?) throws -> Snapshot {
        if let snapshot = cache { return snapshot }
        let raw: [String: Any]?
        do {
            raw = try store.load(root: root)
        } catch {
            throw PrefsDomain.mapped(error)
        }
        var values: [String: Any] = [:]
        if let raw {
            guard case .success(let normalized) = PlistValue.normalizedSet(raw, for: .loading) else {
                throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
            }
            values = normalized
        }
        let snapshot = Snapshot(values)
        damaged.store((store as? any DamageNoticing)?.damageNotice(root: root) == nil ? 0 : 1)
        cache = snapshot
        return snapshot
    }

    static func mapped(_ error: any Error) -> PersistentPrefs.PrefsError {
        (error as? PersistentPrefs.PrefsError) ?? .unknownError(error: error)
    }
}

// MARK: - Registry

extension PrefsDomain {
    private struct Key: Hashable {
        let store: String
        let root: String
    }

    /// The domains in use in this process, by store identifier and root key, each with the
    /// number of instances using it. A domain lives as long as some instance uses it: while
    /// one does, new instances of that set share its cache without touching the store; once
    /// none does, it is dropped and the next instance loads the set afresh (so changes made
    /// behind the library's back, such as a removed suite, are seen).
    ///
    /// A count rather than a weak reference: an object with weak references pays more for
    /// every retain and release, and the read path retains the domain on every read.
    private static let registry = Locked<[Key: (domain: PrefsDomain, users: Int)]>([:])

    /// The shared domain for `root` in `store`, counted as used until ``release(_:)``.
    static func acquire(store: any PrefsStore, root: String) -> PrefsDomain {
        let key = Key(store: store.identifier, root: root)
        return registry.withLock { registry in
            if let entry = registry[key] {
                registry[key] = (entry.domain, entry.users + 1)
                return entry.domain
            }
            let domain = PrefsDomain(store: store, root: root)
            registry[key] = (domain, 1)
            return domain
        }
    }

    /// Ends one use of `domain` begun by ``acquire(store:root:)``.
    static func release(_ domain: PrefsDomain) {
        let key = Key(store: domain.store.identifier, root: domain.root)
        registry.withLock { registry in
            guard let entry = registry[key], entry.domain === domain else { return }
            registry[key] = entry.users > 1 ? (entry.domain, entry.users - 1) : nil
        }
    }
}

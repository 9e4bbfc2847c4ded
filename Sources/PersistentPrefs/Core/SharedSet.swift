import Foundation

/// The one in-memory copy of a set, shared by every instance that uses the same store and
/// root key in this process.
///
/// Reads are served from the cache (loaded on first use, reloaded by ``reload()``, and by
/// ``storeChanged()`` when the store's watcher reports that someone changed the set). The watch
/// starts when the set is first used (see ``acquire(store:root:)``), and then checks the store
/// once for what changed since the set was loaded; where ``PersistentPrefs/watchesSets`` is
/// `false` (a program that writes a set and exits), it starts with the set's first observation
/// instead, and no watcher runs for reads and writes alone. Writes
/// and reloads take turns under ``turn``: the store applies the change and returns only when
/// it is durable, then the cache is replaced by the set the store returned. A failed write
/// changes nothing. The cache lock is held only to read or replace the copy, never across the
/// store's disk work, so readers never wait for a write, and code run inside a write (an
/// ``PersistentPrefs/update(_:)`` body) can still read the set. Each copy is also published
/// as a view of its own lock (``published``), which the common read path uses.
///
/// Every change of the cache — a write, a reload, another process's write, a staged change —
/// goes the same way: the keys whose value changed are posted to ``feed`` under the cache lock,
/// and delivered to observers once the lock is released.
///
/// A coalescing set (see ``PersistentPrefs/coalescingInterval``) also has staged changes
/// (``staging``): setters apply them to the cache at once, and the next write of the set, a
/// background one within the interval at the latest, writes them first. Every snapshot installed
/// shows them over the set as the store holds it, so a reload never steps a staged value back.
///
/// This file holds the cache and what readers see; the write protocol is in
/// `SharedSet+Writing.swift`, staged changes in `SharedSet+Staging.swift`, the registry of
/// shared sets in `SharedSetRegistry.swift`.
final class SharedSet: @unchecked Sendable {  // the mutable state is Locked or SharedInt; the rest is immutable
    let store: any PrefsStore
    let root: String
    /// Observers of this set, and the Observation framework's registrar.
    let feed: ChangeFeed
    /// How the store tells this set of outside changes: `.idle` before ``startWatching()``, then
    /// the registration to end (`nil` inside when the store cannot watch), `.stopped` after.
    let watch = Locked<WatchState>(.idle)

    enum WatchState {
        case idle
        case watching((@Sendable () -> Void)?)
        case stopped
    }
    /// `nil` until the set has been loaded successfully.
    let cache = Locked<Snapshot?>(nil)
    /// How many times the cache was replaced or dropped, or an outside change found it empty:
    /// changed only under the cache lock. A first load, made outside that lock, installs its
    /// set only when this has not moved meanwhile (see ``withLoaded(_:)``).
    let cacheChanges = SharedInt()
    /// The classes whose schema this set's writes have published (see ``SchemaPublishingStore``):
    /// one look-up per write once done.
    let publishedBy = Locked<Set<ObjectIdentifier>>([])
    /// Writes and reloads of this set, one at a time (see ``Turn``).
    let turn = Turn()
    /// The changes of a coalescing set that readers see and the store does not hold yet (see
    /// `SharedSet+Staging.swift`). What they change together changes only holding the cache lock
    /// (lock order: `cache`, then this), so every snapshot installed shows them.
    let staging = Locked<Staging>(Staging())
    /// ``Attention`` bits: read on every read, so kept apart from the locks. While any is set,
    /// reads take the way that deals with it (see ``needsAttention``).
    let attention = SharedInt()

    /// What the read path must deal with before serving the cached copy.
    enum Attention {
        /// The store reports damage for this set (see ``damageNotice()``).
        static let damaged = 1
        /// The store can watch the set and its watch has not started (see ``watchOnRead()``).
        static let unwatched = 2
    }

    /// The set as readers see it.
    struct Snapshot {
        /// The effective set: the user's values over the system layers (see ``LayerStack``).
        var values: [String: Any]
        /// The version of the store's file the set was read from or written to, when the store
        /// tells (see ``VersionedStore``).
        var version: UInt64?
        /// The schema version the set is stored at (see ``PersistentPrefs/schemaVersion``),
        /// kept out of `values`. 32 bits, so it fits in the padding after `version`.
        private var storedSchema: Int32
        var schema: Int { Int(storedSchema) }

        /// The snapshot of the stored set `values` (schema version included) under `layers`, and
        /// the user's own values with the layers when they differ from what readers see.
        /// The third element: the keys whose value differs from `previous`, when given.
        /// `touched`: when `values` is `previous`'s set with only these keys changed (a write
        /// that built on it), so only they are compared. `changed`: those of them whose values
        /// the write already found changed (a batch), so none is compared.
        static func make(
            _ values: [String: Any], version: UInt64? = nil, layers: LayerStack, previous: Snapshot? = nil, touched: Set<String>? = nil,
            changed knownChanged: Set<String>? = nil
        ) -> (Snapshot, Layered?, changed: Set<String>?) {
            var values = values
            let schema = values[PersistentPrefs.schemaVersionKey] == nil ? 0 : SchemaPlan.take(from: &values)
            let layered = layers.isEmpty && layers.problems.isEmpty ? nil : Layered(stored: values, stack: layers)
            let effective = layered == nil ? values : layers.effective(values)
            let changed = previous.map { previous in
                knownChanged ?? touched?.filter { !PlistValue.same(previous.values[$0], effective[$0]) }
                    ?? PlistValue.changedKeys(previous.values, effective)
            }
            let snapshot = Snapshot(values: effective, version: version, storedSchema: Int32(clamping: schema))
            return (snapshot, layered, changed)
        }

        /// This snapshot with `user` as the user's values, under the layers of `layered` (`nil`:
        /// none); version and schema version stay.
        func holding(_ user: [String: Any], under layered: Layered?) -> (Snapshot, Layered?) {
            var snapshot = self
            guard let stack = layered?.stack else {
                snapshot.values = user
                return (snapshot, nil)
            }
            snapshot.values = stack.effective(user)
            return (snapshot, Layered(stored: user, stack: stack))
        }
    }

    /// The user's set and the layers beneath it, for a set that has layers.
    struct Layered {
        let stored: [String: Any]
        let stack: LayerStack
    }

    /// The user's values and the layers of the cached snapshot when it has layers (`nil`: its
    /// values are the user's). Changed only together with ``cache``, holding its lock (so the
    /// lock order is `cache`, then this): kept apart so the read path's snapshot stays small.
    let layering = Locked<Layered?>(nil)

    /// Replaces the cached snapshot; call it holding the cache lock.
    ///
    /// - Parameter changed: The keys whose value differs from the snapshot replaced: the
    ///   answers worked out for the other keys are kept. `nil`: none is kept.
    func install(_ built: (Snapshot, Layered?), changed: Set<String>?, in cache: inout Snapshot?) {
        cacheChanges.increment()
        cache = built.0
        layering.withLock { $0 = built.1 }
        var view = ReadView(values: built.0.values)
        let replaced = published.withLock { published in
            if let changed, published != nil {
                swap(&view.numbers, &published!.numbers)
                swap(&view.strings, &published!.strings)
                // Only answers someone asked for are there (often none): no look-up per changed key then.
                if !view.numbers.isEmpty { for key in changed { view.numbers[key] = nil } }
                if !view.strings.isEmpty { for key in changed { view.strings[key] = nil } }
            }
            defer { published = view }
            return published
        }
        _ = replaced  // released here, outside the lock
    }

    /// Drops the cached snapshot (its readers then load the set, or report why it cannot be
    /// read); call it holding the cache lock.
    func uninstall(_ cache: inout Snapshot?) {
        cacheChanges.increment()
        cache = nil
        layering.withLock { $0 = nil }
        let replaced = published.withLock { published in
            defer { published = nil }
            return published
        }
        _ = replaced  // released here, outside the lock
    }

    /// What the read path sees of the cached snapshot: its values, and the `as?` answers for
    /// its numbers (see ``NumberCasts``) and strings, each worked out on the first read of its
    /// key and kept until the value changes. Replaced with every change of ``cache``, always
    /// under the cache lock; the answers are added in place under ``published``'s lock.
    private struct ReadView {
        let values: [String: Any]
        var numbers: [String: NumberCasts] = [:]
        var strings: [String: String] = [:]
    }

    /// The cached snapshot as readers see it: `nil` while the set is not loaded.
    private let published = Locked<ReadView?>(nil)

    /// The system layer files of this set and what they held when last read.
    let layerReader: LayerReader

    init(store: any PrefsStore, root: String) {
        self.store = store
        self.root = root
        feed = ChangeFeed(root: root, storeIdentifier: store.identifier)
        layerReader = LayerReader(files: (store as? any LayeredStore)?.layerFiles(root: root) ?? [])
        if store is any WatchableStore || !layerReader.files.isEmpty { attention.insert(Attention.unwatched) }
    }

    /// The user's whole set (without the system layers: what writes replace).
    func values() throws -> [String: Any] {
        try withLoaded { snapshot in
            layering.withLock { $0?.stored } ?? snapshot.values
        }
    }

    /// The set as readers see it: the user's values over the system layers.
    func effectiveValues() throws -> [String: Any] {
        try withLoaded { $0.values }
    }

    /// The system layers of the set as they are now.
    func currentLayers() -> LayerStack {
        (store as? any LayeredStore)?.layerStack(root: root) ?? .empty
    }

    /// The system layers beneath the set, as last read.
    func layers() throws -> LayerStack {
        try withLoaded { _ in layering.withLock { $0?.stack } ?? .empty }
    }

    /// One value of the set: from the published view once the set is loaded.
    func value(forKey key: String) throws -> Any? {
        if let found = loadedValue(forKey: key) { return found }
        return try withLoaded { $0.values[key] }
    }

    /// The `as?` answers for one value; `nil` when it is absent or not a number.
    func number(forKey key: String) throws -> NumberCasts? {
        if let found = loadedNumber(forKey: key) { return found }
        return try withLoaded { $0.values[key].flatMap(NumberCasts.init) }
    }

    /// One value as a `String` (`nil` when it is absent or not a string).
    func string(forKey key: String) throws -> String? {
        if let found = loadedString(forKey: key) { return found }
        return try withLoaded { $0.values[key] as? String }
    }

    /// One value as the published view has it; `.none` when the set is not loaded.
    func loadedValue(forKey key: String) -> Any?? {
        published.withLock { view in view.map { $0.values[key] } }
    }

    /// The `as?` answers for one value from the published view, worked out there on the first
    /// read since the value changed; `.none` when the set is not loaded, `.some(nil)` when the
    /// value is absent or not a number.
    func loadedNumber(forKey key: String) -> NumberCasts?? {
        published.withLock { view -> NumberCasts?? in
            guard view != nil else { return .none }
            if let known = view!.numbers[key] { return known }
            guard let value = view!.values[key], let answer = NumberCasts(value) else { return .some(nil) }
            view!.numbers[key] = answer
            return answer
        }
    }

    /// One value as a `String` from the published view, worked out there on the first read
    /// since the value changed; `.none` when the set is not loaded, `.some(nil)` when the value
    /// is absent or not a string.
    func loadedString(forKey key: String) -> String?? {
        published.withLock { view -> String?? in
            guard view != nil else { return .none }
            if let known = view!.strings[key] { return known }
            guard let answer = view!.values[key] as? String else { return .some(nil) }
            view!.strings[key] = answer
            return answer
        }
    }

    /// Whether a read must take the way that reports damage and starts the watch when due,
    /// rather than serve the published view as it is: one atomic load.
    var needsAttention: Bool { attention.load() != 0 }

    /// Whether the store reports damage for this set (see ``damageNotice()``).
    var isDamaged: Bool { attention.load() & Attention.damaged != 0 }

    /// The schema version the set is stored at (0 when it has none).
    func schemaVersion() throws -> Int {
        try withLoaded { $0.schema }
    }

    /// The damage every reader of this set reports (see ``DamageNote``), or `nil`.
    ///
    /// Free while there is none (one atomic load); while there is, the store is asked again
    /// on each call, so a write to another set of the same file ends the report here too.
    func damageNotice() -> PersistentPrefs.PrefsError? {
        guard isDamaged else { return nil }
        let notice = (store as? any DamageNoticing)?.damageNotice(root: root)
        if notice == nil { attention.remove(Attention.damaged) }
        return notice
    }

    /// Starts watching the set for outside changes, for a read of a set whose watch has not
    /// started (see ``startWatching()``): the Observation framework may be tracking the read.
    /// One atomic load once the watch has started.
    func watchOnRead() {
        guard attention.load() & Attention.unwatched != 0 else { return }
        startWatching()
    }

    // MARK: - Private

    /// Runs `body` on the cached snapshot, under the cache lock, loading the set first when it
    /// is not cached.
    ///
    /// The store is read outside the cache lock: its disk reads, retries and (for a store of the
    /// app's own) code that may take locks of its own or read other sets never run while readers
    /// of this set wait for the lock, so no lock the store takes can deadlock with it. Several
    /// first readers may each read the store; the first set installed is the one every reader
    /// shares, and a set read while the cache changed (a write, a reload, an outside change
    /// reported meanwhile) is read again rather than installed, so a newer set is never
    /// replaced by an older one.
    func withLoaded<Result>(_ body: (inout Snapshot) throws -> Result) throws -> Result {
        try withLoadedCache { try body(&$0!) }
    }

    /// ``withLoaded(_:)``, giving `body` the cache itself (never `nil` there), so it can
    /// ``install(_:changed:in:)`` a new snapshot.
    func withLoadedCache<Result>(_ body: (inout Snapshot?) throws -> Result) throws -> Result {
        var fresh: (built: (Snapshot, Layered?), since: Int)?
        var discarded = 0
        while true {
            var since = 0
            // `nil`: not loaded (a `Result` that is itself optional comes back wrapped).
            let done = try cache.withLock { cache -> Result? in
                if cache == nil, let loaded = fresh {
                    // Read while nothing changed, or read again often enough: a set that keeps
                    // changing is installed as last read, and its next change reloads it.
                    if loaded.since == cacheChanges.load() || discarded >= 8 { install(staged(loaded.built), changed: nil, in: &cache) }
                    discarded += 1
                }
                fresh = nil
                guard cache != nil else {
                    since = cacheChanges.load()
                    return nil
                }
                return try body(&cache)
            }
            if let done { return done }
            fresh = (try fetched(), since)
        }
    }

    /// Whether the set is loaded; when it is not, notes an outside change, so a first load
    /// already reading the store reads it again (see ``withLoaded(_:)``).
    func isLoaded() -> Bool {
        cache.withLock { cache in
            if cache == nil { cacheChanges.increment() }
            return cache != nil
        }
    }

    /// The set as the store holds it now, normalised, with its damage flag updated.
    func fetched() throws -> (Snapshot, Layered?) {
        let raw: [String: Any]?
        var version: UInt64?
        do {
            if let versioned = store as? any VersionedStore {
                (raw, version) = try versioned.versionedLoad(root: root)
            } else {
                raw = try store.load(root: root)
            }
        } catch {
            throw SharedSet.mapped(error)
        }
        var values: [String: Any] = [:]
        if let raw {
            guard case .success(let normalized) = PlistValue.normalizedSet(raw, for: .loading) else {
                throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
            }
            values = normalized
        }
        if (store as? any DamageNoticing)?.damageNotice(root: root) == nil {
            attention.remove(Attention.damaged)
        } else {
            attention.insert(Attention.damaged)
        }
        let (snapshot, layered, _) = Snapshot.make(values, version: version, layers: currentLayers())
        return (snapshot, layered)
    }

    static func mapped(_ error: any Error) -> PersistentPrefs.PrefsError {
        (error as? PersistentPrefs.PrefsError) ?? .unknownError(error: error)
    }
}

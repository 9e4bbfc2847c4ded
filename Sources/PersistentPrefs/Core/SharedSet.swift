import Foundation

/// The one in-memory copy of a set, shared by every instance that uses the same store and
/// root key in this process.
///
/// Reads are served from the cache (loaded on first use, reloaded by ``reload()``, and by
/// ``storeChanged()`` when the store's watcher reports that someone changed the set). Writes
/// and reloads take turns under ``turn``: the store applies the change and returns only when
/// it is durable, then the cache is replaced by the set the store returned. A failed write
/// changes nothing. The cache lock is held only to read or replace the copy, never across the
/// store's disk work, so readers never wait for a write, and code run inside a write (an
/// ``PersistentPrefs/update(_:)`` body) can still read the set. Each copy is also published
/// as an immutable view (see ``SnapshotCell``), which the hot read path uses without a lock.
///
/// Every change of the cache — a write, a reload, another process's write — goes the same way:
/// the keys whose value changed are posted to ``feed`` under the cache lock, and delivered to
/// observers once the lock is released.
final class SharedSet: @unchecked Sendable {  // `cache` and `watch` are Locked; the rest is immutable
    let store: any PrefsStore
    let root: String
    /// Observers of this set, and the Observation framework's registrar.
    let feed: ChangeFeed
    /// How the store tells this set of outside changes: `nil` before ``startWatching()``, then
    /// the registration to end (`nil` inside when the store cannot watch), `.stopped` after.
    private let watch = Locked<WatchState>(.idle)

    private enum WatchState {
        case idle
        case watching((@Sendable () -> Void)?)
        case stopped
    }
    /// `nil` until the set has been loaded successfully.
    private let cache = Locked<Snapshot?>(nil)
    /// How many times the cache was replaced or dropped, or an outside change found it empty:
    /// changed only under the cache lock. A first load, made outside that lock, installs its
    /// set only when this has not moved meanwhile (see ``withLoaded(_:)``).
    private let cacheChanges = SharedInt()
    /// The classes whose schema this set's writes have published (see ``SchemaPublishingStore``):
    /// one look-up per write once done.
    private let publishedBy = Locked<Set<ObjectIdentifier>>([])
    /// Writes and reloads of this set, one at a time (see ``Turn``).
    private let turn = Turn()
    /// 1 while the store reports damage for this set: read on every read, so an atomic, and
    /// kept apart from the snapshot, which the read path copies.
    private let damaged = SharedInt()

    /// The set as readers see it, and the `as?` answers for its numbers (see ``NumberCasts``)
    /// and strings.
    private struct Snapshot {
        /// The effective set: the user's values over the system layers (see ``LayerStack``).
        var values: [String: Any]
        /// The answers worked out so far, by key (see ``SharedSet/number(forKey:)``).
        var numbers: [String: NumberCasts]
        /// The string values read as `String` so far, by key (see ``SharedSet/string(forKey:)``).
        var strings: [String: String] = [:]
        /// The version of the store's file the set was read from or written to, when the store
        /// tells (see ``VersionedStore``).
        var version: UInt64?
        /// The schema version the set is stored at (see ``PersistentPrefs/schemaVersion``),
        /// kept out of `values`. 32 bits, so it fits in the padding after `version`.
        private var storedSchema: Int32
        var schema: Int { Int(storedSchema) }

        /// The snapshot of the stored set `values` (schema version included) under `layers`, and
        /// the user's own values with the layers when they differ from what readers see.
        /// `previous`: the snapshot it replaces, whose numbers are reused where unchanged.
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
            var numbers: [String: NumberCasts]
            var strings: [String: String] = [:]
            var changed: Set<String>?
            if let previous {
                // The answers of unchanged keys are kept; the others are worked out when first
                // read (see ``SharedSet/number(forKey:)``): four bridging casts a number, so a
                // batch of 1,000 numbers would spend ~1.7 ms here on answers nobody asked for.
                let keys = knownChanged ?? touched?.filter { !PlistValue.same(previous.values[$0], effective[$0]) }
                    ?? PlistValue.changedKeys(previous.values, effective)
                numbers = previous.numbers
                strings = previous.strings
                // Only answers someone asked for are there (often none): no look-up per changed key then.
                if !numbers.isEmpty { for key in keys { numbers[key] = nil } }
                if !strings.isEmpty { for key in keys { strings[key] = nil } }
                changed = keys
            } else {
                numbers = [:]
            }
            let snapshot = Snapshot(values: effective, numbers: numbers, strings: strings, version: version, storedSchema: Int32(clamping: schema))
            return (snapshot, layered, changed)
        }
    }

    /// The user's set and the layers beneath it, for a set that has layers.
    private struct Layered {
        let stored: [String: Any]
        let stack: LayerStack
    }

    /// The user's values and the layers of the cached snapshot when it has layers (`nil`: its
    /// values are the user's). Changed only together with ``cache``, holding its lock (so the
    /// lock order is `cache`, then this): kept apart so the read path's snapshot stays small.
    private let layering = Locked<Layered?>(nil)

    /// Replaces the cached snapshot; call it holding the cache lock.
    private func install(_ built: (Snapshot, Layered?), in cache: inout Snapshot?) {
        cacheChanges.increment()
        cache = built.0
        layering.withLock { $0 = built.1 }
        published.publish(ReadView(built.0))
    }

    /// Drops the cached snapshot (its readers then load the set, or report why it cannot be
    /// read); call it holding the cache lock.
    private func uninstall(_ cache: inout Snapshot?) {
        cacheChanges.increment()
        cache = nil
        layering.withLock { $0 = nil }
        published.publish(nil)
    }

    /// What the read path sees of the cached snapshot: its values and the numbers' answers,
    /// never changed once made, so readers use it without a lock (see ``SnapshotCell``).
    /// Republished with every change of ``cache``, always under the cache lock.
    private final class ReadView {
        let values: [String: Any]
        let numbers: [String: NumberCasts]
        let strings: [String: String]

        init(_ snapshot: Snapshot) {
            values = snapshot.values
            numbers = snapshot.numbers
            strings = snapshot.strings
        }
    }

    /// The cached snapshot as readers see it: `nil` while the set is not loaded.
    private let published = SnapshotCell<ReadView>()

    /// The system layer files of this set and what they held when last read.
    let layerReader: LayerReader

    init(store: any PrefsStore, root: String) {
        self.store = store
        self.root = root
        feed = ChangeFeed(root: root, storeIdentifier: store.identifier)
        layerReader = LayerReader(files: (store as? any LayeredStore)?.layerFiles(root: root) ?? [])
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
    private func currentLayers() -> LayerStack {
        (store as? any LayeredStore)?.layerStack(root: root) ?? .empty
    }

    /// The system layers beneath the set, as last read.
    func layers() throws -> LayerStack {
        try withLoaded { _ in layering.withLock { $0?.stack } ?? .empty }
    }

    /// One value of the set: without a lock once the set is loaded.
    func value(forKey key: String) throws -> Any? {
        if let found = SnapshotReaders.shared.section({ knownValue(forKey: key) }) { return found }
        return try withLoaded { $0.values[key] }
    }

    /// The `as?` answers for one value; `nil` when it is absent or not a number.
    ///
    /// Without a lock once the answer is known; the first read of a number since it changed
    /// works it out under the cache lock and republishes the view with it.
    func number(forKey key: String) throws -> NumberCasts? {
        if let known = SnapshotReaders.shared.section({ knownNumber(forKey: key) }) { return known }
        return try answer(forKey: key, in: \.numbers, NumberCasts.init)
    }

    /// The answer `make` gives for the value under `key`, kept in the snapshot's `table` and
    /// published for the lock-free path (a copy of the answers, once per key and change);
    /// `nil` when the value is absent or `make` has none.
    private func answer<Answer>(
        forKey key: String, in table: WritableKeyPath<Snapshot, [String: Answer]>, _ make: (Any) -> Answer?
    ) throws -> Answer? {
        try withLoaded { snapshot in
            if let known = snapshot[keyPath: table][key] { return known }
            guard let value = snapshot.values[key], let answer = make(value) else { return nil }
            snapshot[keyPath: table][key] = answer
            published.publish(ReadView(snapshot))
            return answer
        }
    }

    /// One value as a `String` (`nil` when it is absent or not a string).
    ///
    /// Without a lock and without a cast once the answer is known; the first read of a string
    /// since it changed works it out under the cache lock and republishes the view with it.
    func string(forKey key: String) throws -> String? {
        if let known = SnapshotReaders.shared.section({ knownString(forKey: key) }) { return known }
        return try answer(forKey: key, in: \.strings) { $0 as? String }
    }

    /// One value as a `String` as the published view has it; `.none` when it is not worked out
    /// yet (or the set is not loaded, or the value is not a string). Call it inside
    /// ``SnapshotReaders/section(_:)``.
    @inline(__always)
    func knownString(forKey key: String) -> String?? {
        withoutRetain(published) { $0.withCurrentObject(else: .none) { view -> String?? in
            if let string = view.strings[key] { return string }
            return view.values[key] == nil ? .some(nil) : .none  // absent: no answer to work out
        } }
    }

    /// One value as the published view has it; `.none` when the set is not loaded. Call it
    /// inside ``SnapshotReaders/section(_:)``.
    @inline(__always)
    func knownValue(forKey key: String) -> Any?? {
        withoutRetain(published) { $0.withCurrentObject(else: .none) { view -> Any?? in view.values[key] } }
    }

    /// The `as?` answers for one value as the published view has them; `.none` when they are
    /// not worked out yet (or the set is not loaded). Call it inside
    /// ``SnapshotReaders/section(_:)``.
    @inline(__always)
    func knownNumber(forKey key: String) -> NumberCasts?? {
        withoutRetain(published) { $0.withCurrentObject(else: .none) { view -> NumberCasts?? in
            if let number = view.numbers[key] { return number }
            return view.values[key] == nil ? .some(nil) : .none  // absent: no answer to work out
        } }
    }

    /// Whether the store reports damage for this set (see ``damageNotice()``): one atomic load.
    var isDamaged: Bool { damaged.load() != 0 }

    /// The schema version the set is stored at (0 when it has none).
    func schemaVersion() throws -> Int {
        try withLoaded { $0.schema }
    }

    /// Runs the pending migration steps of `plan` in one store write (see ``SchemaPlan``);
    /// when the set is already migrated (by another process a moment ago, say) nothing is
    /// written and the set is read again.
    ///
    /// - Returns: What ran (no steps when nothing did).
    @discardableResult
    func migrate(_ plan: SchemaPlan) throws -> PrefsMigrationReport {
        var report: PrefsMigrationReport?
        try write(.transform { $0 }, schema: plan, onlyMigrate: true) { report = $0 }
        if let report { return report }
        let schema = try schemaVersion()
        if schema > plan.version, !plan.writesNewer { throw plan.newer(stored: schema, root: root) }
        let stored = try values()
        return PrefsMigrationReport(fromVersion: schema, toVersion: schema, steps: [], before: stored, after: stored)
    }

    /// The damage every reader of this set reports (see ``DamageNote``), or `nil`.
    ///
    /// Free while there is none (one atomic load); while there is, the store is asked again
    /// on each call, so a write to another set of the same file ends the report here too.
    func damageNotice() -> PersistentPrefs.PrefsError? {
        guard isDamaged else { return nil }
        let notice = (store as? any DamageNoticing)?.damageNotice(root: root)
        if notice == nil { damaged.store(0) }
        return notice
    }

    /// Forgets the store's damage notice for this set and reads the set again.
    func acknowledgeDamage() throws {
        try (store as? any DamageNoticing)?.acknowledgeDamage(root: root)
        try reload()
    }

    /// Drops the cache and reads the set from the store again; observers hear of the keys that
    /// changed.
    ///
    /// - Parameter retrying: Whether to read once more after a failure: a damaged file is moved
    ///   aside by the first read, so the second reads the set as it now is (empty, the damage
    ///   reported by every reader).
    @discardableResult
    func reload(retrying: Bool = false) throws -> [String: Any] {
        defer { feed.deliver() }
        return try turn.take(root: root) { try reloadTakingTurn(retrying: retrying) }
    }

    /// The body of ``reload(retrying:)``, for a caller that holds the turn.
    private func reloadTakingTurn(retrying: Bool) throws -> [String: Any] {
        // Read outside the cache lock: readers keep the old copy meanwhile.
        let built: (Snapshot, Layered?)
        do {
            do {
                built = try fetched()
            } catch where retrying {
                built = try fetched()
            }
        } catch {
            cache.withLock { cache in uninstall(&cache) }  // its readers report why
            throw error
        }
        cache.withLock { cache in
            if let before = cache?.values { feed.post(PlistValue.changedKeys(before, built.0.values)) }
            install(built, in: &cache)
        }
        return built.1?.stored ?? built.0.values
    }

    /// Reads the set again after the store's watcher reported a change by someone (another
    /// process, plain `UserDefaults`, or this process). A set never loaded is left for its first
    /// reader; a set that cannot be read is left unloaded, so its readers report why.
    ///
    /// A change that left the file as this copy knows it (the process's own write, seen by the
    /// watcher a moment later) is skipped: comparing versions costs one read of the file's
    /// bytes, a reload a parse and a lock shared with the next write.
    func storeChanged() {
        guard isLoaded() else { return }
        defer { feed.deliver() }
        // After the write in progress, if any (its own event often arrives before it is done).
        _ = try? turn.take(root: root) {
            let version = cache.withLock { $0?.version }
            if let version, let versioned = store as? any VersionedStore, let current = versioned.currentVersion(root: root) {
                if current == version { return }
                // Another set of the same suite written by this process: this one is as it was.
                if versioned.unchangedByOwnWrites(root: root, from: version, to: current) {
                    cache.withLock { cache in if cache?.version == version { cache?.version = current } }
                    return
                }
            }
            _ = try reloadTakingTurn(retrying: true)
        }
    }

    /// Reads the set again after one of its system layer files changed (the user's file may be
    /// as this copy knows it, so no version check): observers hear of the keys whose effective
    /// value changed.
    func layersChanged() {
        guard isLoaded() else { return }
        defer { feed.deliver() }
        _ = try? turn.take(root: root) { _ = try reloadTakingTurn(retrying: true) }
    }

    /// Starts listening for outside changes of the set (see ``WatchableStore``) and of its system
    /// layer files; once only.
    func startWatching() {
        let watchable = store as? any WatchableStore
        guard watchable != nil || !layerReader.files.isEmpty else { return }
        let begins = watch.withLock { state in
            guard case .idle = state else { return false }
            state = .watching(nil)
            return true
        }
        guard begins else { return }
        // A strong reference, dropped by ``stopWatching()``: a weak one would move the domain's
        // reference count to a side table and slow every retain on the read path.
        let storeCancel = watchable?.watch(root: root) { [self] in storeChanged() }
        let layerCancels = layerReader.files.map { file in ChangeWatcher.shared.watchingFollowingLinks(file.url) { [self] in layersChanged() } }
        var cancel = storeCancel
        if !layerCancels.isEmpty {
            cancel = { @Sendable in
                storeCancel?()
                for cancel in layerCancels { cancel() }
            }
        }
        let late = watch.withLock { state -> Bool in
            guard case .watching = state else { return true }
            state = .watching(cancel)
            return false
        }
        if late { cancel?() }  // stopped while the registration was being made
    }

    /// Why outside changes of the set reach it late (see ``WatchableStore/watchProblem(root:)``),
    /// or `nil`.
    func watchProblem() -> PersistentPrefs.PrefsError? {
        guard case .watching = watch.withLock({ $0 }) else { return nil }
        return (store as? any WatchableStore)?.watchProblem(root: root)
    }

    /// Stops listening for outside changes (the last user is gone).
    func stopWatching() {
        let cancel = watch.withLock { state -> (@Sendable () -> Void)? in
            defer { state = .stopped }
            if case .watching(let cancel) = state { return cancel }
            return nil
        }
        cancel?()
    }

    /// Applies `change` through the store and caches the set the store returns.
    ///
    /// A change that builds on the current set (a merge, a one-key change, a transform) writes
    /// nothing when the set cannot be loaded, so an unreadable set is reported, not
    /// overwritten. Errors a ``PrefsChange/transform(_:)`` closure throws come out unchanged.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` when called from
    ///   inside this set's own write (an ``PersistentPrefs/update(_:)`` body writing through
    ///   another instance), instead of waiting for itself.
    ///
    /// - Parameters:
    ///   - schema: The writer's schema version and migrations: the store write re-reads the
    ///     stored version, migrates an older set first, refuses a newer one, and stamps the
    ///     version (see ``SchemaPlan``).
    ///   - onlyMigrate: For ``migrate(_:)``: write nothing when there is nothing to migrate.
    ///   - log: Receives what a migration did, when one ran.
    ///   - report: Where a batch's transform leaves the keys it changed (see ``BatchReport``).
    func write(
        _ change: PrefsChange, schema: SchemaPlan, onlyMigrate: Bool = false, log: ((PrefsMigrationReport) -> Void)? = nil,
        report: BatchReport.Box? = nil
    ) throws {
        defer { feed.deliver() }
        try turn.take(root: root) {
            // The store refuses a change of a locked key under its lock (see ``LayeredStore``).
            let layers = currentLayers()
            do {
                try writeTakingTurn(
                    schema.wrapped(change, root: root, onlyMigrate: onlyMigrate, log: log), buildsOnCurrent: change.buildsOnCurrent, layers: layers,
                    touching: change.touchedKeys, report: report)
            } catch PersistentPrefs.PrefsError.invalidStoredValue(let key) where key == root && !change.buildsOnCurrent {
                // The root holds something that is not a set (so no version either): a whole-set
                // replacement may still repair it.
                try writeTakingTurn(schema.wrapped(change, root: root), buildsOnCurrent: false, layers: layers, reading: false)
            } catch is SchemaPlan.AlreadyCurrent {
                _ = try reloadTakingTurn(retrying: false)  // migrated meanwhile, by someone else
            }
        }
        // Written: the writer's schema beside the set (once per process and class), outside the turn.
        if let publication = schema.publication, publishedBy.withLock({ $0.insert(publication.classID).inserted }),
            let publishing = store as? any SchemaPublishingStore
        {
            publishing.publish(publication, root: root)
        }
    }

    /// The body of ``write(_:schema:onlyMigrate:log:)``, for a caller that holds the turn.
    ///
    /// - Parameters:
    ///   - reading: Whether the store reads the set as stored for `change` (a `.transform`);
    ///     `false` hands it an empty set, for a replacement of an unreadable root.
    ///   - touching: The only keys `change` can change, when known (``PrefsChange/touchedKeys``):
    ///     when the store applied it to the very set cached here, only they are compared to tell
    ///     observers what changed (comparing a 1,000-key set was a quarter of a write's work).
    private func writeTakingTurn(
        _ change: PrefsChange, buildsOnCurrent: Bool, layers: LayerStack, reading: Bool = true, touching: Set<String>? = nil,
        report: BatchReport.Box? = nil
    ) throws {
        report?.report = nil
        // Loaded first, so observers can be told what changed; a whole-set replacement does
        // not need it, so it can still repair a set that cannot be read.
        if buildsOnCurrent {
            try withLoaded { _ in }
        } else {
            _ = try? withLoaded { _ in }
        }
        let stored: [String: Any]
        var version: UInt64?
        // The set as stored the store applied the change to (its last try), when the result is
        // that set with only the touched keys changed (no migration or version stamp ran).
        var derivedFrom: [String: Any]?
        do {
            // Not reading: the change applied to an empty set, as a replacement.
            var applied = reading ? change : .replace(try change.applied(to: [:]))
            if touching != nil || report != nil, reading {
                let inner = applied
                let stamp = PersistentPrefs.schemaVersionKey
                applied = .transform { current in
                    let result = try inner.applied(to: current)
                    derivedFrom = current[stamp] == nil && result[stamp] == nil ? current : nil
                    return result
                }
            }
            if let versioned = store as? any VersionedStore {
                (stored, version) = try versioned.versionedApply(applied, root: root)
            } else {
                stored = try store.apply(applied, root: root)
            }
        } catch let error as TransformFailure {
            throw error.underlying
        } catch {
            throw SharedSet.mapped(error)
        }
        guard case .success(let values) = PlistValue.normalizedSet(stored, for: .loading) else {
            throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
        }
        let previous = cache.withLock { $0 }
        // Only the touched keys can differ when the store changed the cached set itself (the same
        // storage: see PlistValue.normalizedSet) and neither set has layers.
        var touched: Set<String>?
        var knownChanged: Set<String>?
        if let derivedFrom, let previous, previous.schema == 0, layers.isEmpty, layers.problems.isEmpty,
            PlistValue.sameStorage(derivedFrom, previous.values)
        {
            // A batch that compared each value it replaced, on this very set: its keys.
            if let batch = report?.report, PlistValue.sameStorage(batch.base, derivedFrom) {
                knownChanged = batch.changed
                touched = batch.changed
            } else {
                touched = touching
            }
        }
        // Built before taking the lock readers wait for.
        let (snapshot, layered, changed) = Snapshot.make(
            values, version: version, layers: layers, previous: previous, touched: touched, changed: knownChanged)
        cache.withLock { cache in
            let before = cache?.values ?? [:]
            install((snapshot, layered), in: &cache)
            // Worked out while making it, unless a reader replaced the snapshot meanwhile.
            if let changed, PlistValue.identical(before, previous?.values) {
                feed.post(changed)
            } else {
                feed.post(PlistValue.changedKeys(before, snapshot.values))
            }
        }
        damaged.store(0)  // the store is written again, so it no longer reports damage
    }

    /// Wraps what a transform's closure threw, so ``write(_:schema:onlyMigrate:log:)`` hands it back unchanged
    /// rather than as a store failure.
    struct TransformFailure: Error {
        let underlying: any Error
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
    private func withLoaded<Result>(_ body: (inout Snapshot) throws -> Result) throws -> Result {
        var fresh: (built: (Snapshot, Layered?), since: Int)?
        var discarded = 0
        while true {
            var since = 0
            // `nil`: not loaded (a `Result` that is itself optional comes back wrapped).
            let done = try cache.withLock { cache -> Result? in
                if cache == nil, let loaded = fresh {
                    // Read while nothing changed, or read again often enough: a set that keeps
                    // changing is installed as last read, and its next change reloads it.
                    if loaded.since == cacheChanges.load() || discarded >= 8 { install(loaded.built, in: &cache) }
                    discarded += 1
                }
                fresh = nil
                guard cache != nil else {
                    since = cacheChanges.load()
                    return nil
                }
                return try body(&cache!)
            }
            if let done { return done }
            fresh = (try fetched(), since)
        }
    }

    /// Whether the set is loaded; when it is not, notes an outside change, so a first load
    /// already reading the store reads it again (see ``withLoaded(_:)``).
    private func isLoaded() -> Bool {
        cache.withLock { cache in
            if cache == nil { cacheChanges.increment() }
            return cache != nil
        }
    }

    /// The set as the store holds it now, normalised, with its damage flag updated.
    private func fetched() throws -> (Snapshot, Layered?) {
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
        damaged.store((store as? any DamageNoticing)?.damageNotice(root: root) == nil ? 0 : 1)
        let (snapshot, layered, _) = Snapshot.make(values, version: version, layers: currentLayers())
        return (snapshot, layered)
    }

    static func mapped(_ error: any Error) -> PersistentPrefs.PrefsError {
        (error as? PersistentPrefs.PrefsError) ?? .unknownError(error: error)
    }
}

// MARK: - Turns

extension SharedSet {
    /// The turn writes and reloads of one set take, one at a time: a lock that knows the thread
    /// holding it, so a write that would wait for its own thread is refused instead of waiting.
    ///
    /// That is a write from inside a write of the same set, and a wait that would close a circle:
    /// a thread inside an `update` of set A that writes set B while B's holder (inside an update
    /// of B) waits to write A. All turns share one table of which thread holds each turn and
    /// which turn each thread waits for, kept under one lock; a thread records its wait before it
    /// waits, so of the threads that would close a circle the last to ask sees it and is refused.
    final class Turn: @unchecked Sendable {  // `holder` is only touched under `Turn.waits`' lock
        private let lock = NSLock()
        /// The thread holding the turn, and the set it holds it for.
        private var holder: (thread: ObjectIdentifier, root: String)?

        /// The turn each thread is waiting for, by thread.
        private static let waits = Locked<[ObjectIdentifier: Turn]>([:])

        /// Runs `body` once no other write or reload of the set runs.
        ///
        /// - Throws: ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the set
        ///   this thread is writing, when it holds this turn already or when waiting for it would
        ///   wait for itself (its holder waits, maybe through others, for a turn this thread
        ///   holds); otherwise what `body` throws.
        func take<Result>(root: String, _ body: () throws -> Result) throws -> Result {
            let me = ObjectIdentifier(Thread.current)
            try Self.waits.withLock { waits in
                if let circle = heldCircle(from: me, waits) { throw PersistentPrefs.PrefsError.transactionInProgress(root: circle) }
                waits[me] = self
            }
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

        /// The set whose turn `thread` holds at the end of the chain of holders this turn waits
        /// for (its holder, the turn that holder waits for, its holder…), when the chain comes
        /// back to `thread`; else `nil`. Call it under the table's lock.
        private func heldCircle(from thread: ObjectIdentifier, _ waits: [ObjectIdentifier: Turn]) -> String? {
            var turn = self
            // Each thread waits for one turn at most, so a chain longer than the table is a circle
            // that does not pass through `thread`.
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

// MARK: - Registry

extension SharedSet {
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
    private static let registry = Locked<[Key: (domain: SharedSet, users: Int)]>([:])

    /// The shared domain for `root` in `store`, counted as used until ``release(_:)``.
    /// A new domain starts watching its store for outside changes; the last release stops it.
    static func acquire(store: any PrefsStore, root: String) -> SharedSet {
        let key = Key(store: store.identifier, root: root)
        let (domain, isNew) = registry.withLock { registry in
            if let entry = registry[key] {
                registry[key] = (entry.domain, entry.users + 1)
                return (entry.domain, false)
            }
            let domain = SharedSet(store: store, root: root)
            registry[key] = (domain, 1)
            return (domain, true)
        }
        if isNew { domain.startWatching() }
        return domain
    }

    /// One more use of a domain already in use (an observation keeps its set live), or `false`
    /// when `domain` is no longer the shared one.
    static func retain(_ domain: SharedSet) -> Bool {
        let key = Key(store: domain.store.identifier, root: domain.root)
        return registry.withLock { registry in
            guard let entry = registry[key], entry.domain === domain else { return false }
            registry[key] = (entry.domain, entry.users + 1)
            return true
        }
    }

    /// Ends one use of `domain` begun by ``acquire(store:root:)`` or ``retain(_:)``.
    static func release(_ domain: SharedSet) {
        let key = Key(store: domain.store.identifier, root: domain.root)
        let last = registry.withLock { registry in
            guard let entry = registry[key], entry.domain === domain else { return false }
            registry[key] = entry.users > 1 ? (entry.domain, entry.users - 1) : nil
            return entry.users == 1
        }
        if last { domain.stopWatching() }
    }

    /// The domain in use for `root` in the store named `identifier`, if any.
    static func existing(storeIdentifier identifier: String, root: String) -> SharedSet? {
        registry.withLock { $0[Key(store: identifier, root: root)]?.domain }
    }
}

import Foundation

/// A persistent preference set: a `[String: Any]` dictionary kept under a *root key* in a
/// store (`UserDefaults` by default). Subclass it once per set.
///
/// A subclass lists the keys it accepts in ``keys`` and usually adds typed accessors.
/// Each instance works on the set named by its root key ``key``; several root keys give
/// several independent sets. Writes are checked before anything is stored: keys must be in
/// ``keys`` and values must be property-list values (at any depth). A refused write changes
/// nothing and says why in ``lastError``; a successful one is stored when it returns (or, for a
/// set with a ``coalescingInterval``, within that interval): on disk with the library's own
/// files, handed to `cfprefsd` by the default store on Apple platforms (<doc:ApplePlatforms>).
///
/// ```swift
/// final class AppPrefs: PersistentPrefs {
///     override var keys: [String] { ["Volume", "Name"] }
///
///     var volume: Int {
///         get { value(forKey: "Volume", as: Int.self) ?? 5 }
///         set { self["Volume"] = newValue }
///     }
/// }
///
/// let prefs = AppPrefs()          // root key "AppPrefs"
/// prefs.volume = 7                // stored when this returns (on disk on Linux; see ApplePlatforms)
/// ```
///
/// Every instance with the same store and root key in a process shares one locked, in-memory copy
/// of the set, so instances are cheap and always agree. The copy lives while some instance uses it;
/// once none does, the next instance reads the store afresh. An instance may be used from any
/// thread, one call at a time (a ``PrefsTransacting/batch(_:)`` collects every change made through
/// its instance); in Swift 6 code, where the class is not `Sendable`, create one instance per task.
///
/// Values read back follow Foundation's `as?` rules on every platform: numbers are `NSNumber`s, so
/// a stored `Int` reads `as? Int` and `as? Double`. ``value(forKey:as:)`` gives the same answers
/// faster (<doc:LinuxAndReliability>).
open class PersistentPrefs: NSObject {
    // MARK: - State

    /// This instance's own state (see ``InstanceState``), under its lock; the set itself is in
    /// the shared set it resolves (see `PersistentPrefs+SetResolution.swift`).
    let state = Locked(InstanceState(), level: .instance)
    /// The store given to ``init(key:values:store:)``; `nil`: the ``groupID`` suite.
    let explicitStore: (any PrefsStore)?
    /// `explicitStore == nil`, kept apart so the read path need not copy the existential.
    let followsGroupID: Bool

    // MARK: - Subclass hooks

    /// The keys this set accepts.
    ///
    /// By default, the keys of the subclass's ``Pref`` properties; a subclass may override it
    /// with an explicit list (RVS_PersistentPrefs style), which then wins. A bare
    /// `PersistentPrefs` has no keys, so every non-empty write to it is refused with
    /// ``PrefsError/incorrectKeys(invalidElements:)``.
    ///
    /// Reads are not restricted: keys stored by an older version stay readable.
    open var keys: [String] { declaredPrefKeys }

    /// The root key: the name of this instance's set in the store.
    ///
    /// Defaults to the subclass's simple type name (`"AppPrefs"`). Assigning a new root key
    /// switches this instance to that set (it does not move or copy the old one).
    /// An override is read when the instance is created and whenever the base setter runs.
    open var key: String {
        get { state.withLock { $0.key } }
        set {
            state.withLock { $0.key = newValue }
            dropSharedSet()
        }
    }

    /// The outcome of the most recent operation on this instance: `nil` after a successful
    /// read or write, otherwise the reason it failed.
    ///
    /// Every operation of RVS's API sets it (the subscript, ``values``, ``value(forKey:as:)``,
    /// writes); a `@Pref` read sets it only when something is wrong. Check it right after the
    /// operation you care about, or use the throwing ``PrefsTransacting/set(_:_:)``; for what is
    /// wrong with the set as it stands, use ``problems``.
    open var lastError: PrefsError? {
        get { state.withLock { $0.lastError } }
        set { state.withLock { $0.lastError = newValue } }
    }

    /// What is wrong with this set now, worked out afresh on each call: it lists a problem for
    /// as long as its cause lasts, whatever was read since (unlike ``lastError``).
    ///
    /// Reading it reads the set (as any read does) and leaves ``lastError`` alone. It lists a damaged or unreadable store (until ``acknowledgeDamage()`` or a write), stored
    /// values a `@Pref` or ``validators`` cannot use (until the key is written), conflicting
    /// `@Pref` declarations, a newer schema version or a failing migration
    /// (<doc:EvolvingAPreferenceSet>), a failed background write (<doc:CoalescedWrites>), and a
    /// file the system cannot watch (``PrefsError/watchDegraded(path:reason:)``).
    ///
    /// ```swift
    /// for problem in prefs.problems { log(problem.description) }   // [] when all is well
    /// ```
    public var problems: [PrefsError] {
        currentProblems()
    }

    /// Rules for the values of keys, beside those of `@Pref` declarations (`in:`, `validate:`):
    /// every write of a key — the subscript, ``values``, ``set(_:forKey:)``, batches, updates — is
    /// checked against its rule, and a refused value is not stored (``PrefsError/invalidValue(key:reason:)``).
    ///
    /// ```swift
    /// override var validators: [String: PrefsValidator] { ["Volume": .range(0...11)] }
    /// ```
    ///
    /// Empty by default. Read on every write, so return a value without side effects.
    open var validators: [String: PrefsValidator] { [:] }

    /// The schema version of this subclass's sets: bump it, and add a step to ``migrations``,
    /// whenever a new version of the app changes what the set holds (renames or removes a key,
    /// changes a value's type).
    ///
    /// 0 (the default) means no versioning. A set is stamped with the version that wrote it; an
    /// older set is migrated once, in one write under the store's lock, the first time an
    /// instance touches it; a newer one stays readable and refuses writes
    /// (``writesNewerSchemaVersions``). See <doc:EvolvingAPreferenceSet>.
    ///
    /// ```swift
    /// override class var schemaVersion: Int { 1 }
    /// override class var migrations: [PrefsMigration] { [.renameKey("Font Size", to: "Editor Font Size")] }
    /// ```
    open class var schemaVersion: Int { 0 }

    /// The steps that carry a stored set to ``schemaVersion``: the step at position `n` takes
    /// version `n` to `n + 1`, so there is one step per version (see ``PrefsMigration``).
    ///
    /// Empty by default. A list whose length is not ``schemaVersion`` makes every migration fail
    /// with ``PrefsError/migrationFailed(root:step:name:reason:)``, which says so.
    open class var migrations: [PrefsMigration] { [] }

    /// Whether instances may write to a set stored by a newer schema version than
    /// ``schemaVersion`` (the set keeps its newer version stamp). `false` by default: such a set
    /// is readable, but every write to it is refused with
    /// ``PrefsError/newerSchemaVersion(root:stored:supported:)``, so a downgraded app cannot
    /// destroy data in a shape it does not know.
    open class var writesNewerSchemaVersions: Bool { false }

    /// Whether writes record the set's schema beside its data, for tools (see ``PrefsSchema``):
    /// `true` by default (a class without keys never does). Override with `false` for a set
    /// whose shape is private. The file is written after the first write of the set in the
    /// process returns; ``synchronize()`` waits for it (<doc:LayersAndLockdown>).
    open class var publishesSchema: Bool { true }

    /// How long a change of this class's sets may wait before it is written, for state that
    /// changes many times a second; `nil` (the default) stores every write when it returns.
    ///
    /// A setter is checked as any write and seen by the whole process at once; the changes of one
    /// interval reach the store in one durable write. ``synchronize()`` writes them now, a normal
    /// exit writes them, and a crash loses one interval at most. <doc:CoalescedWrites> gives every
    /// guarantee: durable roads, failures, refusals and locked keys.
    ///
    /// ```swift
    /// final class WindowState: PersistentPrefs {
    ///     override class var coalescingInterval: TimeInterval? { 0.25 }
    ///     @Pref("Sidebar Width") var sidebarWidth = 240.0
    /// }
    /// ```
    ///
    /// Read once per write; a value that is not positive and finite means `nil`.
    open class var coalescingInterval: TimeInterval? { nil }

    /// A property-list file with defaults for this set (a bundled resource or a path), or `nil`.
    ///
    /// Its values are read by ``Pref`` properties that are not stored; see ``fileDefaults``.
    /// Every key must be one of ``keys`` and every value a property-list value; a file that is
    /// missing or refused is reported in ``lastError`` when an instance is made.
    ///
    /// ```swift
    /// override var defaultsFileURL: URL? { Bundle.module.url(forResource: "Defaults", withExtension: "plist") }
    /// ```
    open var defaultsFileURL: URL? { nil }

    /// The `UserDefaults` object in use, or `nil` when this instance uses another kind of
    /// store or the suite cannot be opened.
    ///
    /// Without an explicit store this is the suite named by ``groupID``, or `.standard`.
    /// A subclass may override it to choose another `UserDefaults` object; return the same
    /// object every time, since instances share their in-memory sets by object.
    open var userDefaults: UserDefaults? {
        if let explicitStore {
            return (explicitStore as? UserDefaultsStore)?.userDefaults
        }
        return UserDefaultsStore(suiteName: Self.groupID)?.userDefaults
    }

    // MARK: - Shared configuration

    private static let group = Locked<String?>(nil)

    /// The `UserDefaults` suite used by every instance that was not given a store; `nil` or
    /// `""` selects `.standard`.
    ///
    /// Set it once, before creating instances, to share sets between programs (on Apple
    /// platforms, an App Group identifier). Changing it redirects later operations of all
    /// such instances; it does not move data between suites.
    ///
    /// ```swift
    /// PersistentPrefs.groupID = "group.com.example.shared"   // before the first instance
    /// let prefs = AppPrefs()                                  // lives in that suite
    /// ```
    public static var groupID: String? {
        get { group.withLock { $0 } }
        set {
            group.withLock { $0 = newValue }
            groupGeneration.increment()
        }
    }

    /// How long a write waits for the file's lock while another writer holds it, in seconds
    /// (5 by default), before it gives up with ``PrefsError/lockTimeout(path:holderPID:waited:)``.
    ///
    /// A writer that is stopped or stuck while holding the lock would otherwise block every other
    /// writer of that file; reads never wait for it. Applies to every store and style in this process.
    ///
    /// ```swift
    /// PersistentPrefs.lockTimeout = 1      // a command-line tool that should fail fast
    /// prefs.volume = 7
    /// if case .lockTimeout(let path, let pid, _)? = prefs.lastError {
    ///     print("\(path) is locked by process \(pid.map(String.init) ?? "?")")
    /// }
    /// ```
    public static var lockTimeout: TimeInterval {
        get { FileLock.timeout.withLock { $0 } }
        set { FileLock.timeout.withLock { $0 = max(0, newValue.isNaN ? 0 : newValue) } }
    }

    // MARK: - Initialisers

    /// Loads the set stored under the default root key (the subclass's type name).
    ///
    /// Check ``lastError`` afterwards: the store may be unreadable.
    public override init() {
        explicitStore = nil
        followsGroupID = true
        super.init()
        start(key: nil, merging: [:])
    }

    /// Loads the set stored under `key` and merges `values` over it (new values win).
    ///
    /// Non-empty `values` are checked like a write: if any is refused, the stored set is left
    /// untouched and ``lastError`` says why. `nil` or `[:]` only loads the set (<doc:MigratingFromRVS>).
    ///
    /// ```swift
    /// let prefs = AppPrefs(key: "Main", values: nil)     // load only
    /// ```
    ///
    /// - Parameters:
    ///   - key: The root key; `nil` uses the subclass's type name.
    ///   - values: Values to merge into the stored set and save; `nil` merges nothing.
    public init(key: String? = nil, values: [String: Any]? = [:]) {
        explicitStore = nil
        followsGroupID = true
        super.init()
        start(key: key, merging: values ?? [:])
    }

    /// Loads the set stored under `key` in `store` and merges `values` over it.
    ///
    /// ```swift
    /// let prefs = AppPrefs(key: "Test", store: InMemoryStore())
    /// ```
    ///
    /// - Parameters:
    ///   - key: The root key; `nil` uses the subclass's type name.
    ///   - values: Values to merge into the stored set and save; `nil` merges nothing.
    ///   - store: Where the set lives, instead of the ``groupID`` suite.
    public init(key: String? = nil, values: [String: Any]? = [:], store: any PrefsStore) {
        explicitStore = store
        followsGroupID = false
        super.init()
        start(key: key, merging: values ?? [:])
    }

    // MARK: - Reading and writing

    // One declaration per platform (`@objc` needs the Objective-C runtime); the Apple one adds key-value observing.
    #if canImport(ObjectiveC)
        /// The whole set.
        ///
        /// Reading returns the current set from memory (no disk access after the first load).
        /// Assigning replaces the whole set, all or nothing: every key must be in ``keys`` and
        /// every value must be a property-list value. On success the set is stored when the
        /// setter returns (<doc:ApplePlatforms> says how durably) and ``lastError`` is `nil`;
        /// otherwise nothing changes and ``lastError`` names the refused keys. Assigning `[:]`
        /// removes the root key from the store.
        ///
        /// Live: another process's write is seen without ``flush()`` (see ``observeChanges(to:_:)``).
        /// On Apple platforms `values` is `@objc` and key-value observable: KVO observers of
        /// `values` are told of every change of the set, whoever made it. They are told once the
        /// set has changed (both `willChange` and `didChange` come after it, on the thread that
        /// delivers the set's events), so a change's `.old` value and a `.prior` notification
        /// already show the new set; use ``observeChanges(to:_:)`` to learn which keys changed.
        @objc public var values: [String: Any] {
            get { read { try $0.values() } ?? [:] }
            set { reportingErrors { try setValues(newValue) } }
        }

        /// Key-value coding of the set's keys: for a key in ``keys``, the value as the subscript
        /// reads it (so `prefs.value(forKey: "Volume") as? Int` reads the set instead of raising
        /// `NSUnknownKeyException`); any other key, and a key that is also the name of an `@objc`
        /// property of the class, is `NSObject`'s (the property).
        ///
        /// - Parameter key: A key of the set, or the name of a property.
        /// - Returns: The value, or `nil` when the set has none.
        open override func value(forKey key: String) -> Any? {
            isSetKeyForKeyValueCoding(key) ? self[key] : super.value(forKey: key)
        }

        /// Key-value coding of the set's keys: for a key in ``keys``, a write as the subscript
        /// makes it (vetted; a refusal is in ``lastError``, nothing raises); any other key, and
        /// a key that is also the name of an `@objc` property, is `NSObject`'s.
        ///
        /// - Parameters:
        ///   - value: The new value; `nil` removes it from the set.
        ///   - key: A key of the set, or the name of a property.
        open override func setValue(_ value: Any?, forKey key: String) {
            if isSetKeyForKeyValueCoding(key) {
                self[key] = value
            } else {
                super.setValue(value, forKey: key)
            }
        }

        /// Whether key-value coding of `key` reads and writes the set: a key of the set with no
        /// `@objc` getter of that name, which key-value observing of the property relies on.
        private func isSetKeyForKeyValueCoding(_ key: String) -> Bool {
            keys.contains(key) && !responds(to: NSSelectorFromString(key))
        }
    #else
        /// The whole set.
        ///
        /// Reading returns the current set from memory (no disk access after the first load).
        /// Assigning replaces the whole set, all or nothing: every key must be in ``keys`` and
        /// every value must be a property-list value. On success the set is stored when the
        /// setter returns (<doc:ApplePlatforms> says how durably) and ``lastError`` is `nil`;
        /// otherwise nothing changes and ``lastError`` names the refused keys. Assigning `[:]`
        /// removes the root key from the store. Live: another process's write is seen without
        /// ``flush()`` (see ``observeChanges(to:_:)``).
        public var values: [String: Any] {
            get { read { try $0.values() } ?? [:] }
            set { reportingErrors { try setValues(newValue) } }
        }
    #endif

    /// One value of the set; assigning `nil` removes it.
    ///
    /// Same checks and guarantees as ``values``, for one key: the key must be in ``keys``
    /// and the value must be a property-list value.
    ///
    /// ```swift
    /// prefs["Volume"] = 7                  // stored; lastError == nil
    /// let volume = prefs["Volume"] as? Int // 7
    /// prefs["Volume"] = nil                // removed: a @Pref reads its default again
    /// ```
    ///
    /// - Parameter key: A key of the set (one of ``keys``), not the root key.
    public subscript(_ key: String) -> Any? {
        get { rawValue(forKey: key) }
        set { reportingErrors { try set(newValue, forKey: key) } }
    }

    /// The number of values in the set.
    ///
    /// `open`, as in RVS_PersistentPrefs, so a subclass may override it.
    ///
    /// ```swift
    /// if prefs.count == 0 { prefs.values = prefs.declaredDefaults }   // first run
    /// ```
    open var count: Int {
        read { try $0.values().count } ?? 0
    }

    /// One value, cast to `T` with Foundation's `as?` rules; `nil` when absent or of another type.
    ///
    /// Gives the same answer as `self[key] as? T`, faster for `Int`, `Double`, `Float` and
    /// `Bool`, whose casts from `NSNumber` take a slow bridging path on Linux (the answers
    /// are worked out once, when the value is stored). Clears ``lastError`` like any read.
    ///
    /// ```swift
    /// var volume: Int { value(forKey: "Volume", as: Int.self) ?? 5 }
    /// ```
    ///
    /// - Parameters:
    ///   - key: A key of the set.
    ///   - type: The type to read the value as.
    /// - Returns: The value as `T`, or `nil`.
    @inlinable
    public func value<T>(forKey key: String, as type: T.Type = T.self) -> T? {
        value(forKey: key, as: type, tracking: \.wholeSet)
    }

    // MARK: - Throwing API

    /// Replaces the whole set, or throws why it cannot.
    ///
    /// The throwing form of assigning ``values``; both share one code path.
    ///
    /// - Parameter values: The new set; `[:]` removes the root key from the store.
    /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``,
    ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)``, or a store error.
    ///   Nothing changes when it throws.
    public func setValues(_ values: [String: Any]) throws {
        try submit { .replace(try vetted(values)) }
    }

    /// Sets one value (or removes it, for `nil`), or throws why it cannot.
    ///
    /// The throwing form of the subscript setter; both share one code path.
    ///
    /// - Parameters:
    ///   - value: The new value, or `nil` to remove the key.
    ///   - key: A key of the set (one of ``keys``).
    /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``,
    ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)``, or a store error.
    ///   Nothing changes when it throws.
    public func set(_ value: Any?, forKey key: String) throws {
        try submit { .set(key: key, value: try vetting(oneKey: true).vet(value, forKey: key)) }
    }

    /// Stores each of `values` whose key holds nothing yet, in one step under the store's lock,
    /// so defaults written by one process never overwrite a value another process just set.
    ///
    /// ```swift
    /// if prefs.values.isEmpty { try prefs.addMissingValues(prefs.declaredDefaults) }
    /// ```
    ///
    /// - Parameter values: Values for keys of the set; stored values win over them. Keys the
    ///   system layers give a value or lock (see <doc:LayersAndLockdown>) are left out.
    /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``,
    ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)``, or a store error.
    ///   Nothing changes when it throws.
    public func addMissingValues(_ values: [String: Any]) throws {
        // Keys the system layers give or lock are left out (not refused): the set reads the
        // system's values for them, and a site default is not hidden by a copy of the code's.
        let layers = (try? resolvedSet().layers()) ?? .empty
        try submit { .fillMissing(try vetted(values).filter { layers.layerValue(forKey: $0.key) == nil && !layers.isLocked($0.key) }) }
    }

    /// Reads the set again from the store, or throws why it cannot.
    ///
    /// The throwing form of ``flush()``.
    ///
    /// ```swift
    /// do { try prefs.reload() } catch { print("cannot read the set:", error) }
    /// ```
    ///
    /// - Returns: The set as stored.
    /// - Throws: A store error (for example ``PrefsError/invalidStoredValue(key:)``).
    @discardableResult
    public func reload() throws -> [String: Any] {
        dropSharedSet()
        return try resolvedSet().reload()
    }

    /// Writes the changes of the set still waiting for their write (see
    /// ``coalescingInterval``) now, and returns once they are durable and the schema files this
    /// process's writes publish are written; returns at once when nothing is waiting.
    ///
    /// ```swift
    /// slider.onEditingEnded { try? windowState.synchronize() }
    /// ```
    ///
    /// - Throws: Why the write failed: a store error such as ``PrefsError/ioError(path:reason:)``
    ///   or ``PrefsError/lockTimeout(path:holderPID:waited:)`` (the changes stay in memory and are
    ///   retried an interval later), or a refusal no retry can overcome, such as
    ///   ``PrefsError/newerSchemaVersion(root:stored:supported:)`` (the changes are dropped and
    ///   the set reads as stored) — also the refusal for which a background write dropped
    ///   changes since the last call, once.
    public func synchronize() throws {
        defer { SchemaPublishing.waitForAll() }
        try reportingAndThrowing { try resolvedSet().writeStaged() }
    }

    // MARK: - Utilities

    /// Drops the in-memory copy of the set and reads it again from the store (including
    /// another process's writes). Every instance of this root key sees the reloaded set.
    ///
    /// Rarely needed: sets are live, so another process's write is seen without it. It is for
    /// stores that cannot tell (a custom ``PrefsStore`` that does not call
    /// ``PrefsStore/setDidChange(root:)``):
    ///
    /// ```swift
    /// prefs.flush()
    /// if let error = prefs.lastError { print("cannot read the set:", error) }
    /// ```
    public func flush() {
        reportingErrors { try reload() }
    }

    /// Returns one key to its default by removing it from the set.
    ///
    /// A ``Pref`` property then reads as its declared (or file) default.
    ///
    /// - Parameter key: A key of the set.
    public func reset(_ key: String) {
        reportingErrors { try set(nil, forKey: key) }
    }

    /// Returns every key to its default by removing the whole set from the store.
    ///
    /// ```swift
    /// prefs.resetAll()          // every @Pref reads its default; the root key is gone
    /// ```
    public func resetAll() {
        clear()
    }

    /// Empties the set and removes its root key from the store.
    ///
    /// ```swift
    /// prefs.clear()
    /// assert(prefs.values.isEmpty)
    /// ```
    public func clear() {
        reportingErrors { try setValues([:]) }
    }

    /// Removes this root key's set from the store and reloads the (now empty) set.
    ///
    /// ```swift
    /// prefs.deleteAll()         // as clear(), then read again from the store
    /// ```
    public func deleteAll() {
        reportingErrors {
            try setValues([:])
            try reload()
        }
    }
}

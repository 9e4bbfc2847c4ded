import Foundation

/// A ``PrefsStore`` that keeps each set as a dictionary under its root key in a `UserDefaults` suite. The default
/// store of ``PersistentPrefs``.
///
/// A write of a set is atomic, and ``PersistentPrefs/flush()`` sees other processes' writes. What else a write
/// guarantees depends on the platform:
///
/// - On Apple platforms, through `UserDefaults`: `set`, then `synchronize()`. When the setter returns, `cfprefsd`
///   holds the value and other processes see it; it writes the file later. `update`, transactions and migrations are
///   exact within one process only (no lock across processes). A set is read from the suite's persistent domain:
///   registered and managed values are layers, never written into it. See <doc:ApplePlatforms>, and use
///   ``PlistFileStore`` where processes share a set or a write must survive a power loss.
/// - On Linux, a set is on disk when the setter returns: the library reads and replaces the suite's file itself
///   (`$XDG_CONFIG_HOME/<suite>.plist` or `~/.config/<suite>.plist`, still a property list `UserDefaults` reads) under
///   a `flock` shared by every process using it, re-reading the file and applying only its change, as
///   <doc:LinuxAndReliability> describes. An unreadable file is moved aside and reported.
///
/// ```swift
/// guard let store = UserDefaultsStore(suiteName: "com.example.shared") else { return }
/// let prefs = SamplePrefs(key: "Main", store: store)
/// ```
public struct UserDefaultsStore: PrefsStore {
    let handle: DefaultsHandle

    /// The store backed by `UserDefaults.standard`.
    public static var standard: UserDefaultsStore {
        UserDefaultsStore(handle: DefaultsHandle.forSuite(nil, backend: .platformDefault)!)
    }

    /// Opens the named suite, or `.standard` when `suiteName` is `nil` or empty; `nil` when the name is refused (see
    /// ``named(_:)`` for why) or `UserDefaults(suiteName:)` refuses it. Stores opened with the same name share one
    /// `UserDefaults` object and one lock.
    public init?(suiteName: String?) {
        guard let handle = DefaultsHandle.forSuite(suiteName, backend: .platformDefault) else { return nil }
        self.handle = handle
    }

    /// Opens the named suite, or throws why it cannot be one. Unlike ``init(suiteName:)``, an empty name is
    /// refused rather than taken as `.standard`.
    ///
    /// ```swift
    /// let store = try UserDefaultsStore.named("com.example.shared")
    /// ```
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/invalidSuiteName(name:reason:)`` for a name with `/`, `..`, an empty
    ///   name or a special domain, or ``PersistentPrefs/PrefsError/userDefaultsUnavailable``.
    public static func named(_ suiteName: String) throws -> UserDefaultsStore {
        if let problem = SuitePaths.problem(with: suiteName) {
            throw PersistentPrefs.PrefsError.invalidSuiteName(name: suiteName, reason: problem)
        }
        guard let store = UserDefaultsStore(suiteName: suiteName) else { throw PersistentPrefs.PrefsError.userDefaultsUnavailable }
        return store
    }

    /// Wraps a `UserDefaults` object you already have. Pass the same object each time: stores made from it share one
    /// lock and one in-memory copy of each set. On Apple platforms an object other than `.standard` does not tell its
    /// suite's name, so its sets are read through its whole search list (registered and global values included).
    public init(userDefaults: UserDefaults) {
        handle = DefaultsHandle.forObject(userDefaults, backend: .platformDefault)
    }

    private init(handle: DefaultsHandle) {
        self.handle = handle
    }

    /// The `UserDefaults` object this store writes to.
    public var userDefaults: UserDefaults { handle.defaults }

    /// The suite name, or `nil` for `.standard` and for wrapped objects.
    public var suiteName: String? { handle.suiteName }

    /// Identifies the underlying `UserDefaults` object.
    public var identifier: String { handle.identifier }

    /// See ``PrefsStore/load(root:)``.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/invalidStoredValue(key:)`` when the object under `root` is not a
    ///   string-keyed dictionary; (Linux) ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` after moving
    ///   an unreadable suite file aside.
    public func load(root: String) throws -> [String: Any]? { try read(root: root).set }

    /// See ``PrefsStore/save(_:root:)``: on disk on Linux, handed to `cfprefsd` on Apple platforms.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)``; nothing was changed.
    public func save(_ values: [String: Any], root: String) throws { _ = try apply(.replace(values), root: root) }

    /// See ``PrefsStore/remove(root:)``: on disk on Linux, handed to `cfprefsd` on Apple platforms.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)``; nothing was changed.
    public func remove(root: String) throws { _ = try apply(.replace([:]), root: root) }

    /// See ``PrefsStore/apply(_:root:)``; how each platform writes is in the type's documentation. A write started
    /// inside `change` or from an observer the `UserDefaults` object calls on the writing thread (to any set of the
    /// same object) is refused with ``PersistentPrefs/PrefsError/transactionInProgress(root:)``.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError``; nothing was changed.
    public func apply(_ change: PrefsChange, root: String) throws -> [String: Any] {
        try write(WritePlan(change, root: root), root: root).appliedSet()
    }

    /// ``apply(_:root:)`` as the engine calls it, reporting what it did (see ``SetStorage``).
    func write<Outcome>(_ plan: WritePlan<Outcome>, root: String) throws -> StoreWrite<Outcome> {
        if handle.file != nil { PlistFile.OwnWrites.follow() }  // as in read(root:)
        var last: (outcome: Outcome, layers: LayerStack, isSet: Bool)?
        var readVersion: UInt64?
        let memory = memoryLayers(root: root)  // before the lock on `UserDefaults` that update takes
        let version = try update(
            root,
            { stored in
                // Layer files read again under the lock: see SetStorage.layerFiles(root:).
                let layers = layerStack(root: root, memory: memory)
                let set = stored.map(PlistValue.stringKeyedDictionary) ?? [:]
                let outcome = plan.apply(set, layers)
                last = (outcome, layers, set != nil)
                guard let written = outcome.written else { return .leave }
                return .set(written.set.isEmpty ? nil : written.set)
            }, reading: { readVersion = $0 })
        guard let last else { throw PersistentPrefs.PrefsError.invalidStoredValue(key: root) }  // never: update runs the change
        guard let written = last.outcome.written else { return .unwritten(last.outcome, layers: last.layers) }
        // Not a set before: what the write changed against the file read is not known.
        let knowsRead = handle.file != nil && last.isSet
        return StoreWrite(
            outcome: last.outcome, set: written.set, readVersion: knowsRead ? readVersion : nil, version: version, changed: written.changed,
            layers: last.layers)
    }

    /// See ``PrefsStore/roots()``: the suite's own keys holding dictionaries (through `UserDefaults`, its
    /// persistent domain), without registered or global values.
    public func roots() throws -> [String] {
        let objects = try handle.file.map { try PlistFile.read($0) ?? [:] } ?? handle.synchronizedDomain()
        return objects.filter { PlistValue.stringKeyedDictionary($0.value) != nil }.map(\.key).sorted()
    }

    // MARK: - One key of the suite

    /// The object stored under the suite key `key`.
    func object(_ key: String) throws -> Any? {
        if let file = handle.file {
            return try Self.versionedObject(suiteFile: file, key: key, layers: LayerReader(files: handle.layerFiles)).value
        }
        return handle.synchronizedDomain()[key]
    }

    /// Replaces the object under the suite key `key` with what `change` makes of it, durably; ``KeyEdit/leave``
    /// writes nothing. On the suite-file road `change` may run more than once, on a newer file each time.
    ///
    /// - Returns: The version of the suite file written (see ``SetStorage/currentVersion(root:)``), or `nil`.
    @discardableResult
    func update(_ key: String, _ change: (Any?) throws -> KeyEdit, reading: (UInt64?) -> Void = { _ in }) throws -> UInt64? {
        if let file = handle.file {
            // `refresh`: the UserDefaults object re-reads the file, still under the lock: should plain code in this
            // process have unsaved keys, the save that follows cannot race another writer.
            return try Self.update(
                suiteFile: file, describing: "the key \"\(key)\"", label: key, changing: [key],
                layers: LayerReader(files: handle.layerFiles),
                { suite in
                    guard case .set(let object) = try change(suite[key]) else { return .leave }
                    suite[key] = object
                    return .write(changed: nil)
                }, reading: reading, whileLocked: handle.refresh)
        }
        return try handle.withWrite(root: key) { () -> UInt64? in
            let previous = handle.synchronizedDomain()[key]
            // Outside the object's lock: readers (another set's reload) never wait for `change`, which may wait for one.
            guard case .set(let updated) = try change(previous) else { return nil }
            try handle.withDefaults { defaults in
                if let updated { defaults.set(updated, forKey: key) } else { defaults.removeObject(forKey: key) }
                guard defaults.synchronize() else {
                    if let previous { defaults.set(previous, forKey: key) } else { defaults.removeObject(forKey: key) }
                    let reason = "synchronize() failed while writing the root key \"\(key)\""
                    throw PersistentPrefs.PrefsError.ioError(path: handle.displayName, reason: reason)
                }
            }
            return nil
        }
    }
}

// MARK: - SetStorage

extension UserDefaultsStore: SetStorage {}

extension UserDefaultsStore {
    func read(root: String) throws -> StoreRead {
        let (stored, version): (Any?, UInt64?)
        if let file = handle.file {
            PlistFile.OwnWrites.follow()  // the caller keeps the version: own writes are followed from now on
            (stored, version) = try Self.versionedObject(suiteFile: file, key: root, layers: LayerReader(files: handle.layerFiles))
        } else {
            (stored, version) = (try object(root), nil)
        }
        guard let stored else { return StoreRead(set: nil, version: version) }
        guard let dictionary = PlistValue.stringKeyedDictionary(stored) else {
            throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
        }
        return StoreRead(set: dictionary, version: version)
    }

    func writeScope(root: String) -> String? { handle.writeScope }

    func currentVersion(root: String) -> UInt64? { handle.file.flatMap(PlistFile.digest(of:)) }

    func unchangedByOwnWrites(root: String, from old: UInt64, to new: UInt64) -> Bool {
        handle.file.map { PlistFile.OwnWrites.untouched(root, in: $0.path, from: old, to: new) } ?? false
    }
}

// MARK: - Damage

extension UserDefaultsStore {
    func damageNotice(root: String) -> PersistentPrefs.PrefsError? {
        handle.file.flatMap(DamageNote.notice(for:))
    }

    func acknowledgeDamage(root: String) throws -> String? {
        guard let file = handle.file else { return nil }
        // No file and no note: nothing to acknowledge, and no lock file to leave behind.
        guard SharedFolders.kind(file.path) != nil || DamageNote.exists(forFileAt: file.path) else { return nil }
        // The suite's history ends with the damage: nothing from before is put back later.
        return try FileLock.withLock(for: file, label: root) { lock in
            let aside = try PlistFile.acknowledgeDamage(atPath: file.path)
            SuiteLedger.clear(lock)
            return aside
        }
    }
}

// MARK: - The two roads to a suite

extension UserDefaultsStore {
    /// How a store reaches its suite.
    enum Backend: Sendable {
        /// The library reads and replaces the suite's plist file itself, under a `flock` (Linux).
        case suiteFile
        /// Through the `UserDefaults` object: `set`, `synchronize()`, `persistentDomain` (Apple platforms).
        case userDefaults

        /// The road this platform takes (see ``PlatformChoices``); both run everywhere, so the Apple one is tested on Linux.
        static var platformDefault: Backend {
            PlatformChoices.current.suitesGoThroughUserDefaults ? .userDefaults : .suiteFile
        }
    }

    #if DEBUG
        /// The store for `suiteName` (`nil` or `""`: `.standard`) on the ``Backend/userDefaults`` road whatever the
        /// platform, or `nil` when the name is refused. Debug builds only, for tests; not crash- or multi-process-safe on Linux.
        package static func throughUserDefaults(suiteName: String?) -> UserDefaultsStore? {
            DefaultsHandle.forSuite(suiteName, backend: .userDefaults).map(UserDefaultsStore.init(handle:))
        }
    #endif
}

// MARK: - Shared handles

/// One `UserDefaults` object, with the locks that serialise every use of it in this process and its writes.
final class DefaultsHandle: @unchecked Sendable {  // `object` is used only while holding `lock`
    /// The `UserDefaults` object. On the suite-file road (Linux) it is made when first asked for (a write asks, to
    /// ``refresh()`` it), not when the handle is: making one parses the process's arguments.
    var defaults: UserDefaults {
        lock.lock()
        defer { lock.unlock() }
        if let object { return object }
        // swift-corelibs-foundation's `init?(suiteName:)` never fails; the name was vetted.
        guard let made = isStandard ? UserDefaults.standard : UserDefaults(suiteName: suiteName) else {
            preconditionFailure("UserDefaults(suiteName: \(suiteName ?? "nil")) refused a suite name the library vetted")
        }
        object = made
        let key = ObjectKey(object: ObjectIdentifier(made), backend: .suiteFile)
        Self.registry.withLock { registry in
            if registry.byObject[key] == nil { registry.byObject[key] = self }
        }
        return made
    }
    private var object: UserDefaults?
    let suiteName: String?
    let identifier: String
    /// The suite's plist file on the ``UserDefaultsStore/Backend/suiteFile`` road; `nil` on the other.
    let file: URL?
    /// Serialises every use of `defaults`, one short step at a time (never held while a write's body runs);
    /// recursive, for code `UserDefaults` calls back on the same thread.
    private let lock = NSRecursiveLock()
    /// Serialises the writes of this object (``withWrite``), held for the whole read-modify-write.
    private let writeLock = NSLock()
    /// What ``WriteScope`` knows a write of the suite by: the suite file's lock (``FileLock/scope(ofFile:)``)
    /// where the library writes the file, else this object's write lock.
    let writeScope: String
    /// The name of the suite's persistent domain; `nil` for an object passed to
    /// ``UserDefaultsStore/init(userDefaults:)`` on Apple platforms, other than `.standard`.
    let domainName: String?
    /// Whether the object is `.standard`, whose domain is the application's.
    private let isStandard: Bool
    /// The suite's file to watch for changes, on Linux on either road; `nil` on Apple platforms (`cfprefsd`'s files).
    let watchedFile: URL?
    /// The system layer files of the suite (Linux), the most important first; none on Apple platforms.
    var layerFiles: [LayerFile] {
        guard let watchedName else { return [] }
        return LayerPaths.files(relativeFolder: "", name: watchedName, holdsRoots: true)
    }
    /// The name of ``watchedFile`` (every write looks for the layer files it names).
    private let watchedName: String?

    /// `defaults` is `nil` (the suite-file road only) to make the object when first asked for.
    private init(defaults: UserDefaults?, suiteName: String?, isStandard: Bool, backend: UserDefaultsStore.Backend) {
        object = defaults
        self.suiteName = suiteName
        domainName = suiteName ?? (isStandard ? Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName : nil)
        self.isStandard = isStandard
        file = backend == .suiteFile ? SuitePaths.file(suite: isStandard ? nil : suiteName, isStandard: isStandard) : nil
        writeScope = file.map { FileLock.scope(ofFile: $0.path) } ?? "defaults " + UUID().uuidString
        if PlatformChoices.current.suitesGoThroughUserDefaults {
            (watchedFile, watchedName) = (file, nil)
        } else {
            watchedFile = file ?? SuitePaths.file(suite: suiteName, isStandard: isStandard)
            watchedName = watchedFile?.lastPathComponent
        }
        identifier = file.map { "userdefaults-file:\($0.path)" }
            ?? "userdefaults:\(suiteName ?? "<standard>")@\(defaults.map { String(UInt(bitPattern: ObjectIdentifier($0).hashValue), radix: 16) } ?? "")"
    }

    /// Lets this process's `UserDefaults` objects of the suite see a file the library replaced (`synchronize()` drops
    /// their shared cache, or saves keys plain code left unsaved over the file: call it under the suite's lock). The
    /// object is made if need be: plain code may hold unsaved keys in the cache every object of the suite shares, which
    /// the library cannot see, and only a `synchronize()` under the lock saves them without losing them or ours.
    func refresh() { withDefaults { _ = $0.synchronize() } }

    private struct Registry {
        var bySuite: [SuiteKey: DefaultsHandle] = [:]
        var byObject: [ObjectKey: DefaultsHandle] = [:]
    }

    private struct SuiteKey: Hashable {
        let name: String
        let backend: UserDefaultsStore.Backend
    }

    private struct ObjectKey: Hashable {
        let object: ObjectIdentifier
        let backend: UserDefaultsStore.Backend
    }

    private static let registry = Locked(Registry())
    private static let standardName = "\u{0}standard"

    /// The shared handle for a suite name (`nil` or `""`: `.standard`), or `nil` when the name is refused.
    static func forSuite(_ name: String?, backend: UserDefaultsStore.Backend) -> DefaultsHandle? {
        let suite = (name?.isEmpty ?? true) ? nil : name
        let suiteKey = SuiteKey(name: suite ?? standardName, backend: backend)
        return registry.withLock { registry in
            if let existing = registry.bySuite[suiteKey] { return existing }
            if let suite, SuitePaths.problem(with: suite) != nil { return nil }
            if backend == .suiteFile {  // the object is made when first asked for
                let handle = DefaultsHandle(defaults: nil, suiteName: suite, isStandard: suite == nil, backend: backend)
                registry.bySuite[suiteKey] = handle
                return handle
            }
            let defaults: UserDefaults
            if let suite {
                guard let opened = UserDefaults(suiteName: suite) else { return nil }
                defaults = opened
            } else {
                defaults = .standard
            }
            let objectKey = ObjectKey(object: ObjectIdentifier(defaults), backend: backend)
            let handle = registry.byObject[objectKey]
                ?? DefaultsHandle(defaults: defaults, suiteName: suite, isStandard: suite == nil, backend: backend)
            registry.bySuite[suiteKey] = handle
            registry.byObject[objectKey] = handle
            return handle
        }
    }

    /// The shared handle for an existing `UserDefaults` object.
    static func forObject(_ defaults: UserDefaults, backend: UserDefaultsStore.Backend) -> DefaultsHandle {
        let objectKey = ObjectKey(object: ObjectIdentifier(defaults), backend: backend)
        return registry.withLock { registry in
            if let existing = registry.byObject[objectKey] { return existing }
            // `.standard`'s handle may have been made by name, its object not yet asked for.
            if defaults === UserDefaults.standard, let existing = registry.bySuite[SuiteKey(name: standardName, backend: backend)] {
                registry.byObject[objectKey] = existing
                return existing
            }
            let name = SuitePaths.suiteName(of: defaults)
            // `UserDefaults()` shares `.standard`'s file, so it takes the same locked road.
            let handle = DefaultsHandle(
                defaults: defaults, suiteName: name, isStandard: SuitePaths.isStandardDomain(defaults), backend: backend)
            registry.byObject[objectKey] = handle
            // And `.standard` by name (`UserDefaultsStore.standard`) finds the same handle.
            if defaults === UserDefaults.standard, registry.bySuite[SuiteKey(name: standardName, backend: backend)] == nil {
                registry.bySuite[SuiteKey(name: standardName, backend: backend)] = handle
            }
            return handle
        }
    }

    /// Runs `body` with the `UserDefaults` object, holding its lock (not the write lock: a read waits for one step).
    func withDefaults<Result>(_ body: (UserDefaults) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(defaults)
    }

    /// Runs the write `body` of the suite key `root` holding the write lock, as ``FileLock/withLock(for:label:_:)``
    /// does for a file: one write of this object at a time, waiting at most `limit` (default
    /// ``PersistentPrefs/lockTimeout``; infinity allowed) for another thread's. `body` uses ``withDefaults(_:)``.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` for a write this thread starts inside
    ///   another; ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)``; or what `body` throws.
    func withWrite<Result>(root: String, waitingAtMost limit: TimeInterval? = nil, _ body: () throws -> Result) throws -> Result {
        try WriteScope.check(writeScope)
        let limit = limit ?? FileLock.timeout.withLock { $0 }
        // Recorded from before the lock is taken until after it is let go (see ``WriteScope``).
        return try WriteScope.holding(writeScope, label: root) {
            let started = ProcessInfo.processInfo.systemUptime
            var waited: TimeInterval = 0
            // At most an hour a try: a far deadline overflows Foundation's nanoseconds.
            while !writeLock.lock(before: Date(timeIntervalSinceNow: min(3600, limit - waited))) {
                waited = ProcessInfo.processInfo.systemUptime - started
                if waited >= limit { throw PersistentPrefs.PrefsError.lockTimeout(path: displayName, holderPID: getpid(), waited: waited) }
            }
            defer { writeLock.unlock() }
            return try body()
        }
    }

    /// The suite's persistent domain: what it stores, without the values `UserDefaults` layers around it. An object
    /// whose domain cannot be known is read through `dictionaryRepresentation()` less every value it shows from the
    /// argument, registration or global domain (a key stored with the very value one of those gives is taken as theirs).
    func persistentDomain(in defaults: UserDefaults) -> [String: Any] {
        #if canImport(Darwin)
            // `.standard`'s domain, as CFPreferences names it, without guessing the name.
            if isStandard {
                let copied: CFDictionary? = CFPreferencesCopyMultiple(
                    nil, kCFPreferencesCurrentApplication, kCFPreferencesCurrentUser, kCFPreferencesAnyHost)
                return (copied as NSDictionary?) as? [String: Any] ?? [:]
            }
        #endif
        if let domainName { return defaults.persistentDomain(forName: domainName) ?? [:] }
        let layers = [
            defaults.volatileDomain(forName: UserDefaults.argumentDomain),
            defaults.volatileDomain(forName: UserDefaults.registrationDomain),
            defaults.persistentDomain(forName: UserDefaults.globalDomain) ?? [:],
        ]
        return defaults.dictionaryRepresentation().filter { key, value in
            !layers.contains { layer in layer[key].map { PlistValue.same($0, value) } ?? false }
        }
    }

    /// ``persistentDomain(in:)``, after `synchronize()`.
    func synchronizedDomain() -> [String: Any] {
        withDefaults { defaults in
            _ = defaults.synchronize()
            return persistentDomain(in: defaults)
        }
    }

    /// The suite as errors name it where there is no file: `UserDefaults suite "NAME"`.
    var displayName: String {
        if let suiteName { return "UserDefaults suite \"\(suiteName)\"" }
        return isStandard ? "UserDefaults suite \"standard\"" : "a UserDefaults object whose suite Foundation does not name"
    }
}

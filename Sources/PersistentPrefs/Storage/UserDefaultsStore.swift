import Foundation

/// A ``PrefsStore`` that keeps each set as a dictionary under its root key in a
/// `UserDefaults` suite. The default store of ``PersistentPrefs``.
///
/// A write of a set is atomic, and ``PersistentPrefs/flush()`` sees other processes' writes.
/// What else a write guarantees depends on the platform:
///
/// - On Apple platforms, through `UserDefaults`: `set`, then `synchronize()`. When the setter
///   returns, `cfprefsd` holds the value and other processes see it; `cfprefsd` writes the file
///   later. `update`, transactions and migrations are exact within one process only (there is
///   no lock across processes). A set is read from the suite's persistent domain: registered
///   and managed values are layers, never written into it. See <doc:ApplePlatforms>, and use
///   ``PlistFileStore`` where processes share a set or a write must survive a power loss.
/// - On Linux, a set is on disk when the setter returns. There, where `UserDefaults` rewrites its file in place (a crash mid-write empties it)
///   and loses keys when several processes write, the library reads and replaces the suite's
///   file itself — `$XDG_CONFIG_HOME/<suite>.plist` or `~/.config/<suite>.plist`, still a
///   property list `UserDefaults` reads — under an advisory lock (`flock` on
///   `<suite>.plist.lock`) shared by every process using the library: it re-reads the file,
///   applies only its change, and replaces the file atomically. An unreadable file is moved
///   aside and reported. A suite holding what XML cannot keep exactly (a date with a fraction
///   of a second, a control character) is written as a binary property list instead.
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

    /// Opens the named suite, or `.standard` when `suiteName` is `nil` or empty.
    ///
    /// Stores opened with the same name share one `UserDefaults` object and one lock.
    ///
    /// - Parameter suiteName: The suite to use; `nil` or `""` selects `.standard`.
    /// - Returns: `nil` when the name would escape the preferences folder or name a special
    ///   domain (see ``named(_:)`` for the reason), or `UserDefaults(suiteName:)` refuses it.
    public init?(suiteName: String?) {
        guard let handle = DefaultsHandle.forSuite(suiteName, backend: .platformDefault) else { return nil }
        self.handle = handle
    }

    /// Opens the named suite, or throws why it cannot be one.
    ///
    /// Unlike ``init(suiteName:)``, an empty name is refused rather than taken as `.standard`.
    ///
    /// ```swift
    /// let store = try UserDefaultsStore.named("com.example.shared")
    /// let prefs = AppPrefs(key: "Main", store: store)
    /// ```
    ///
    /// - Parameter suiteName: The suite to use.
    /// - Returns: The store.
    /// - Throws: ``PersistentPrefs/PrefsError/invalidSuiteName(name:reason:)`` for a name with
    ///   `/`, `..`, an empty name or a special domain, or
    ///   ``PersistentPrefs/PrefsError/userDefaultsUnavailable``.
    public static func named(_ suiteName: String) throws -> UserDefaultsStore {
        if let problem = SuitePaths.problem(with: suiteName) {
            throw PersistentPrefs.PrefsError.invalidSuiteName(name: suiteName, reason: problem)
        }
        guard let store = UserDefaultsStore(suiteName: suiteName) else { throw PersistentPrefs.PrefsError.userDefaultsUnavailable }
        return store
    }

    /// Wraps a `UserDefaults` object you already have.
    ///
    /// Stores made from the same object share one lock and one in-memory copy of each set,
    /// so pass the same object each time (not a new `UserDefaults(suiteName:)` per call).
    ///
    /// On Apple platforms an object other than `.standard` does not tell its suite's name, so
    /// its sets are read through its whole search list (registered and global values included);
    /// ``init(suiteName:)`` reads the suite's own values only.
    ///
    /// - Parameter userDefaults: The defaults object to store sets in.
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

    /// Returns the dictionary stored under `root` in the suite.
    ///
    /// - Parameter root: The root key of the set.
    /// - Returns: The stored dictionary, or `nil`.
    /// - Throws: ``PersistentPrefs/PrefsError/invalidStoredValue(key:)`` when the object
    ///   under `root` is not a string-keyed dictionary, or (Linux)
    ///   ``PersistentPrefs/PrefsError/corruptStore(path:reason:)`` after moving an unreadable
    ///   suite file aside.
    public func load(root: String) throws -> [String: Any]? {
        try read(root: root).set
    }

    /// Stores `values` under `root`: on disk on Linux, handed to `cfprefsd` on Apple platforms.
    ///
    /// - Parameters:
    ///   - values: The whole set, vetted and normalised.
    ///   - root: The root key of the set.
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)``; nothing was changed.
    public func save(_ values: [String: Any], root: String) throws {
        _ = try apply(.replace(values), root: root)
    }

    /// Removes `root` from the suite: on disk on Linux, handed to `cfprefsd` on Apple platforms.
    ///
    /// - Parameter root: The root key of the set.
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)``; nothing was changed.
    public func remove(root: String) throws {
        _ = try apply(.replace([:]), root: root)
    }

    /// Applies `change` to the set under `root`.
    ///
    /// On Linux, under an advisory lock on the suite file shared by every process using this
    /// library: the suite is re-read, only this root key's change is applied, and the file is
    /// replaced atomically (a crash leaves the old file or the new one, never an empty one).
    /// On Apple platforms, through `UserDefaults` (`set` then `synchronize()`, which hands the
    /// write to `cfprefsd`), under a lock of this process only: another process can write the
    /// set between the read and the write. A write started inside `change` (to any set of the
    /// same `UserDefaults` object, on the same thread) is refused with
    /// ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` — so is one made from an
    /// observer of the `UserDefaults` object that it calls on the writing thread during the write.
    ///
    /// - Parameters:
    ///   - change: What to change.
    ///   - root: The root key.
    /// - Returns: The set after the change.
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
                // Under the suite's lock, with the layer files read again: a key locked while this
                // write waited for the lock is refused (see SetStorage.layerFiles(root:)).
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

    /// The keys of the suite whose values are dictionaries, sorted: the suite's own keys
    /// (through `UserDefaults`, its persistent domain), without registered or global values.
    ///
    /// - Returns: The root keys present in the suite.
    public func roots() throws -> [String] {
        try allObjects().filter { PlistValue.stringKeyedDictionary($0.value) != nil }.map(\.key).sorted()
    }

    // MARK: - One key of the suite

    /// The object stored under the suite key `key`.
    func object(_ key: String) throws -> Any? {
        if let file = handle.file {
            return try Self.object(suiteFile: file, key: key, layers: LayerReader(files: handle.layerFiles))
        }
        return handle.withDefaults { defaults in
            _ = defaults.synchronize()
            return handle.persistentObject(forKey: key, in: defaults)
        }
    }

    /// Replaces the object under the suite key `key` with what `change` makes of it, durably;
    /// ``KeyEdit/leave`` writes nothing.
    ///
    /// - Returns: The version of the suite file written (see ``SetStorage/currentVersion(root:)``), or `nil`.
    @discardableResult
    func update(_ key: String, _ change: (Any?) throws -> KeyEdit, reading: (UInt64?) -> Void = { _ in }) throws -> UInt64? {
        if let file = handle.file {
            // The UserDefaults object re-reads the file, still under the lock: should plain code in
            // this process have unsaved keys, the save that follows cannot race another writer.
            return try Self.update(
                suiteFile: file, key: key, layers: LayerReader(files: handle.layerFiles), change, reading: reading, whileLocked: handle.refresh)
        }
        return try handle.withWrite(root: key) { () -> UInt64? in
            let previous = handle.withDefaults { defaults in
                _ = defaults.synchronize()
                return handle.persistentObject(forKey: key, in: defaults)
            }
            // Outside the lock on the object, so readers (the watcher's reload of another set
            // among them) never wait for `change`, which may itself wait for such a reader.
            guard case .set(let updated) = try change(previous) else { return nil }
            try handle.withDefaults { defaults in
                if let updated { defaults.set(updated, forKey: key) } else { defaults.removeObject(forKey: key) }
                do {
                    try handle.synchronize(defaults, root: key)
                } catch {
                    if let previous { defaults.set(previous, forKey: key) } else { defaults.removeObject(forKey: key) }
                    throw error
                }
            }
            return nil
        }
    }

    private func allObjects() throws -> [String: Any] {
        if let file = handle.file {
            return try PlistFile.read(file) ?? [:]
        }
        return handle.withDefaults { defaults in
            _ = defaults.synchronize()
            return handle.persistentDomain(in: defaults)
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

    func writeScope(root: String) -> String? {
        handle.writeScope
    }

    func currentVersion(root: String) -> UInt64? {
        handle.file.flatMap(PlistFile.digest(of:))
    }

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
        /// The library reads and replaces the suite's plist file itself, under a `flock`
        /// (Linux, where `UserDefaults` rewrites the file in place without a lock).
        case suiteFile
        /// Through the `UserDefaults` object: `set`, `synchronize()`, `persistentDomain`
        /// (Apple platforms, where `cfprefsd` owns the files).
        case userDefaults

        /// The road this platform takes (see ``PlatformChoices``): both roads compile and run
        /// everywhere, so the Apple one is tested on Linux too.
        static var platformDefault: Backend {
            PlatformChoices.current.suitesGoThroughUserDefaults ? .userDefaults : .suiteFile
        }
    }

    #if DEBUG
        /// The store for `suiteName` (`nil`: `.standard`) that goes through `UserDefaults` —
        /// `set`, `synchronize()`, `persistentDomain(forName:)` — as it does on Apple platforms,
        /// whatever the platform.
        ///
        /// For tests of the Apple code path on Linux, in debug builds only; not part of the
        /// supported API. On Linux, `UserDefaults` rewrites the suite file in place without a
        /// lock, so this road is not crash-safe or multi-process-safe there.
        ///
        /// - Parameter suiteName: The suite; `nil` or `""` selects `.standard`.
        /// - Returns: The store, or `nil` when the name is refused.
        package static func throughUserDefaults(suiteName: String?) -> UserDefaultsStore? {
            DefaultsHandle.forSuite(suiteName, backend: .userDefaults).map(UserDefaultsStore.init(handle:))
        }
    #endif
}

// MARK: - Shared handles

/// One `UserDefaults` object, the lock that serialises every use of it in this process, and the
/// lock that serialises its writes.
final class DefaultsHandle: @unchecked Sendable {  // `object` is used only while holding `lock`
    /// The `UserDefaults` object. On the suite-file road (Linux) it is made when first asked
    /// for: the library reads and writes the suite's file itself, so a program that uses the
    /// suite only through the library never needs one, and making one parses the process's
    /// arguments into its argument domain (about a third of a one-shot `prefs-harness get`).
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
    /// On Linux, the suite's plist file, which the library reads and replaces itself (under a
    /// `flock`, atomically); `nil` where `UserDefaults` is used as it is.
    let file: URL?
    /// Serialises every use of `defaults`, one short step at a time (never held while a write's
    /// body runs); recursive, for code `UserDefaults` calls back on the same thread.
    private let lock = NSRecursiveLock()
    /// Serialises the writes of this object (``withWrite``), held for the whole read-modify-write.
    private let writeLock = NSLock()
    /// What ``WriteScope`` knows a write of the suite by: the suite file's lock where the library
    /// writes the file (``FileLock/scope(ofFile:)``), else this object's write lock.
    let writeScope: String
    /// The name of the suite's persistent domain, or `nil` when it cannot be known (an object
    /// passed to ``UserDefaultsStore/init(userDefaults:)`` on Apple platforms, other than
    /// `.standard`).
    let domainName: String?
    /// Whether the object is `.standard`, whose domain is the application's.
    private let isStandard: Bool
    /// The file to watch for changes of the suite: the file the library writes (Linux), or on
    /// Linux the file `UserDefaults` writes for the suite on the other road too; `nil` on Apple
    /// platforms, where `cfprefsd` owns the files.
    let watchedFile: URL?
    /// The system layer files of the suite (Linux), the most important first; none on Apple
    /// platforms.
    var layerFiles: [LayerFile] {
        guard let watchedName else { return [] }
        return LayerPaths.files(relativeFolder: "", name: watchedName, holdsRoots: true)
    }
    /// The name of ``watchedFile`` (every write looks for the layer files it names).
    private let watchedName: String?

    /// - Parameter defaults: The object; `nil` (the suite-file road only) to make it when first
    ///   asked for.
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

    /// Lets the `UserDefaults` objects of this process see a file the library replaced: with
    /// nothing unsaved, `synchronize()` only drops the cached copy (which every object of the
    /// suite shares); with keys plain code set and has not saved, it saves them over the file
    /// just written (so call it under the suite's lock). Makes the object if need be: plain code
    /// may hold another object of the suite.
    func refresh() {
        withDefaults { _ = $0.synchronize() }
    }

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

    /// The shared handle for a suite name (`nil` or `""`: `.standard`), or `nil` when
    /// `UserDefaults(suiteName:)` refuses the name.
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

    /// Runs `body` with the `UserDefaults` object, holding its lock (not the write lock: a read
    /// waits for one step of a write at most, never for a write's body).
    func withDefaults<Result>(_ body: (UserDefaults) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(defaults)
    }

    /// Runs the write `body` of the suite key `root` holding the write lock, as
    /// ``FileLock/withLock(for:label:_:)`` does for a file: one write of this object at a time in
    /// this process, and a write this thread starts inside `body` (an `update` body, a migration
    /// step) is refused rather than left to wait for itself. `body` uses the object through
    /// ``withDefaults(_:)``.
    ///
    /// A write waits at most ``PersistentPrefs/lockTimeout`` for another thread's write, as a
    /// write of a file waits for its lock.
    ///
    /// - Parameter limit: How long to wait for another thread's write (any length, infinity
    ///   included); ``PersistentPrefs/lockTimeout`` when `nil`.
    /// - Throws: ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` naming the root
    ///   key of the write this thread is inside; ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)``
    ///   naming the suite and this process when another thread's write held the lock for longer;
    ///   or what `body` throws.
    func withWrite<Result>(root: String, waitingAtMost limit: TimeInterval? = nil, _ body: () throws -> Result) throws -> Result {
        try WriteScope.check(writeScope)
        let limit = limit ?? FileLock.timeout.withLock { $0 }
        // Recorded from before the lock is taken until after it is let go (see ``WriteScope``).
        return try WriteScope.holding(writeScope, label: root) {
            let started = ProcessInfo.processInfo.systemUptime
            var waited: TimeInterval = 0
            // At most an hour a try: Foundation turns a deadline into nanoseconds, which a far one
            // (an infinite timeout, say) overflows.
            while !writeLock.lock(before: Date(timeIntervalSinceNow: min(3600, limit - waited))) {
                waited = ProcessInfo.processInfo.systemUptime - started
                if waited >= limit { throw PersistentPrefs.PrefsError.lockTimeout(path: displayName, holderPID: getpid(), waited: waited) }
            }
            defer { writeLock.unlock() }
            return try body()
        }
    }

    /// The suite's persistent domain: what it stores, without the values `UserDefaults` layers
    /// around it (command-line arguments, registered defaults, the global domain, managed
    /// values). An object whose domain cannot be known is read through `dictionaryRepresentation()`
    /// less every value it shows from the argument domain, the registered defaults or the global
    /// domain: a key the suite stores with the very value one of those gives is taken as theirs
    /// (a registered value still reads through its layer; a write then leaves it to them).
    func persistentDomain(in defaults: UserDefaults) -> [String: Any] {
        #if canImport(Darwin)
            // `.standard` writes the application's domain as CFPreferences names it (a bundle's
            // identifier, or what an executable without one goes by): read it the same way,
            // without guessing its name.
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

    /// The object under `key` in the suite's persistent domain (see ``persistentDomain(in:)``).
    func persistentObject(forKey key: String, in defaults: UserDefaults) -> Any? {
        persistentDomain(in: defaults)[key]
    }

    /// The suite as errors name it where there is no file: `UserDefaults suite "NAME"`.
    var displayName: String {
        if let suiteName { return "UserDefaults suite \"\(suiteName)\"" }
        return isStandard ? "UserDefaults suite \"standard\"" : "a UserDefaults object whose suite Foundation does not name"
    }

    func synchronize(_ defaults: UserDefaults, root: String) throws {
        guard defaults.synchronize() else {
            throw PersistentPrefs.PrefsError.ioError(
                path: displayName,
                reason: "synchronize() failed while writing the root key \"\(root)\""
            )
        }
    }
}

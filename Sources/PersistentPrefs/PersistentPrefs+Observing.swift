import Foundation

/// A change of a preference set: which keys' stored values changed.
///
/// Delivered to ``PersistentPrefs/observeChanges(to:_:)`` handlers and by
/// ``PersistentPrefs/changes(to:)``, whoever made the change: this instance, another instance,
/// another process, plain `UserDefaults` code, or `prefs-harness`.
public struct PrefsChangeEvent: Sendable, Hashable, CustomStringConvertible {
    /// The root key of the set that changed (for ``UserDefaultsContainer`` and
    /// ``SettingsStorage``, the `UserDefaults` key).
    public let root: String
    /// Exactly the keys whose stored value changed: set, changed or removed. Never empty; a write
    /// that stores an equal value is no change and sends no event.
    public let keys: Set<String>
    /// The ``PrefsStore/identifier`` of the store holding the set.
    public let storeIdentifier: String

    /// An event (for tests of code that handles events).
    ///
    /// - Parameters:
    ///   - root: The root key of the set.
    ///   - keys: The keys that changed.
    ///   - storeIdentifier: The store's identifier.
    public init(root: String, keys: Set<String>, storeIdentifier: String = "") {
        self.root = root
        self.keys = keys
        self.storeIdentifier = storeIdentifier
    }

    /// `root: key, key` with the keys sorted.
    public var description: String { "\(root): \(keys.sorted().joined(separator: ", "))" }
}

/// A running observation of a preference set; observing stops at ``cancel()`` or when this
/// object is deallocated. Keep it as long as you want to be told of changes.
///
/// ```swift
/// let observation = prefs.observeChanges(to: ["Volume"]) { event in
///     print("changed:", event.keys)
/// }
/// // later
/// observation.cancel()
/// ```
public final class PrefsObservation: Sendable {
    private let stop: Locked<(@Sendable () -> Void)?>
    private let currentProblem: (@Sendable () -> PersistentPrefs.PrefsError?)?

    /// An observation that ends with `stop` (run once), whose ``problem`` `problem` tells.
    init(_ stop: (@Sendable () -> Void)?, problem: (@Sendable () -> PersistentPrefs.PrefsError?)? = nil) {
        self.stop = Locked(stop)
        currentProblem = problem
    }

    /// Why changes made by other programs reach this observation late, or `nil` while they are
    /// reported as they happen.
    ///
    /// ``PersistentPrefs/PrefsError/watchDegraded(path:reason:)`` while the operating system
    /// cannot watch the store's file (on Linux: no `inotify` instance or watch left for this
    /// user): the library then looks at the file a few times a second, so the handler is still
    /// called, up to about half a second late, and it tries the operating system again every few
    /// seconds. Changes made through the library in this process are always reported at once.
    ///
    /// ```swift
    /// let observation = prefs.observeChanges { _ in refresh() }
    /// if let problem = observation.problem { log.warning("\(problem)") }
    /// ```
    public var problem: PersistentPrefs.PrefsError? {
        isCancelled ? nil : currentProblem?()
    }

    /// Stops observing. No call of the handler starts after this returns, except one another
    /// thread was already starting. Safe to call more than once, and from the handler itself.
    public func cancel() {
        stop.withLock { $0.take() }?()
    }

    /// Whether observing has stopped (cancelled, or it could not start: see the instance's
    /// ``PersistentPrefs/lastError``).
    public var isCancelled: Bool { stop.withLock { $0 == nil } }

    deinit {
        cancel()
    }

    /// The events an observation started by `observe` delivers, as an async sequence that
    /// cancels the observation when the iterating task is cancelled.
    static func stream(
        _ observe: (@escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation
    ) -> AsyncStream<PrefsChangeEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PrefsChangeEvent.self)
        let observation = observe { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        if observation.isCancelled { continuation.finish() }
        return stream
    }
}

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
        record {
            let domain = try observedDomain()
            let id = domain.feed.subscribe(keys: Set(keys), handler)
            observation = PrefsObservation(
                {
                    domain.feed.unsubscribe(id)
                    PrefsDomain.release(domain)
                }, problem: { domain.watchProblem() })
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

    /// This instance's set, loaded, and counted as used until the observation ends.
    private func observedDomain() throws -> PrefsDomain {
        while true {
            let domain = try resolvedDomain()
            _ = try domain.values()  // loaded, so that changes can be told from the first read
            if PrefsDomain.retain(domain) { return domain }
            // The instance moved to another set meanwhile: observe that one.
        }
    }
}

// MARK: - Every set of a store

/// A store that can tell when any of its sets may have changed (its suite file, its folder).
protocol StoreWatchable: PrefsStore {
    /// Starts calling `onChange` whenever some set may have changed; `nil` when it cannot watch.
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?
    /// Why changes reach the store's watch late, or `nil`.
    var allSetsWatchProblem: PersistentPrefs.PrefsError? { get }
}

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
    ///   - store: The store to watch: ``UserDefaultsStore`` (a suite's file, on Linux) or
    ///     ``PlistFileStore``; any other store gives an observation that is already cancelled.
    ///   - handler: Called with each change.
    /// - Returns: The observation; observing stops when it is cancelled or deallocated. Its
    ///   ``PrefsObservation/problem`` tells when the operating system cannot watch the store.
    public static func observeStore(_ store: any PrefsStore, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation {
        guard let watchable = store as? any StoreWatchable else { return PrefsObservation(nil) }
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

extension UserDefaultsStore: StoreWatchable {
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        handle.watchedFile.map { ChangeWatcher.shared.watching($0, onChange) }
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        handle.watchedFile.flatMap(ChangeWatcher.shared.problem(for:))
    }
}

extension PlistFileStore: StoreWatchable {
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        ChangeWatcher.shared.watching(URL(fileURLWithPath: directory.path + "/"), onChange)
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        ChangeWatcher.shared.problem(for: URL(fileURLWithPath: directory.path + "/"))
    }
}

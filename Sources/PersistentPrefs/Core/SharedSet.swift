import Foundation

/// The one in-memory copy of a set, shared by every instance of the same store and root key in this process: one
/// immutable ``State`` behind one lock, ``cell``. Readers take it whole; writers build the next state outside the lock
/// and install it. Writes and reloads take turns via ``turn``, taken before the lock, so readers never wait for disk
/// work. Every state change posts the changed keys to ``feed`` under the lock, delivered once it is released. Writing
/// is in `SharedSet+Writing.swift`, staging in `SharedSet+Staging.swift`, the registry in `SharedSetRegistry.swift`.
final class SharedSet: @unchecked Sendable {  // the mutable state is in `cell`, under its lock; the rest is immutable
    let store: any SetStorage
    let root: String
    /// Observers of this set, and the Observation framework's registrar.
    let feed: ChangeFeed
    /// Writes and reloads of this set, one at a time (see ``Turn``); taken before ``cell``'s lock, never inside it.
    let turn = Turn()
    /// The system layer files of this set.
    let layerReader: LayerReader

    /// A set as readers see it: immutable, replaced whole.
    struct State {
        /// The user's values as stored (schema version stamp taken out), staged changes over them.
        let user: [String: Any]
        /// The system layers beneath the user's values, as read for this state.
        let layers: LayerStack
        /// What readers see: the user's values over the layers.
        let effective: [String: Any]
        /// The store file's version it was read from or written to (``SetStorage/read(root:)``); `nil`: unknown.
        let version: UInt64?
        /// The stored schema version (see ``PersistentPrefs/schemaVersion``); 0 when it has none.
        let schema: Int

        init(user: [String: Any], layers: LayerStack, version: UInt64?, schema: Int) {
            self.user = user
            self.layers = layers
            effective = layers.effective(user)
            self.version = version
            self.schema = schema
        }

        /// `stored` (normalised, its schema version stamp still in it) under `layers`.
        static func stored(_ stored: [String: Any], version: UInt64?, layers: LayerStack) -> State {
            var values = stored
            let schema = values[PersistentPrefs.schemaVersionKey] == nil ? 0 : SchemaPlan.take(from: &values)
            return State(user: values, layers: layers, version: version, schema: schema)
        }

        /// This state with `user` as the user's values.
        func holding(_ user: [String: Any]) -> State {
            State(user: user, layers: layers, version: version, schema: schema)
        }
    }

    /// Everything about the set that changes, under one lock.
    struct Cell {
        /// The set as readers see it; `nil` until it has been loaded successfully.
        var state: State? { didSet { publishReadStamp() } }
        /// The `as?` answers for ``state``'s numbers and strings, worked out on a key's first read, kept until it changes.
        var numbers: [String: NumberCasts] = [:]
        var strings: [String: String] = [:]
        /// Bumped when ``state`` is replaced or dropped, or an outside change finds it empty (see ``withLoaded(_:)``).
        var replacements = 0
        /// Whether the store reports damage for this set (see ``damageNotice()``).
        var damaged = false { didSet { publishReadStamp() } }
        /// Whether the watch has yet to start (see ``watchOnRead()``).
        var unwatched: Bool { didSet { publishReadStamp() } }
        /// The shared set's ``SharedSet/readStamp``, set on every change of what a read may be served.
        let readStamp: SharedInt
        /// How the store tells this set of outside changes.
        var watch = WatchState.idle
        /// Staged changes of a coalescing set, shown by every state installed (`SharedSet+Staging.swift`).
        var staging = Staging()
        /// The classes whose schema this set's writes have published (see ``SetStorage/schemaFile(root:)``).
        var publishedBy: Set<ObjectIdentifier> = []

        /// Whether a read must take the way that reports damage and starts the watch, not serve the state as it is.
        var needsAttention: Bool { damaged || unwatched }

        /// Gives ``readStamp`` a new number, or 0 when reads cannot be served from the state as it is.
        private func publishReadStamp() {
            readStamp.store(state != nil && !needsAttention ? SharedSet.readStamps.next() : 0)
        }

        /// Replaces the state, keeping the answers for keys outside `changed` (`nil`: none kept).
        mutating func install(_ next: State, changed: Set<String>?) {
            replacements += 1
            state = next
            if let changed {
                // Only answers someone asked for are there (often none): no look-up per changed key then.
                if !numbers.isEmpty { for key in changed { numbers[key] = nil } }
                if !strings.isEmpty { for key in changed { strings[key] = nil } }
            } else {
                numbers = [:]
                strings = [:]
            }
        }

        /// Drops the state (its readers then load the set, or report why it cannot be read).
        mutating func uninstall() {
            replacements += 1
            state = nil
            numbers = [:]
            strings = [:]
        }
    }

    /// `.idle` before ``startWatching()``, then the registration to end (`nil`: the store cannot watch), `.stopped` after.
    enum WatchState {
        case idle
        case watching((@Sendable () -> Void)?)
        case stopped
    }

    let cell: Locked<Cell>

    /// Stands for what reads are served now: new (process-wide) with every state installed or dropped and every
    /// change of ``Cell/needsAttention``, 0 while reads cannot be served from the state. Set under ``cell``'s lock,
    /// read without it: a typed read whose remembered answer carries it (see ``PrefKey``) needs nothing else.
    let readStamp: SharedInt

    /// Where the numbers of ``readStamp`` come from, for every set of the process.
    static let readStamps = SharedInt()

    init(store: any PrefsStore, root: String) {
        let storage = SetStorageAdapter.adapting(store)
        self.store = storage
        self.root = root
        feed = ChangeFeed(root: root, storeIdentifier: storage.identifier)
        layerReader = LayerReader(files: storage.layerFiles(root: root))
        let stamp = SharedInt()
        readStamp = stamp
        cell = Locked(Cell(unwatched: storage.canWatch || !layerReader.files.isEmpty, readStamp: stamp), level: .cell)
    }

    /// The user's whole set (without the system layers: what writes replace).
    func values() throws -> [String: Any] {
        try withLoaded { $0.user }
    }

    /// The set as readers see it: the user's values over the system layers.
    func effectiveValues() throws -> [String: Any] {
        try withLoaded { $0.effective }
    }

    /// The system layers beneath the set, as last read.
    func layers() throws -> LayerStack {
        try withLoaded { $0.layers }
    }

    /// One value of the set.
    func value(forKey key: String) throws -> Any? {
        try withLoaded { $0.effective[key] }
    }

    /// The `as?` answers for one value; `nil` when it is absent or not a number.
    func number(forKey key: String) throws -> NumberCasts? {
        if let found = loadedNumber(forKey: key, attended: true) { return found }
        return try withLoaded { $0.effective[key].flatMap(NumberCasts.init) }
    }

    /// One value as a `String` (`nil` when it is absent or not a string).
    func string(forKey key: String) throws -> String? {
        if let found = loadedString(forKey: key, attended: true) { return found }
        return try withLoaded { $0.effective[key] as? String }
    }

    /// One value of the loaded set; `.none` when it is not loaded or ``Cell/needsAttention``.
    func loadedValue(forKey key: String) -> Any?? {
        cell.withLock { cell in
            guard let state = cell.state, !cell.needsAttention else { return .none }
            return state.effective[key]
        }
    }

    /// The `as?` answers for one value of the loaded set (kept until it changes); `.none` when it is not loaded or
    /// needs attention (unless `attended`: the caller dealt with it), `.some(nil)` when absent or not a number.
    func loadedNumber(forKey key: String, attended: Bool = false) -> NumberCasts?? {
        cell.withLock { cell -> NumberCasts?? in
            guard let state = cell.state, attended || !cell.needsAttention else { return .none }
            if let known = cell.numbers[key] { return known }
            guard let value = state.effective[key], let answer = NumberCasts(value) else { return .some(nil) }
            cell.numbers[key] = answer
            return answer
        }
    }

    /// ``loadedNumber(forKey:attended:)`` for a `String` value.
    func loadedString(forKey key: String, attended: Bool = false) -> String?? {
        cell.withLock { cell -> String?? in
            guard let state = cell.state, attended || !cell.needsAttention else { return .none }
            if let known = cell.strings[key] { return known }
            guard let answer = state.effective[key] as? String else { return .some(nil) }
            cell.strings[key] = answer
            return answer
        }
    }

    /// The schema version the set is stored at (0 when it has none).
    func schemaVersion() throws -> Int {
        try withLoaded { $0.schema }
    }

    /// The damage every reader of this set reports (see ``DamageNote``), or `nil`. While there is some, the store is
    /// asked on each call, so a write to another set of the same file ends the report here too.
    func damageNotice() -> PersistentPrefs.PrefsError? {
        guard cell.withLock({ $0.damaged }) else { return nil }
        let notice = store.damageNotice(root: root)
        if notice == nil { cell.withLock { $0.damaged = false } }
        return notice
    }

    /// ``startWatching()`` for a read of a set not yet watched (the Observation framework may be tracking it).
    func watchOnRead() {
        guard cell.withLock({ $0.unwatched }) else { return }
        startWatching()
    }

    // MARK: - Loading

    /// Runs `body` on the state under the lock, loading the set first when needed. The store is read outside the
    /// lock, so no lock it takes can deadlock with readers; the first set installed is the one shared, and one read
    /// while the state changed is read again, so a newer set is never replaced by an older one.
    func withLoaded<Result>(_ body: (State) throws -> Result) throws -> Result {
        try withLoadedCell { try body($0.state!) }
    }

    /// ``withLoaded(_:)``, giving `body` the whole cell (its state never `nil`), so it can install a new state.
    func withLoadedCell<Result>(_ body: (inout Cell) throws -> Result) throws -> Result {
        var fresh: (state: State, since: Int)?
        var discarded = 0
        while true {
            var since = 0
            // `nil`: not loaded (a `Result` that is itself optional comes back wrapped).
            let done = try cell.withLock { cell -> Result? in
                if cell.state == nil, let loaded = fresh {
                    // Unchanged since read, or read often enough: a set that keeps changing is installed as last read.
                    if loaded.since == cell.replacements || discarded >= 8 { cell.install(Self.staged(loaded.state, cell.staging), changed: nil) }
                    discarded += 1
                }
                fresh = nil
                guard cell.state != nil else {
                    since = cell.replacements
                    return nil
                }
                return try body(&cell)
            }
            if let done { return done }
            fresh = (try fetched(), since)
        }
    }

    /// Whether the set is loaded; when not, notes an outside change so a first load in progress reads again.
    func isLoaded() -> Bool {
        cell.withLock { cell in
            if cell.state == nil { cell.replacements += 1 }
            return cell.state != nil
        }
    }

    /// The set as the store holds it now, normalised, with its damage flag updated.
    func fetched() throws -> State {
        let read: StoreRead
        do {
            read = try store.read(root: root)
        } catch {
            throw SharedSet.mapped(error)
        }
        var values: [String: Any] = [:]
        if let raw = read.set {
            guard case .success(let normalized) = PlistValue.normalizedSet(raw, for: .loading) else {
                throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
            }
            values = normalized
        }
        let damaged = store.damageNotice(root: root) != nil
        cell.withLock { $0.damaged = damaged }
        return State.stored(values, version: read.version, layers: store.layerStack(root: root))
    }

    static func mapped(_ error: any Error) -> PersistentPrefs.PrefsError {
        (error as? PersistentPrefs.PrefsError) ?? .unknownError(error: error)
    }
}

import Foundation

/// The one in-memory copy of a set, shared by every instance that uses the same store and
/// root key in this process.
///
/// A set's state is one immutable value, ``State``: the user's values, the system layers, the
/// effective values readers see, the version of the file it came from and its schema version.
/// It lives behind the shared set's one lock, with what belongs to it (the `as?` answers readers
/// worked out for its values, its staged changes, its watch): readers take the state whole, or
/// one answer from it, holding the lock only for that; writers build the next state outside the
/// lock and install it whole. There is no second lock to order against it.
///
/// Writes and reloads take turns under ``turn`` (see `SharedSet+Writing.swift`): the store
/// applies the change under its own lock, reports the set as written, its version and the keys
/// that changed, and the next state is installed. A failed write changes nothing. Readers never
/// wait for a write's disk work, and code run inside a write (an ``PersistentPrefs/update(_:)``
/// body) can still read the set.
///
/// Every change of the state — a write, a reload, another process's write, a staged change —
/// goes the same way: the keys whose effective value changed are posted to ``feed`` under the
/// lock, and delivered to observers once it is released.
///
/// The watch starts when the set is first used (see ``acquire(store:root:)``), and then checks
/// the store once for what changed since the set was loaded; where
/// ``PersistentPrefs/watchesSets`` is `false` (a program that writes a set and exits), it starts
/// with the set's first observation instead.
///
/// This file holds the state and what readers see; the write protocol is in
/// `SharedSet+Writing.swift`, staged changes in `SharedSet+Staging.swift`, the registry of
/// shared sets in `SharedSetRegistry.swift`.
final class SharedSet: @unchecked Sendable {  // the mutable state is in `cell`, under its lock; the rest is immutable
    let store: any SetStorage
    let root: String
    /// Observers of this set, and the Observation framework's registrar.
    let feed: ChangeFeed
    /// Writes and reloads of this set, one at a time (see ``Turn``). A writer takes the turn
    /// first and the lock of ``cell`` inside it, never the other way round.
    let turn = Turn()
    /// The system layer files of this set.
    let layerReader: LayerReader

    /// A set as readers see it: immutable, replaced whole.
    struct State {
        /// The user's values: the set as the store holds it (its schema version stamp taken
        /// out), with the staged changes of a coalescing set over it. What writes replace.
        let user: [String: Any]
        /// The system layers beneath the user's values, as read for this state.
        let layers: LayerStack
        /// What readers see: the user's values over the layers.
        let effective: [String: Any]
        /// The version of the store's file the set was read from or written to (see
        /// ``SetStorage/read(root:)``); `nil`: unknown.
        let version: UInt64?
        /// The schema version the set is stored at (see ``PersistentPrefs/schemaVersion``); 0
        /// when it has none.
        let schema: Int

        init(user: [String: Any], layers: LayerStack, version: UInt64?, schema: Int) {
            self.user = user
            self.layers = layers
            effective = layers.effective(user)
            self.version = version
            self.schema = schema
        }

        /// The state of a set as the store holds it: `stored` (normalised, its schema version
        /// stamp still in it) under `layers`.
        static func stored(_ stored: [String: Any], version: UInt64?, layers: LayerStack) -> State {
            var values = stored
            let schema = values[PersistentPrefs.schemaVersionKey] == nil ? 0 : SchemaPlan.take(from: &values)
            return State(user: values, layers: layers, version: version, schema: schema)
        }

        /// This state with `user` as the user's values; layers, version and schema version stay.
        func holding(_ user: [String: Any]) -> State {
            State(user: user, layers: layers, version: version, schema: schema)
        }
    }

    /// Everything about the set that changes, under one lock.
    struct Cell {
        /// The set as readers see it; `nil` until it has been loaded successfully.
        var state: State? { didSet { publishReadStamp() } }
        /// The `as?` answers for the numbers of ``state`` (see ``NumberCasts``) and its strings,
        /// each worked out on the first read of its key by any instance and kept until the
        /// value changes.
        var numbers: [String: NumberCasts] = [:]
        var strings: [String: String] = [:]
        /// How many times ``state`` was replaced or dropped, or an outside change found it empty:
        /// a first load, made outside the lock, installs its set only when this has not moved
        /// meanwhile (see ``withLoaded(_:)``).
        var replacements = 0
        /// Whether the store reports damage for this set (see ``damageNotice()``).
        var damaged = false { didSet { publishReadStamp() } }
        /// Whether the watch has yet to start (see ``watchOnRead()``).
        var unwatched: Bool { didSet { publishReadStamp() } }
        /// The shared set's ``SharedSet/readStamp``, which this cell sets on every change of
        /// what a read may be served.
        let readStamp: SharedInt
        /// How the store tells this set of outside changes.
        var watch = WatchState.idle
        /// The changes of a coalescing set that readers see and the store does not hold yet (see
        /// `SharedSet+Staging.swift`). Every state installed shows them.
        var staging = Staging()
        /// The classes whose schema this set's writes have published (see
        /// ``SetStorage/schemaFile(root:)``): one look-up per write once done.
        var publishedBy: Set<ObjectIdentifier> = []

        /// Whether a read must take the way that reports damage and starts the watch when due,
        /// rather than serve the state as it is.
        var needsAttention: Bool { damaged || unwatched }

        /// Gives ``readStamp`` a number no state had before, or 0 when reads cannot be served
        /// from the state as it is (not loaded, or in need of attention).
        private func publishReadStamp() {
            readStamp.store(state != nil && !needsAttention ? SharedSet.readStamps.next() : 0)
        }

        /// Replaces the state; the answers worked out for keys outside `changed` are kept
        /// (`nil`: none is kept).
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

    /// How the store tells this set of outside changes: `.idle` before ``startWatching()``, then
    /// the registration to end (`nil` inside when the store cannot watch), `.stopped` after.
    enum WatchState {
        case idle
        case watching((@Sendable () -> Void)?)
        case stopped
    }

    let cell: Locked<Cell>

    /// A number that stands for what reads of this set are served now: it changes with every
    /// state installed or dropped and every change of ``Cell/needsAttention``, no two states of
    /// any set share one, and it is 0 while reads cannot be served from the state. Set under the
    /// lock of ``cell``, read without it: a typed read whose remembered answer carries the
    /// current stamp (see ``PrefKey``) needs nothing else of the set.
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

    /// The system layers of the set as they are now.
    func currentLayers() -> LayerStack {
        store.layerStack(root: root)
    }

    /// The system layers beneath the set, as last read.
    func layers() throws -> LayerStack {
        try withLoaded { $0.layers }
    }

    /// The system layers beneath the set as last read, without loading it (`nil`: not loaded).
    var loadedLayers: LayerStack? {
        cell.withLock { $0.state?.layers }
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

    /// One value of the loaded set; `.none` when the set is not loaded or a read must take the
    /// way that attends to it (see ``Cell/needsAttention``).
    func loadedValue(forKey key: String) -> Any?? {
        cell.withLock { cell in
            guard let state = cell.state, !cell.needsAttention else { return .none }
            return state.effective[key]
        }
    }

    /// The `as?` answers for one value of the loaded set, worked out on the first read since
    /// the value changed; `.none` when the set is not loaded or needs attention (unless
    /// `attended`: the caller has dealt with it), `.some(nil)` when the value is absent or not a
    /// number.
    func loadedNumber(forKey key: String, attended: Bool = false) -> NumberCasts?? {
        cell.withLock { cell -> NumberCasts?? in
            guard let state = cell.state, attended || !cell.needsAttention else { return .none }
            if let known = cell.numbers[key] { return known }
            guard let value = state.effective[key], let answer = NumberCasts(value) else { return .some(nil) }
            cell.numbers[key] = answer
            return answer
        }
    }

    /// One value as a `String` of the loaded set, worked out on the first read since the value
    /// changed; `.none` when the set is not loaded or needs attention (unless `attended`),
    /// `.some(nil)` when the value is absent or not a string.
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

    /// The damage every reader of this set reports (see ``DamageNote``), or `nil`.
    ///
    /// Free while there is none; while there is, the store is asked again on each call, so a
    /// write to another set of the same file ends the report here too.
    func damageNotice() -> PersistentPrefs.PrefsError? {
        guard cell.withLock({ $0.damaged }) else { return nil }
        let notice = store.damageNotice(root: root)
        if notice == nil { cell.withLock { $0.damaged = false } }
        return notice
    }

    /// Starts watching the set for outside changes, for a read of a set whose watch has not
    /// started (see ``startWatching()``): the Observation framework may be tracking the read.
    func watchOnRead() {
        guard cell.withLock({ $0.unwatched }) else { return }
        startWatching()
    }

    // MARK: - Loading

    /// Runs `body` on the state, under the lock, loading the set first when it is not loaded.
    ///
    /// The store is read outside the lock: its disk reads, retries and (for a store of the app's
    /// own) code that may take locks of its own or read other sets never run while readers of
    /// this set wait for the lock, so no lock the store takes can deadlock with it. Several first
    /// readers may each read the store; the first set installed is the one every reader shares,
    /// and a set read while the state changed (a write, a reload, an outside change reported
    /// meanwhile) is read again rather than installed, so a newer set is never replaced by an
    /// older one.
    func withLoaded<Result>(_ body: (State) throws -> Result) throws -> Result {
        try withLoadedCell { try body($0.state!) }
    }

    /// ``withLoaded(_:)``, giving `body` the whole cell (its state never `nil` there), so it can
    /// install a new state.
    func withLoadedCell<Result>(_ body: (inout Cell) throws -> Result) throws -> Result {
        var fresh: (state: State, since: Int)?
        var discarded = 0
        while true {
            var since = 0
            // `nil`: not loaded (a `Result` that is itself optional comes back wrapped).
            let done = try cell.withLock { cell -> Result? in
                if cell.state == nil, let loaded = fresh {
                    // Read while nothing changed, or read again often enough: a set that keeps
                    // changing is installed as last read, and its next change reloads it.
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

    /// Whether the set is loaded; when it is not, notes an outside change, so a first load
    /// already reading the store reads it again (see ``withLoaded(_:)``).
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
        return State.stored(values, version: read.version, layers: currentLayers())
    }

    static func mapped(_ error: any Error) -> PersistentPrefs.PrefsError {
        (error as? PersistentPrefs.PrefsError) ?? .unknownError(error: error)
    }
}

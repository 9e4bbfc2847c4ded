import Foundation

/// What the library recently wrote under each key of a suite file, kept in the suite's lock file
/// (``FileLock/Held/notes(in:)``), so a plain `UserDefaults` save that undid a library write is noticed and put right.
///
/// A plain save on Linux rewrites the whole file in place, with no lock, from a copy read earlier, reverting any library
/// write in between. A key whose value in the file is one the library replaced recently (its hash is in the key's
/// history) was reverted so: the library's next write to the suite puts its latest value back, and reads show the suite
/// as that write will leave it (``repaired(_:of:digest:)``), so no reader sees a value go back after a write returned.
/// A value the library never wrote there is someone else's deliberate change and is adopted.
///
/// Only writes of the last ``horizon`` count (all a stale save can undo); a removed or emptied suite is taken as it is
/// (a stale save never empties it). Plain code that writes back, byte for byte, a value the library replaced within the
/// horizon, or removes a key it created within it while other keys remain, is taken for a stale save.
///
/// The ledger is a journal: each write appends one ``Step`` per key it wrote; each process keeps its view, reading only
/// what others appended since. A damaged journal is replaced by an empty one; past ``compactionFloor`` and
/// ``compactionFactor`` times its size after its last rewrite, the next write rewrites it as its entries under a new
/// generation, restarting every process's view.
struct SuiteLedger {
    /// One key: the library's latest value (XML; `nil`: removed), its hash, replaced values' hashes (oldest first), write time.
    struct Entry: Equatable {
        var latest: Data?
        var latestHash: UInt64 = 0
        var history: [UInt64] = []
        var written: TimeInterval = 0
    }

    enum Step: Equatable {
        /// The library wrote `key` at `at`: the value hashing to `replaced` became `latest` (`nil`: removed).
        case wrote(key: String, at: TimeInterval, replaced: UInt64, latest: Data?, latestHash: UInt64)
        /// The value under `key` is someone else's, theirs to keep: nothing of the key is put back.
        case forget(key: String)
        /// The suite was removed, emptied or found damaged: nothing from before is put back.
        case forgetAll
        /// A whole entry, as a rewrite of the journal keeps it.
        case entry(key: String, Entry)
    }

    /// How long a write is remembered.
    static let horizon: TimeInterval = 120
    /// How many keys a rewrite of the journal keeps (the most recently written).
    static let capacity = 32
    /// Replaced values remembered per key: a stale save descheduled on a busy machine can put back one hundreds of writes old.
    static let historyLength = 512
    /// The journal is rewritten only past this size (small: a first write reads little; large: a quiet suite's rarely is).
    static let compactionFloor = 8 * 1024
    /// How many times its size after the last rewrite the journal grows before it is rewritten.
    static let compactionFactor = 2

    /// The entries, as the journal's steps left them (with ones past the horizon until a rewrite drops them).
    private(set) var entries: [String: Entry] = [:]
    /// The steps taken since the ledger was loaded, appended to the journal by ``save(to:)``.
    private(set) var staged: [Step] = []
    /// The journal as loaded: where this ledger's steps go, and what a failed write restores.
    private var journal: Journal?

    /// The entry of `key` when it is within the horizon, else `nil`.
    func current(_ key: String, now: TimeInterval = Date().timeIntervalSince1970) -> Entry? {
        entries[key].flatMap { now - $0.written < Self.horizon ? $0 : nil }
    }

    /// Takes `step`: applies it to ``entries`` and stages it for ``save(to:)``.
    private mutating func take(_ step: Step) {
        apply(step)
        staged.append(step)
    }

    /// The effect of one step: on the steps alone (never the time now), so every process agrees on a journal.
    private mutating func apply(_ step: Step) {
        switch step {
        case .wrote(let key, let at, let replaced, let latest, let latestHash):
            // Past the horizon an entry says nothing about a save in flight at `at`.
            var entry = entries[key].flatMap { at - $0.written < Self.horizon ? $0 : nil } ?? Entry()
            if replaced != latestHash {
                entry.history.append(replaced)
                entry.history.removeAll { $0 == latestHash }
                if entry.history.count > Self.historyLength { entry.history.removeFirst(entry.history.count - Self.historyLength) }
            }
            entry.latest = latest
            entry.latestHash = latestHash
            entry.written = at
            entries[key] = entry
        case .forget(let key):
            entries[key] = nil
        case .forgetAll:
            entries = [:]
        case .entry(let key, let entry):
            entries[key] = entry
        }
    }

    /// Puts the library's latest values back where a stale save reverted them; adopts anyone else's values.
    mutating func reconcile(_ suite: inout [String: Any]) {
        guard !suite.isEmpty else {
            if !entries.isEmpty { take(.forgetAll) }  // removed or emptied on purpose: nothing to put back
            return
        }
        let now = Date().timeIntervalSince1970
        for key in entries.keys.sorted() {
            guard let entry = current(key, now: now) else { continue }
            let found = Self.xml(suite[key])
            guard found != entry.latest else { continue }
            if entry.history.contains(Self.hash(found)) {
                if let latest = entry.latest {
                    guard let value = Self.value(latest) else { continue }  // a note that does not read back: the file's value stays
                    suite[key] = value
                } else {
                    suite[key] = nil
                }
            } else {
                take(.forget(key: key))  // someone else's value: theirs to keep
            }
        }
    }

    /// Records a write of `key`: `before` was replaced by `after`. `beforeIsLatest`: the file held the library's last
    /// write, so `before` is not hashed again; `afterXML`: ``xml(_:)`` of `after`, when known (``PlistXML/document(ranging:)``).
    mutating func record(_ key: String, before: Any?, after: Any?, afterXML: Data? = nil, beforeIsLatest: Bool) {
        let now = Date().timeIntervalSince1970
        let known = beforeIsLatest ? current(key, now: now) : nil
        let replaced = known?.latestHash ?? Self.hash(Self.xml(before))
        let latest = after == nil ? nil : (afterXML ?? Self.xml(after))
        take(.wrote(key: key, at: now, replaced: replaced, latest: latest, latestHash: Self.hash(latest)))
    }

    // MARK: - Values

    /// A stored value as XML (keys sorted: equal values compare equal); `nil` for none, or one the writer cannot write exactly.
    static func xml(_ value: Any?) -> Data? {
        value.flatMap { PlistXML.document(["v": $0]) }
    }

    /// The value that ``xml(_:)`` encoded.
    private static func value(_ xml: Data) -> Any? {
        guard case .success(let wrapped) = PlistFile.parse(xml) else { return nil }
        return wrapped["v"]
    }

    private static func hash(_ xml: Data?) -> UInt64 {
        xml.map { FNV1a.hash($0) } ?? 0
    }
}

// MARK: - The journal in the lock file

extension SuiteLedger {
    // The notes block holds a header (``magic``, the generation, the journal's length after its last rewrite), then
    // steps, each: its kind, the key's UTF-8 length and bytes, then per kind the time, the replaced hash, the latest hash,
    // the latest value's XML (length -1 for none) and (an entry) the history; all integers 8 bytes, little-endian.

    /// The first 8 bytes of a journal ("PPLEDGR1").
    private static let magic: Int64 = 0x3152_4744_454C_5050
    private static let headerSize = 24
    /// The notes a lock's holder reads with the record (``FileLock/Held/head(notes:)``): the journal's header.
    static let headNotes = headerSize

    /// Where a ledger's journal stood when it was loaded or last saved.
    private struct Journal {
        let identity: FileLock.FileIdentity
        let generation: Int64
        let length: Int
    }

    /// A process's view of one lock file's journal: the entries of its first `length` bytes.
    private struct View {
        let generation: Int64
        let length: Int
        let entries: [String: Entry]
    }

    /// Each lock file's journal as this process last read or wrote it, by the lock file's identity.
    private static let views = Locked<[FileLock.FileIdentity: View]>([:])

    /// Bytes of a journal read and written by this process.
    struct Traffic: Equatable {
        var read = 0
        var written = 0
        /// Of the bytes read, those replayed into entries (the rest: headers).
        var replayed = 0
    }

    #if DEBUG
        /// What each lock file's journal cost this process (debug builds, for the tests).
        static let traffic = Locked<[FileLock.FileIdentity: Traffic]>([:])
    #endif

    private static func count(_ identity: FileLock.FileIdentity, read: Int = 0, written: Int = 0, replayed: Int = 0) {
        #if DEBUG
            traffic.withLock { traffic in
                if traffic[identity] == nil, traffic.count >= 1024 { traffic.removeAll() }
                traffic[identity, default: Traffic()].read += read + replayed
                traffic[identity, default: Traffic()].written += written
                traffic[identity, default: Traffic()].replayed += replayed
            }
        #endif
    }

    /// Forgets this process's views of every journal, as a new process would (tests; the release-built fuzz target).
    static func forgetViews() {
        views.withLock { $0.removeAll() }
    }

    /// The ledger in a held lock's journal: this process's view of it brought up to date, else the whole journal;
    /// compacted first when it has grown enough (see ``SuiteLedger``). `head` is the lock file's head as the holder read
    /// it (with ``headNotes``), or `nil` to read it here. With `forgettingAll` (the suite was moved aside as damaged) a
    /// ``Step/forgetAll`` is staged, so it is kept only if the write is.
    static func load(_ lock: FileLock.Held, head: FileLock.Held.Head? = nil, forgettingAll: Bool = false) -> SuiteLedger {
        var ledger = SuiteLedger()
        let identity = lock.identity
        let head = head ?? lock.head(notes: headNotes)
        let length = head.notesLength
        count(identity, read: headerSize)
        if let (generation, rewritten) = Self.header(in: head, of: lock) {
            ledger.journal = Journal(identity: identity, generation: generation, length: length)
            let view = views.withLock { $0[identity] }
            if !ledger.replayTail(lock, after: view, identity: identity, generation: generation, length: length) {
                ledger.readAll(lock)
            }
            if length > max(compactionFloor, compactionFactor * rewritten) { ledger.rewrite(lock, identity: identity) }
        } else {
            ledger.rewrite(lock, identity: identity)  // none yet, another form, or damaged: an empty journal
        }
        ledger.remember()
        if forgettingAll { ledger.take(.forgetAll) }
        return ledger
    }

    /// ``entries``: this process's `view` of the journal with the steps appended since applied; `false` when
    /// there is no view, or it is of another generation, or the tail does not read as whole steps.
    private mutating func replayTail(
        _ lock: FileLock.Held, after view: View?, identity: FileLock.FileIdentity, generation: Int64, length: Int
    ) -> Bool {
        guard let view, view.generation == generation, view.length >= Self.headerSize,
            view.length <= length, let tail = lock.notes(in: view.length..<length), replay(tail, from: view.entries)
        else { return false }
        Self.count(identity, replayed: tail.count)
        return true
    }

    /// The generation and the length after the last rewrite in the journal's header (from `head`, else from `lock`), or
    /// `nil` (none, or damaged). The length is one a rewrite can have written, so arithmetic on it cannot overflow.
    private static func header(in head: FileLock.Held.Head, of lock: FileLock.Held) -> (Int64, Int)? {
        guard head.notesLength >= headerSize else { return nil }
        let start = head.notesStart.count >= headerSize ? head.notesStart.prefix(headerSize) : lock.notes(in: 0..<headerSize)
        guard let start else { return nil }
        var reader = Reader(start)
        guard reader.integer() == magic, let generation = reader.integer(), let rewritten = reader.integer(),
            rewritten >= Int64(headerSize), rewritten < Int64(FileLock.Held.notesLimit)
        else { return nil }
        return (generation, Int(rewritten))
    }

    /// Reads the whole journal into ``entries``; a damaged one is replaced by an empty one.
    private mutating func readAll(_ lock: FileLock.Held) {
        guard let journal else { return }
        if let body = lock.notes(in: Self.headerSize..<journal.length), replay(body, from: [:]) {
            Self.count(journal.identity, replayed: body.count)
        } else {
            entries = [:]
            rewrite(lock, identity: journal.identity)
        }
    }

    /// `suite`, the file's contents with `digest`, as the library's next write will leave it (``reconcile(_:)``), read
    /// without the lock; as it is when the file is as the library last left it, or the journal cannot be read.
    static func repaired(_ suite: [String: Any], of file: URL, digest: UInt64?) -> [String: Any] {
        guard !suite.isEmpty else { return suite }
        return FileLock.peek(for: file) { lock -> [String: Any] in
            let identity = lock.identity
            var head = lock.head(notes: headNotes)
            guard head.record.writtenDigest != digest else { return suite }
            // A journal caught while a writer rewrites it reads damaged: read again.
            for attempt in 0..<3 {
                if attempt > 0 { head = lock.head(notes: headNotes) }
                let length = head.notesLength
                guard let (generation, _) = Self.header(in: head, of: lock) else { continue }
                // This process's view brought up to date, else the whole journal. Never remembered: a journal read
                // without the lock may hold a try's steps that the writer replaces, at the same length, before it lets go.
                var ledger = SuiteLedger()
                let view = views.withLock { $0[identity] }
                if !ledger.replayTail(lock, after: view, identity: identity, generation: generation, length: length) {
                    guard let body = lock.notes(in: headerSize..<length), ledger.replay(body, from: [:]) else { continue }
                    count(identity, replayed: body.count)
                }
                var repaired = suite
                ledger.reconcile(&repaired)  // the steps it stages are never saved
                return repaired
            }
            return suite  // being rewritten throughout: no repair this time
        } ?? suite
    }

    /// Empties the journal of a held lock: nothing from before is put back.
    static func clear(_ lock: FileLock.Held) {
        var ledger = SuiteLedger()
        ledger.rewrite(lock, identity: lock.identity)
        ledger.remember()
    }

    /// Appends the staged steps to the journal.
    mutating func save(to lock: FileLock.Held) {
        guard !staged.isEmpty, let journal else { return }
        var bytes: [UInt8] = []
        for step in staged { Self.encode(step, into: &bytes) }
        lock.appendNotes(Data(bytes), at: journal.length)
        Self.count(journal.identity, written: bytes.count + 4)
        self.journal = Journal(identity: journal.identity, generation: journal.generation, length: journal.length + bytes.count)
        staged = []
        remember()
    }

    /// Puts the journal back as it was when this ledger was loaded (a write that failed leaves nothing to put
    /// back later). Call it on the ledger as loaded, before any steps of its own but a ``Step/forgetAll``.
    func restore(_ lock: FileLock.Held) {
        guard let journal else { return }
        lock.setNotesLength(journal.length)
        remember()
    }

    /// Notes the journal as this process's view when ``entries`` are the journal's (nothing staged), else forgets it.
    private func remember() {
        guard let journal else { return }
        let key = journal.identity
        let view = staged.isEmpty ? View(generation: journal.generation, length: journal.length, entries: entries) : nil
        Self.views.withLock { views in
            if views[key] == nil, views.count >= 64 { views.removeAll() }
            views[key] = view
        }
    }

    /// Replaces the journal with a new generation holding the entries (the most recent ``capacity`` within the horizon).
    private mutating func rewrite(_ lock: FileLock.Held, identity: FileLock.FileIdentity) {
        let now = Date().timeIntervalSince1970
        let kept = entries.filter { now - $0.value.written < Self.horizon }.sorted { $0.value.written > $1.value.written }.prefix(Self.capacity)
        entries = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        var body: [UInt8] = []
        for (key, entry) in kept.sorted(by: { $0.key < $1.key }) { Self.encode(.entry(key: key, entry), into: &body) }
        let generation = Int64.random(in: 1...Int64.max)
        var bytes: [UInt8] = []
        Self.append(Self.magic, to: &bytes)
        Self.append(generation, to: &bytes)
        Self.append(Int64(Self.headerSize + body.count), to: &bytes)
        bytes += body
        lock.storeNotes(Data(bytes))
        Self.count(identity, written: bytes.count + 4)
        journal = Journal(identity: identity, generation: generation, length: bytes.count)
    }

    // MARK: Encoding

    private static func append(_ value: Int64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func append(_ data: Data?, to bytes: inout [UInt8]) {
        if let data {
            append(Int64(data.count), to: &bytes)
            bytes.append(contentsOf: data)
        } else {
            append(-1, to: &bytes)
        }
    }

    private static func encode(_ step: Step, into bytes: inout [UInt8]) {
        func head(_ kind: Int64, _ key: String) {
            append(kind, to: &bytes)
            append(Int64(key.utf8.count), to: &bytes)
            bytes.append(contentsOf: key.utf8)
        }
        switch step {
        case .wrote(let key, let at, let replaced, let latest, let latestHash):
            head(1, key)
            append(Int64(bitPattern: at.bitPattern), to: &bytes)
            append(Int64(bitPattern: replaced), to: &bytes)
            append(Int64(bitPattern: latestHash), to: &bytes)
            append(latest, to: &bytes)
        case .forget(let key):
            head(2, key)
        case .forgetAll:
            head(3, "")
        case .entry(let key, let entry):
            head(4, key)
            append(Int64(bitPattern: entry.written.bitPattern), to: &bytes)
            append(Int64(bitPattern: entry.latestHash), to: &bytes)
            append(entry.latest, to: &bytes)
            append(Int64(entry.history.count), to: &bytes)
            for hash in entry.history { append(Int64(bitPattern: hash), to: &bytes) }
        }
    }

    /// ``entries``: `start` with the steps in `data` applied; `false` (entries unspecified) unless all are well-formed.
    private mutating func replay(_ data: Data, from start: [String: Entry]) -> Bool {
        entries = start
        var reader = Reader(data)
        while !reader.isAtEnd {
            guard let step = Self.step(from: &reader) else { return false }
            apply(step)
        }
        return true
    }

    /// The next step in `reader`, or `nil` when what follows is not a whole, well-formed step.
    private static func step(from reader: inout Reader) -> Step? {
        guard let kind = reader.integer(), let length = reader.integer(), let name = reader.run(count: length) else { return nil }
        let key = String(decoding: name, as: UTF8.self)
        switch kind {
        case 1:
            guard let at = reader.integer(), let replaced = reader.integer(), let latestHash = reader.integer(),
                let latest = reader.optionalRun()
            else { return nil }
            return .wrote(
                key: key, at: TimeInterval(bitPattern: UInt64(bitPattern: at)), replaced: UInt64(bitPattern: replaced), latest: latest,
                latestHash: UInt64(bitPattern: latestHash))
        case 2:
            return .forget(key: key)
        case 3:
            return .forgetAll
        case 4:
            guard let at = reader.integer(), let latestHash = reader.integer(), let latest = reader.optionalRun(),
                let count = reader.integer(), count >= 0, count <= historyLength
            else { return nil }
            var history: [UInt64] = []
            history.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let hash = reader.integer() else { return nil }
                history.append(UInt64(bitPattern: hash))
            }
            return .entry(
                key: key,
                Entry(latest: latest, latestHash: UInt64(bitPattern: latestHash), history: history, written: TimeInterval(bitPattern: UInt64(bitPattern: at))))
        default:
            return nil
        }
    }

    /// Reads the compact form, refusing anything out of bounds.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        init(_ data: Data) {
            bytes = Array(data)
        }

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func integer() -> Int64? {
            guard offset <= bytes.count - 8 else { return nil }
            var value: UInt64 = 0
            for index in (offset..<offset + 8).reversed() { value = value << 8 | UInt64(bytes[index]) }
            offset += 8
            return Int64(bitPattern: value)
        }

        /// A length-prefixed run of bytes that may be absent (length -1): `.some(nil)`.
        mutating func optionalRun() -> Data?? {
            guard let count = integer() else { return nil }
            if count == -1 { return .some(nil) }
            return run(count: count).map { Optional(Data($0)) }
        }

        /// The next `count` bytes, or `nil` when there are not so many.
        mutating func run(count: Int64) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= Int64(bytes.count - offset) else { return nil }
            let start = offset
            offset += Int(count)
            return bytes[start..<offset]
        }
    }
}

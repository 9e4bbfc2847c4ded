import Foundation

/// What the library recently wrote under each key of a suite file, kept in the suite's lock file
/// (``FileLock/Held/notes``), so that a plain `UserDefaults` save that undid a library write is
/// noticed and put right.
///
/// A plain save on Linux reads the whole file, then rewrites it in place from that copy, with no
/// lock; when a library write lands between its read and its write, the save puts back the
/// value the key had before. The ledger recognises that: a key whose value in the file is one
/// the library itself replaced recently (its hash is in the key's history) was reverted by a
/// stale save, and the library's latest value is put back by the library's next write to the
/// suite (reads never write: until then they show the file as it is). A value the library never
/// wrote there is a deliberate change by someone else and is adopted.
///
/// Only writes of the last ``horizon`` are kept (a stale save can only undo writes made while
/// it was between its read and its write), at most ``capacity`` keys. A suite that was removed
/// or emptied is taken as it is (a stale save keeps the saving program's own keys, so it never
/// empties the file). Plain code that deliberately writes back, byte for byte, a value the
/// library replaced within that time, or removes a key the library created within it while
/// other keys remain, is taken for a stale save.
struct SuiteLedger {
    /// One key: the library's latest value (as XML; `nil` for removed), the hashes of the values
    /// it replaced, oldest first, and when it last wrote the key.
    struct Entry: Equatable {
        var latest: Data?
        var history: [UInt64] = []
        var written: TimeInterval = 0
    }

    // Stored in a compact form of its own (parsing a property list on every write cost more
    // than the rest of the ledger): a count, then per key its UTF-8 name, the time written, the
    // latest value's XML (length -1 for none) and the history, all integers little-endian.

    /// How long a write is remembered.
    static let horizon: TimeInterval = 120
    /// How many keys are remembered (the most recently written).
    static let capacity = 32
    /// How many replaced values are remembered per key: a stale save can put back a value from
    /// hundreds of writes ago when its process is descheduled between its read and its write
    /// on a busy machine (16 remembered values lost writes that way under load); 8 bytes each.
    static let historyLength = 512

    private(set) var entries: [String: Entry] = [:]

    /// An empty ledger.
    init() {}

    /// The ledger in a held lock's notes (empty when there are none or they cannot be read).
    init(_ lock: FileLock.Held) {
        guard let notes = lock.notes else { return }
        var reader = Reader(bytes: [UInt8](notes))
        guard let count = reader.integer(), count >= 0, count <= Self.capacity else { return }
        var decoded: [String: Entry] = [:]
        for _ in 0..<count {
            guard let name = reader.run().map({ String(decoding: $0, as: UTF8.self) }),
                let written = reader.integer().map({ TimeInterval(bitPattern: UInt64(bitPattern: $0)) }),
                let latestLength = reader.integer(),
                let latest = latestLength < 0 ? .some(nil) : reader.run(count: latestLength).map({ Optional(Data($0)) }),
                let historyCount = reader.integer(), historyCount >= 0, historyCount <= Self.historyLength
            else { return }
            var history: [UInt64] = []
            history.reserveCapacity(Int(historyCount))
            for _ in 0..<historyCount {
                guard let hash = reader.integer() else { return }
                history.append(UInt64(bitPattern: hash))
            }
            // Past the horizon an entry says nothing about a save in flight now.
            if Date().timeIntervalSince1970 - written < Self.horizon {
                decoded[name] = Entry(latest: latest, history: history, written: written)
            }
        }
        entries = decoded
    }

    /// Writes the ledger to the lock's notes, forgetting what is past the horizon.
    func save(to lock: FileLock.Held) {
        let now = Date().timeIntervalSince1970
        let recent = entries.filter { now - $0.value.written < Self.horizon }.sorted { $0.value.written > $1.value.written }
            .prefix(Self.capacity)
        var bytes: [UInt8] = []
        func append(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(Int64(recent.count))
        for (key, entry) in recent {
            append(Int64(key.utf8.count))
            bytes.append(contentsOf: key.utf8)
            append(Int64(bitPattern: entry.written.bitPattern))
            if let latest = entry.latest {
                append(Int64(latest.count))
                bytes.append(contentsOf: latest)
            } else {
                append(-1)
            }
            append(Int64(entry.history.count))
            for hash in entry.history { append(Int64(bitPattern: hash)) }
        }
        lock.storeNotes(Data(bytes))
    }

    /// Reads the compact form, refusing anything out of bounds.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func integer() -> Int64? {
            guard offset <= bytes.count - 8 else { return nil }
            var value: UInt64 = 0
            for index in (offset..<offset + 8).reversed() { value = value << 8 | UInt64(bytes[index]) }
            offset += 8
            return Int64(bitPattern: value)
        }

        /// A length-prefixed run of bytes.
        mutating func run() -> ArraySlice<UInt8>? {
            integer().flatMap { run(count: $0) }
        }

        /// The next `count` bytes.
        mutating func run(count: Int64) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= Int64(bytes.count - offset) else { return nil }
            defer { offset += Int(count) }
            return bytes[offset..<offset + Int(count)]
        }
    }

    /// Puts the library's latest values back where a stale save reverted them, and adopts
    /// values someone else wrote on purpose.
    mutating func reconcile(_ suite: inout [String: Any]) {
        guard !suite.isEmpty else {
            entries = [:]  // removed or emptied on purpose: nothing to put back
            return
        }
        for (key, entry) in entries {
            let found = Self.xml(suite[key])
            guard found != entry.latest else { continue }
            if entry.history.contains(Self.hash(found)) {
                suite[key] = entry.latest.flatMap(Self.value)
            } else {
                entries[key] = nil  // someone else's value: theirs to keep
            }
        }
    }

    /// Records a write of `key`: `before` was replaced by `after`.
    ///
    /// - Parameter beforeIsLatest: Whether the file held what the library last wrote, so
    ///   `before` is the entry's latest value and need not be encoded again.
    ///   - afterXML: ``xml(_:)`` of `after` when the caller already has it (cut from the
    ///     suite's own document: see ``PlistXML/document(ranging:)``).
    mutating func record(_ key: String, before: Any?, after: Any?, afterXML: Data? = nil, beforeIsLatest: Bool) {
        var entry = entries[key]
        let old = beforeIsLatest && entry != nil ? entry!.latest : Self.xml(before)
        let new = after == nil ? nil : (afterXML ?? Self.xml(after))
        if entry == nil { entry = Entry() }
        if old != new {
            let newHash = Self.hash(new)  // once, not once per remembered value
            entry!.history.append(Self.hash(old))
            entry!.history.removeAll { $0 == newHash }
            if entry!.history.count > Self.historyLength { entry!.history.removeFirst(entry!.history.count - Self.historyLength) }
        }
        entry!.latest = new
        entry!.written = Date().timeIntervalSince1970
        entries[key] = entry
    }

    /// A stored value as XML (dictionary keys sorted), so equal values compare equal; `nil` for none.
    static func xml(_ value: Any?) -> Data? {
        value.flatMap { value in
            let wrapped: [String: Any] = ["v": value]
            return PlistXML.document(wrapped) ?? (try? PropertyListSerialization.data(fromPropertyList: wrapped, format: .xml, options: 0))
        }
    }

    /// The value that ``xml(_:)`` encoded.
    private static func value(_ xml: Data) -> Any? {
        (try? PropertyListSerialization.propertyList(from: xml, format: nil)).flatMap(PlistValue.stringKeyedDictionary)?["v"]
    }

    private static func hash(_ xml: Data?) -> UInt64 {
        xml.map { FNV1a.hash($0) } ?? 0
    }
}

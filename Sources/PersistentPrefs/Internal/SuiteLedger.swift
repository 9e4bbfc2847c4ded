import Foundation

/// What the library last wrote under each key of a suite file that programs using plain
/// `UserDefaults` also write, kept beside it as `<suite>.plist.ledger`.
///
/// A plain save on Linux reads the whole file, then rewrites it in place from that copy, with no
/// lock; when a library write lands between its read and its write, the save puts back the
/// value the key had before. The ledger recognises that: a key whose value in the file is one
/// the library itself replaced earlier (its hash is in the key's history) was reverted by a
/// stale save, and the library's latest value is put back at the next library access of the
/// suite (a write, or the load of that key). A value the library never wrote there is a
/// deliberate change by someone else and is adopted. (Plain code that deliberately writes back,
/// byte for byte, a value the library replaced is taken for a stale save.)
///
/// The ledger is started the first time the library sees another writer's change to the suite,
/// and kept from then on; it is written atomically but not synced, as a lost ledger only means
/// a revert goes unnoticed, never that a value is put back wrongly. It is read and written under
/// the suite's lock.
struct SuiteLedger {
    /// One key: the library's latest value (as XML; `nil` for removed) and the hashes of the
    /// values it replaced, oldest first.
    struct Entry: Equatable {
        var latest: Data?
        var history: [UInt64] = []
    }

    /// How many replaced values are remembered per key.
    static let historyLength = 16

    private(set) var entries: [String: Entry] = [:]

    /// The ledger file of a suite file.
    static func url(for file: URL) -> URL {
        URL(fileURLWithPath: file.path + ".ledger")
    }

    /// The ledger kept beside `file`, or `nil` when there is none (or it cannot be read).
    static func load(for file: URL) -> SuiteLedger? {
        guard let stored = (try? PlistFile.read(url(for: file), movingAside: false)) ?? nil else { return nil }
        var ledger = SuiteLedger()
        for (key, value) in stored {
            guard let fields = value as? [String: Any] else { continue }
            let history = (fields["history"] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.int64Value }
            ledger.entries[key] = Entry(latest: fields["latest"] as? Data, history: history.map { UInt64(bitPattern: $0) })
        }
        return ledger
    }

    /// Writes the ledger beside `file` (atomically; a failure only loses the hint).
    func save(for file: URL) {
        var stored: [String: Any] = [:]
        for (key, entry) in entries {
            var fields: [String: Any] = ["history": entry.history.map { NSNumber(value: Int64(bitPattern: $0)) }]
            if let latest = entry.latest { fields["latest"] = latest }
            stored[key] = fields
        }
        guard let data = try? PropertyListSerialization.data(fromPropertyList: stored, format: .binary, options: 0) else { return }
        try? data.write(to: Self.url(for: file), options: .atomic)
    }

    /// Whether `value`, found under `key`, is a value the library replaced (a stale save put it back).
    func isReverted(_ key: String, _ value: Any?) -> Bool {
        guard let entry = entries[key] else { return false }
        let found = Self.xml(value)
        return found != entry.latest && entry.history.contains(Self.hash(found))
    }

    /// Puts the library's latest values back where a stale save reverted them, and adopts
    /// values someone else wrote on purpose.
    mutating func reconcile(_ suite: inout [String: Any]) {
        for (key, entry) in entries {
            let found = Self.xml(suite[key])
            guard found != entry.latest else { continue }
            if entry.history.contains(Self.hash(found)) {
                suite[key] = entry.latest.flatMap(Self.value)
            } else {
                record(key, before: entry.latest, after: found)
            }
        }
    }

    /// Records a write of `key`: `before` was replaced by `after`.
    mutating func record(_ key: String, before: Any?, after: Any?) {
        record(key, before: Self.xml(before), after: Self.xml(after))
    }

    private mutating func record(_ key: String, before: Data?, after: Data?) {
        var entry = entries[key] ?? Entry()
        if before != after {
            entry.history.append(Self.hash(before))
            entry.history.removeAll { $0 == Self.hash(after) }
            entry.history = Array(entry.history.suffix(Self.historyLength))
        }
        entry.latest = after
        entries[key] = entry
    }

    /// A stored value as XML (dictionary keys sorted), so equal values compare equal; `nil` for none.
    static func xml(_ value: Any?) -> Data? {
        value.flatMap { try? PropertyListSerialization.data(fromPropertyList: ["v": $0], format: .xml, options: 0) }
    }

    /// The value that ``xml(_:)`` encoded.
    private static func value(_ xml: Data) -> Any? {
        (try? PropertyListSerialization.propertyList(from: xml, format: nil)).flatMap(PlistValue.stringKeyedDictionary)?["v"]
    }

    private static func hash(_ xml: Data?) -> UInt64 {
        xml.map { FNV1a.hash($0) } ?? 0
    }
}

import Foundation

/// Changes collected to be written together later: by a running batch (as its instance's reads
/// see them), or staged on a coalescing set (see `SharedSet+Staging.swift`).
struct PendingChanges {
    /// One collected change of a key.
    enum Edit {
        case set(Any)
        case remove
    }

    /// The set the changes apply to when it is already known: the batch replaced the whole set
    /// (``PersistentPrefs/values``), or it runs on an update's locked copy. `nil`: the set as
    /// stored when the batch is written.
    var base: [String: Any]?
    /// Keys set or removed, the last change of each.
    var edits: [String: Edit] = [:]
    /// Defaults added with ``PersistentPrefs/addMissingValues(_:)``: stored only where the key
    /// holds nothing when the batch is written.
    var fills: [String: Any] = [:]
    /// Why the batch must not be written, naming the refused keys.
    var refusal: PersistentPrefs.PrefsError?
    /// ``PersistentPrefs/keys`` as a set, once the batch's first change was vetted.
    var allowedKeys: Set<String>?

    /// How many keys the batch is expected to change (the instance's last batch): once it has
    /// changed ``reserveAfter`` keys, its table of edits makes room for them all at once
    /// rather than growing (and rehashing every key) five or six times on the way to 1,000.
    let expectedCount: Int
    /// How many edits a batch makes before it trusts ``expectedCount``: a small batch allocates
    /// nothing for a large one that came before.
    static var reserveAfter: Int { 32 }

    init(base: [String: Any]?, expectedCount: Int = 0) {
        self.base = base
        self.expectedCount = expectedCount
    }

    /// Adds a vetted change.
    mutating func collect(_ change: PrefsChange) {
        switch change {
        case .replace(let values):
            base = values
            edits = [:]
            fills = [:]
        case .merge(let values):
            for (key, value) in values { edits[key] = .set(value) }
        case .set(let key, let value):
            if edits.count == Self.reserveAfter, expectedCount > edits.count { edits.reserveCapacity(expectedCount) }
            edits[key] = value.map(Edit.set) ?? .remove
        case .fillMissing(let values):
            for (key, value) in values {
                switch edits[key] {
                case .set?: break
                case .remove?: edits[key] = .set(value)
                case nil: if fills[key] == nil { fills[key] = value }
                }
            }
        case .transform:
            preconditionFailure("an update is never collected")
        }
    }

    /// Adds the changes of `later`, collected after these: the result applies as these, then
    /// `later`, would.
    mutating func append(_ later: PendingChanges) {
        if let base = later.base { collect(.replace(base)) }
        for (key, edit) in later.edits {
            switch edit {
            case .set(let value): collect(.set(key: key, value: value))
            case .remove: collect(.set(key: key, value: nil))
            }
        }
        if !later.fills.isEmpty { collect(.fillMissing(later.fills)) }
    }

    /// Spoils the batch: it will not be written. Refusals of one kind are merged, so every
    /// refused key is named; otherwise the first refusal is kept.
    mutating func refuse(_ error: PersistentPrefs.PrefsError) {
        switch (refusal, error) {
        case (nil, _):
            refusal = error
        case let (.incorrectKeys(first)?, .incorrectKeys(more)):
            refusal = .incorrectKeys(invalidElements: Array(Set(first + more)).sorted())
        case let (.valuesNotPlistCompatible(first)?, .valuesNotPlistCompatible(more)):
            refusal = .valuesNotPlistCompatible(invalidElements: Array(Set(first + more)).sorted())
        default:
            break
        }
    }

    /// The value of `key` with the batch applied; `stored` gives the set's own value.
    func value(forKey key: String, stored: () throws -> Any?) rethrows -> Any? {
        switch edits[key] {
        case .set(let value)?: return value
        case .remove?: return nil
        case nil:
            let current = try base.map { $0[key] } ?? stored()
            return current ?? fills[key]
        }
    }

    /// `current` (or ``base``, when known) with the batch applied.
    func applied(to current: [String: Any]) -> [String: Any] {
        applied(to: current, reportingTo: nil)
    }

    /// ``applied(to:)``, telling `report` (when there is one) what the batch was applied to and
    /// which keys it changed: set to another value, added or removed. One look-up a key: the
    /// value replaced comes back from the insertion.
    func applied(to current: [String: Any], reportingTo box: BatchReport.Box?) -> [String: Any] {
        var result = base ?? current
        var changed: Set<String> = []
        let reporting = box != nil
        // Only a report needs the keys.
        func note(_ key: String) {
            if reporting { changed.insert(key) }
        }
        for (key, edit) in edits {
            switch edit {
            case .set(let value):
                if let replaced = result.updateValue(value, forKey: key) {
                    if reporting, !PlistValue.sameValues(replaced, value) { note(key) }
                } else {
                    note(key)
                }
            case .remove:
                if result.removeValue(forKey: key) != nil { note(key) }
            }
        }
        for (key, value) in fills where result[key] == nil {
            result[key] = value
            note(key)
        }
        box?.report = BatchReport(base: base ?? current, changed: changed)
        return result
    }

    /// The one store change that writes the batch (`nil` when it changes nothing) and, for a
    /// change applied to the set as stored, where its store write leaves what it found (see
    /// ``BatchReport``).
    var reportingChange: (PrefsChange, BatchReport.Box?)? {
        if let base { return (.replace(applied(to: base)), nil) }
        if edits.isEmpty && fills.isEmpty { return nil }
        let box = BatchReport.Box()
        return (.transform { current in applied(to: current, reportingTo: box) }, box)
    }
}

/// What a batch's store transform found: the set it was applied to and the keys it changed.
/// The write tells observers those keys instead of comparing each touched key again, when the
/// set it was applied to is the very set cached (see `SharedSet.write`).
struct BatchReport {
    /// The set the batch was applied to (its last run's, when the store ran it again).
    let base: [String: Any]
    /// The keys whose values the batch changed.
    let changed: Set<String>

    /// Where the transform leaves its report for the write that runs it.
    final class Box {
        /// The last run's report; `nil` until the transform has run.
        var report: BatchReport?
        init() { report = nil }
    }
}

extension PendingChanges {
    /// A copy of pending changes behind one reference, so the read path passes one word.
    final class Box {
        let changes: PendingChanges
        init(_ changes: PendingChanges) { self.changes = changes }
    }
}

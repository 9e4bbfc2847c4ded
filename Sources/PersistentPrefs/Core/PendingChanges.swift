import Foundation

/// Changes collected to be written together later: by a running batch, or staged on a coalescing set.
struct PendingChanges {
    /// One collected change of a key.
    enum Edit {
        case set(Any)
        case remove
    }

    /// The set the changes apply to when known (the batch replaced it, or an update's locked copy); `nil`: as stored.
    var base: [String: Any]?
    /// Keys set or removed, the last change of each.
    var edits: [String: Edit] = [:]
    /// Defaults from ``PersistentPrefs/addMissingValues(_:)``: stored where the key holds nothing when written.
    var fills: [String: Any] = [:]
    /// Why the batch must not be written, naming the refused keys.
    var refusal: PersistentPrefs.PrefsError?
    /// ``PersistentPrefs/keys`` as a set, once the batch's first change was vetted.
    var allowedKeys: Set<String>?

    init(base: [String: Any]?) {
        self.base = base
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

    /// Adds the changes of `later`: the result applies as these, then `later`, would.
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

    /// Spoils the batch. Refusals of one kind are merged, naming every refused key; otherwise the first is kept.
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

    /// `current` (or ``base``, when known) with the changes applied.
    func applied(to current: [String: Any]) -> [String: Any] {
        apply(to: current, reporting: false).set
    }

    /// ``applied(to:)``, with the keys changed against `current` (set to another value, added or removed).
    func applying(to current: [String: Any]) -> (set: [String: Any], changed: Set<String>) {
        apply(to: current, reporting: true)
    }

    private func apply(to current: [String: Any], reporting: Bool) -> (set: [String: Any], changed: Set<String>) {
        var result = base ?? current
        if result.isEmpty { result.reserveCapacity(edits.count + fills.count) }  // a first write: grown once, not rehashed along the way
        var changed: Set<String> = []
        if reporting, base == nil { changed.reserveCapacity(edits.count + fills.count) }  // grown once, not rehashed along the way
        for (key, edit) in edits {
            switch edit {
            case .set(let value):
                if let replaced = result.updateValue(value, forKey: key) {
                    if reporting, !PlistValue.sameValues(replaced, value) { changed.insert(key) }
                } else if reporting {
                    changed.insert(key)
                }
            case .remove:
                if result.removeValue(forKey: key) != nil, reporting { changed.insert(key) }
            }
        }
        for (key, value) in fills where result[key] == nil {
            result[key] = value
            if reporting { changed.insert(key) }
        }
        // Against a base the batch replaced the set with, every key may have changed.
        if reporting, base != nil { changed = PlistValue.changedKeys(current, result) }
        return (result, changed)
    }

    /// The edit that writes the changes (a replacement when the batch replaced the set); `nil` when there are none.
    var edit: SetPlan.Edit? {
        if let base { return .change(.replace(applied(to: base))) }
        if edits.isEmpty && fills.isEmpty { return nil }
        return .batch(self)
    }
}

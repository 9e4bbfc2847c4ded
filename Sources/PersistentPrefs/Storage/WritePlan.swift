import Foundation

/// What applying a plan to a stored set came to, as a store needs to know it.
protocol PlanOutcome {
    /// The set to write and the keys it changes, or `nil` when nothing is written (refused, or nothing to do).
    var written: (set: [String: Any], changed: Set<String>)? { get }
    /// Why nothing is written, when the plan refused the change.
    var refusal: (any Error)? { get }
}

/// A write as a store carries it out: under its lock the store reads the system layers in force and the set as stored,
/// calls ``apply`` and writes what the outcome writes, if anything; the outcome goes back untouched in
/// ``StoreWrite/outcome``. A store calls ``apply`` again, on the newer file, when the file is not the one it read, and
/// carries out the last outcome: so `apply` must make its outcome of its arguments alone (and the user's closures).
struct WritePlan<Outcome: PlanOutcome> {
    /// Whether the plan needs the set as stored. `false`: a replacement, which a store may apply to an empty set
    /// without reading (so it can repair a file it cannot read) when no layer locks a key.
    let buildsOnCurrent: Bool
    /// Makes the outcome of the set as stored (in the store's own shapes; `nil`: not a set) and the layers in force.
    let apply: (_ stored: [String: Any]?, _ layers: LayerStack) -> Outcome
}

/// What a store's write did, worked out under the store's lock, where the set before and after are both at hand.
struct StoreWrite<Outcome> {
    /// What the plan's last application came to.
    let outcome: Outcome
    /// The set as written, in the store's own shapes (empty when nothing was written).
    let set: [String: Any]
    /// The version of the file the plan was applied to (read under the lock; `nil`: unknown).
    let readVersion: UInt64?
    /// The version of the file the write left (`nil`: unknown, or nothing written).
    let version: UInt64?
    /// The keys whose stored value the write changed, against the set read under the lock; `nil`: not said.
    let changed: Set<String>?
    /// The system layers the plan was applied with.
    let layers: LayerStack

    /// A write that wrote nothing: `outcome` had nothing to write.
    static func unwritten(_ outcome: Outcome, layers: LayerStack) -> StoreWrite {
        StoreWrite(outcome: outcome, set: [:], readVersion: nil, version: nil, changed: [], layers: layers)
    }
}

/// The outcome of a plain ``PrefsChange`` a store applies (``PrefsStore/apply(_:root:)``).
enum ChangeOutcome: PlanOutcome {
    case write(set: [String: Any], changed: Set<String>)
    case refused(any Error)

    var written: (set: [String: Any], changed: Set<String>)? {
        guard case .write(let set, let changed) = self else { return nil }
        return (set, changed)
    }

    var refusal: (any Error)? {
        guard case .refused(let error) = self else { return nil }
        return error
    }
}

extension WritePlan where Outcome == ChangeOutcome {
    /// `change` as a plan of its own: refused when it changes a key the layers lock, or builds on a root that holds
    /// something other than a set.
    init(_ change: PrefsChange, root: String) {
        self.init(buildsOnCurrent: change.buildsOnCurrent) { stored, layers in
            do {
                guard let stored = stored ?? (change.buildsOnCurrent ? nil : [:]) else {
                    throw PersistentPrefs.PrefsError.invalidStoredValue(key: root)
                }
                let (set, changed) = try change.applying(to: stored)
                if let key = layers.lockedChange(stored: stored, to: set) {
                    throw PersistentPrefs.PrefsError.keyLocked(key: key)
                }
                return .write(set: set, changed: changed)
            } catch {
                return .refused(error)
            }
        }
    }
}

extension StoreWrite where Outcome == ChangeOutcome {
    /// The set as written, for ``PrefsStore/apply(_:root:)``; throws why the change was refused.
    func appliedSet() throws -> [String: Any] {
        if let refusal = outcome.refusal { throw refusal }
        return set
    }
}

extension PrefsChange {
    /// The change applied to `current`, with the keys it changed: of those it names, the ones whose value differs
    /// (every key that differs, for a replacement or a transform); never the schema version. Throws as ``applied(to:)``.
    func applying(to current: [String: Any]) throws -> (set: [String: Any], changed: Set<String>) {
        let updated = try applied(to: current)
        var changed: Set<String>
        if let touched = touchedKeys {
            changed = touched.filter { !PlistValue.same(current[$0], updated[$0]) }
        } else {
            changed = PlistValue.changedKeys(current, updated)
        }
        changed.remove(LayerStack.schemaVersionKey)
        return (updated, changed)
    }
}

/// One device's side of syncing one set: its published ``DeviceLog``, its local ``SyncRecord``, and the pure pass that
/// publishes the set's changes and merges every other device's log. No file, lock or clock in it: the caller reads the
/// folder, passes the wall time, and persists what a pass returns in the order ``SyncPass`` gives.
///
/// For each key the entry with the greatest stamp across every device wins (a last-writer-wins map: the order, delay and
/// duplication of the logs a pass sees do not change where the devices end up), with these guards:
/// - a device's set never steps back: a remote entry older than the greatest one the device knows is ignored;
/// - a value merged in from another device keeps that device's stamp and is never published as this device's change;
/// - a fresh install never overwrites: on a device's first pass, a key some other log has takes that log's entry, and
///   only the device's other values are published, stamped at the start of time so any value set anywhere wins (and,
///   among such values of devices whose first passes did not see each other, the earlier first pass by each device's
///   own clock);
/// - a log carries the greatest entry of every key its device knows, refused ones included (so one log tells a new
///   device everything), tombstones only until every device in the folder has merged a log carrying them; a device
///   whose newest log holds an older entry of a key whose tombstone is no longer carried gets it carried again.
struct SyncReplica<Value: Equatable & Sendable>: Sendable {
    /// This device's log, as last published.
    private(set) var log: DeviceLog<Value>
    /// What the device keeps beside its log.
    private(set) var state: SyncRecord<Value>
    private var clock: HybridClock

    /// A replica as persisted: its log (the device file) and record.
    init(log: DeviceLog<Value>, state: SyncRecord<Value> = SyncRecord()) {
        self.log = log
        self.state = state
        clock = HybridClock(device: log.device)
        clock.observe(log.published)
        for entry in state.entries.values { clock.observe(entry.stamp) }
        for stamp in state.carried.values { clock.observe(stamp) }
    }

    /// A device that has never synced.
    init(device: String) {
        self.init(log: DeviceLog(device: device))
    }

    var device: String { log.device }

    /// One pass: the set's changes since the last pass are stamped and published, then every log in `others` is merged.
    ///
    /// - Parameters:
    ///   - local: The set's stored values that sync (no defaults, no device-local keys), as they are now.
    ///   - others: The logs of other devices found in the folder, conflict copies and stale copies included.
    ///   - now: The wall clock, in milliseconds since 1970.
    ///   - accept: Whether a merged entry may be applied to this device's set (its vetting, a locked key). A refused one
    ///     is reported and the set keeps its value; it is asked again on each pass, so a device whose vetting changes
    ///     takes it then.
    /// - Returns: What to persist and apply, in order.
    mutating func pass(
        local: [String: Value], others: [DeviceLog<Value>], now: Int64, accept: (String, Value?) -> Bool = { _, _ in true }
    ) -> SyncPass<Value> {
        var result = SyncPass<Value>()
        let holds = local  // what the set holds now: the value before any merge this pass hands it
        var local = local
        var record = state
        let others = others.filter { $0.device != device }

        // The last pass's merged values that a crash kept from the set: applied again (and still pending), when the
        // device still accepts them (else kept apart, as any refused entry). A key holding neither value was changed on
        // this device since: published below.
        record.pending = [:]
        for (key, pending) in state.pending where local[key] != pending.after && local[key] == pending.before {
            guard accept(key, pending.after) else {
                record.held[key] = SyncRecord.Held(value: local[key])
                continue
            }
            result.changes[key] = .some(pending.after)
            local[key] = pending.after
            record.pending[key] = pending
        }

        var best: [String: SyncEntry<Value>] = [:]
        for other in others {
            for (key, entry) in other.entries where entry.stamp > (best[key]?.stamp ?? .zero) { best[key] = entry }
        }

        // Stamped before anything from the others is observed: a change comes after what the set showed when it was made.
        var carriedFromNow: Set<String> = []
        for key in Set(local.keys).union(record.entries.keys).union(record.held.keys) where local[key] != record.holding(key) {
            if !record.started, best[key] != nil { continue }  // a fresh install takes what the folder has
            // At the start of time, the earlier first pass ahead: a value any device set wins over it, and a device
            // that held its value when it joined long ago wins over an install that joined before the folder reached it.
            let stamp = record.started ? clock.stamp(now: now) : SyncStamp(wall: 0, counter: Int64.max - max(now, 0), device: device)
            let entry = SyncEntry(value: local[key], stamp: stamp)
            record.entries[key] = entry
            record.held[key] = nil
            carriedFromNow.insert(key)
            result.ownChanges[key] = entry
        }

        var seen: [String: SyncStamp] = [:]
        var seenOfMe: [String: SyncStamp] = [:]
        for other in others {
            clock.observe(other.published)
            seen[other.device] = max(seen[other.device] ?? log.seen[other.device] ?? .zero, other.published)
            seenOfMe[other.device] = max(seenOfMe[other.device] ?? .zero, other.seen[device] ?? .zero)
        }
        for (key, entry) in best where entry.stamp > (record.entries[key]?.stamp ?? .zero) {
            if record.held[key] == nil, !accept(key, entry.value) { record.held[key] = SyncRecord.Held(value: local[key]) }
            record.entries[key] = entry
            carriedFromNow.insert(key)
        }
        // A merged entry is applied once accepted: at once, or on a later pass after the device's vetting changed.
        for key in record.held.keys.sorted() {
            let entry = record.entries[key]
            guard accept(key, entry?.value) else {
                result.refused.append(key)
                continue
            }
            record.held[key] = nil
        }
        for (key, entry) in record.entries where record.held[key] == nil && entry.value != local[key] {
            result.changes[key] = .some(entry.value)
            record.pending[key] = SyncRecord.Pending(before: holds[key], after: entry.value)
        }

        // A device whose newest log holds an older entry of a key whose tombstone this log no longer carries: carried
        // again. (An older copy beside a newer log is not such a device: carrying it again for that would never end.)
        var newest: [String: DeviceLog<Value>] = [:]
        for other in others where other.published >= (newest[other.device]?.published ?? .zero) { newest[other.device] = other }
        for other in newest.values {
            for (key, entry) in other.entries {
                guard let mine = record.entries[key], mine.value == nil, entry.stamp < mine.stamp, log.entries[key] == nil else { continue }
                carriedFromNow.insert(key)
            }
        }

        // The new log: every known entry; a tombstone until every device in the folder has merged a log carrying it.
        var entries: [String: SyncEntry<Value>] = [:]
        for (key, entry) in record.entries {
            if entry.value != nil || carriedFromNow.contains(key) {
                entries[key] = entry
            } else if log.entries[key] != nil {
                let since = record.carried[key] ?? log.published
                if !seen.keys.allSatisfy({ (seenOfMe[$0] ?? .zero) >= since }) { entries[key] = entry }
            }
        }
        // What this device has seen matters to another only while that one's newest log carries a tombstone this log
        // has not acknowledged yet (its `seen` of that device is before the tombstone was first carried): written once
        // for each, so a folder settles, even beside a device that never writes again.
        let seenMatters = seen != log.seen && newest.values.contains { other in
            other.entries.contains { key, entry in
                entry.value == nil && (log.seen[other.device] ?? .zero) < (other.carried[key] ?? other.published)
            }
        }
        if entries != log.entries || seenMatters {
            log.entries = entries
            log.seen = seen
            log.published = clock.stamp(now: now)
            for key in carriedFromNow { record.carried[key] = record.entries[key]?.value == nil ? log.published : nil }
            log.carried = [:]
            for (key, entry) in entries where entry.value == nil { log.carried[key] = record.carried[key] ?? log.published }
            result.log = log
        }
        record.started = true
        state = record
        result.state = record
        return result
    }

    /// Notes that the set now holds the last pass's ``SyncPass/changes``; returns the record to keep.
    mutating func applied() -> SyncRecord<Value> {
        state.pending = [:]
        return state
    }
}

/// What a device keeps beside its log, in a file of its own (never synced).
struct SyncRecord<Value: Equatable & Sendable>: Equatable, Sendable {
    /// A merged value handed to the set, until the set is known to hold it (the record, the log and the set are three
    /// files: a crash may come between any two).
    struct Pending: Equatable, Sendable {
        var before: Value?
        var after: Value?
    }

    /// The value the set keeps for a key whose greatest entry this device refused.
    struct Held: Equatable, Sendable {
        var value: Value?
    }

    /// Whether the device has made a pass.
    var started = false
    /// By key, the greatest entry the device knows, its own or merged: what its log carries.
    var entries: [String: SyncEntry<Value>] = [:]
    /// By key whose entry in ``entries`` the device refused: what its set holds instead.
    var held: [String: Held] = [:]
    /// By key of a tombstone in ``entries``: the ``DeviceLog/published`` stamp of the first log that carried it.
    var carried: [String: SyncStamp] = [:]
    /// Merged values handed to the set by the last pass, until ``SyncReplica/applied()``.
    var pending: [String: Pending] = [:]

    /// The value the set should hold for `key`, as far as the record knows.
    func holding(_ key: String) -> Value? {
        if let held = held[key] { return held.value }
        return entries[key]?.value
    }

    /// Settles a record rebuilt from the device's own published log against the set's values `local`: an entry merged
    /// from another device that the set does not hold and that `accept` refuses is kept apart, as the lost record
    /// kept it (the set's value is not published over it). Any other difference is taken for a change made on the
    /// device since the log was published, and published: a lost record cannot tell it from a merged value a crash
    /// kept from the set, and a change the user sees is the one kept.
    mutating func settle(_ local: [String: Value], me: String, accept: (String, Value?) -> Bool) {
        for (key, entry) in entries where entry.stamp.device != me && entry.value != local[key] && !accept(key, entry.value) {
            held[key] = Held(value: local[key])
        }
    }
}

/// What one ``SyncReplica/pass(local:others:now:accept:)`` asks of its caller, in this order: keep ``state`` (the
/// record), write ``log`` (when not `nil`) as the device file, apply ``changes`` to the set as one write, then keep the
/// record ``SyncReplica/applied()`` returns. A crash between any two steps loses nothing: the next pass finds where it
/// stopped.
struct SyncPass<Value: Equatable & Sendable>: Sendable {
    /// The device file's new contents; `nil` when nothing in it changed.
    var log: DeviceLog<Value>?
    /// The record to keep before the log is written.
    var state = SyncRecord<Value>()
    /// The merged values to write into the set: `.some(nil)` removes the key.
    var changes: [String: Value?] = [:]
    /// Keys whose greatest entry `accept` refused (now or on an earlier pass), sorted.
    var refused: [String] = []
    /// This device's own changes, stamped in this pass.
    var ownChanges: [String: SyncEntry<Value>] = [:]
}

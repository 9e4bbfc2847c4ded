/// One device's side of syncing one set: its published ``DeviceLog``, its local ``SyncRecord``, and the pure pass that
/// publishes the set's changes and merges every other device's log. No file, lock or clock in it: the caller reads the
/// folder, passes the wall time, and persists what a pass returns in the order ``SyncPass`` gives.
///
/// For each key the entry with the greatest stamp across every device wins (a last-writer-wins map: the order, delay and
/// duplication of the logs a pass sees do not change where the devices end up), with these guards:
/// - a device's set never steps back: a remote entry older than the record's is ignored;
/// - a value merged in from another device keeps that device's stamp and is never published as this device's change;
/// - values a device holds when it first syncs are stamped at the start of time, so any value set anywhere since wins
///   over them: a fresh install never overwrites another device's value;
/// - a log carries every entry its device knows (so one log tells a new device everything), tombstones only until every
///   known device has merged a log carrying them; a device found holding an older entry of a key whose tombstone is no
///   longer carried, and which had not merged it, gets the tombstone again.
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
    ///   - accept: Whether a merged entry may be applied to this device's set (its vetting, a locked key): a refused one
    ///     is reported and left out, and the record keeps the set's own entry.
    /// - Returns: What to persist and apply, in order.
    mutating func pass(
        local: [String: Value], others: [DeviceLog<Value>], now: Int64, accept: (String, Value?) -> Bool = { _, _ in true }
    ) -> SyncPass<Value> {
        var result = SyncPass<Value>()
        var local = local
        var record = state.entries
        // A crash after the last pass's record was written but before its merge reached the set: apply it again. A key
        // holding neither value was changed on this device since, and is published below.
        for (key, pending) in state.pending {
            guard let entry = record[key], local[key] != entry.value, local[key] == pending.before else { continue }
            result.changes[key] = .some(entry.value)
            local[key] = entry.value
        }
        var pending: [String: SyncRecord<Value>.Pending] = [:]
        // A crash after the log was written but before the record was: the log's newer entries count.
        for (key, entry) in log.entries where entry.stamp > (record[key]?.stamp ?? .zero) { record[key] = entry }

        // Stamped before anything from the others is observed: a change comes after what the set showed when it was made.
        let firstPass = log.published == .zero
        var carriedFromNow: Set<String> = []
        for key in Set(local.keys).union(record.keys) where local[key] != record[key]?.value {
            let stamp = firstPass ? SyncStamp(wall: 0, counter: 0, device: device) : clock.stamp(now: now)
            record[key] = SyncEntry(value: local[key], stamp: stamp)
            carriedFromNow.insert(key)
            result.ownChanges[key] = record[key]
        }

        // The greatest entry of each key across the others, and what each of them has merged of this device.
        var seen = log.seen
        var best: [String: SyncEntry<Value>] = [:]
        var seenOfMe: [String: SyncStamp] = [:]
        for other in others where other.device != device {
            clock.observe(other.published)
            seen[other.device] = max(seen[other.device] ?? .zero, other.published)
            seenOfMe[other.device] = max(seenOfMe[other.device] ?? .zero, other.seen[device] ?? .zero)
            for (key, entry) in other.entries where entry.stamp > (best[key]?.stamp ?? .zero) { best[key] = entry }
        }
        for (key, entry) in best where entry.stamp > (record[key]?.stamp ?? .zero) {
            guard accept(key, entry.value) else {
                result.refused.append(key)
                continue
            }
            if entry.value != local[key] {
                result.changes[key] = .some(entry.value)
                pending[key] = SyncRecord.Pending(before: local[key])
            }
            record[key] = entry
            carriedFromNow.insert(key)
        }
        // A device holding an older entry of a key whose tombstone this log no longer carries, and which had not merged
        // the log that carried it: carried again, so that device resets the key too.
        for other in others where other.device != device {
            for (key, entry) in other.entries {
                guard let mine = record[key], mine.value == nil, entry.stamp < mine.stamp, log.entries[key] == nil,
                    (other.seen[device] ?? .zero) < (state.carried[key] ?? .zero)
                else { continue }
                carriedFromNow.insert(key)
            }
        }

        // The new log: every entry of the record; a tombstone until every known device has merged a log carrying it.
        var entries: [String: SyncEntry<Value>] = [:]
        for (key, entry) in record {
            if entry.value != nil || carriedFromNow.contains(key) {
                entries[key] = entry
            } else if log.entries[key] != nil {
                let since = state.carried[key] ?? log.published
                if !seen.keys.allSatisfy({ (seenOfMe[$0] ?? .zero) >= since }) { entries[key] = entry }
            }
        }
        var carried = state.carried
        if entries != log.entries || seen != log.seen {
            log.entries = entries
            log.seen = seen
            log.published = clock.stamp(now: now)
            for key in carriedFromNow { carried[key] = record[key]?.value == nil ? log.published : nil }
            result.log = log
        }
        state = SyncRecord(entries: record, carried: carried, pending: pending)
        result.state = state
        result.refused.sort()
        return result
    }
}

/// What a device keeps beside its log, in a file of its own (never synced).
struct SyncRecord<Value: Equatable & Sendable>: Equatable, Sendable {
    /// What a key's value was before a pass applied a merged entry to it, until the next pass sees whether the set was
    /// written (the set, the record and the log are three files: a crash may come between any two).
    struct Pending: Equatable, Sendable {
        var before: Value?
    }

    /// By key, the newest entry the device knows, its own or merged, which its set holds (unless it refused it).
    var entries: [String: SyncEntry<Value>] = [:]
    /// By key of a tombstone in ``entries``: the ``DeviceLog/published`` stamp of the first log that carried it.
    var carried: [String: SyncStamp] = [:]
    /// Merged entries the last pass asked the caller to apply, with each key's value before.
    var pending: [String: Pending] = [:]
}

/// What one ``SyncReplica/pass(local:others:now:accept:)`` asks of its caller, in this order: write ``log`` (when not
/// `nil`) as the device file, then ``state`` beside it, then apply ``changes`` to the set as one write. A crash between
/// any two steps loses nothing: the next pass finds where it stopped.
struct SyncPass<Value: Equatable & Sendable>: Sendable {
    /// The device file's new contents; `nil` when nothing in it changed.
    var log: DeviceLog<Value>?
    /// The record to keep.
    var state = SyncRecord<Value>()
    /// The merged values to write into the set: `.some(nil)` removes the key.
    var changes: [String: Value?] = [:]
    /// Keys whose merged entry `accept` refused, sorted.
    var refused: [String] = []
    /// This device's own changes, stamped in this pass (a fresh install's may lose to a merged entry at once).
    var ownChanges: [String: SyncEntry<Value>] = [:]
}

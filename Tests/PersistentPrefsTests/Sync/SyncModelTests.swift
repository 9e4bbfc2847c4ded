import Testing

@testable import PersistentPrefsSync

@Suite("The hybrid clock")
struct HybridClockTests {
    @Test("a stamp made after seeing another is greater, with the wall clocks a day apart either way",
          arguments: [-86_400_000, 0, 86_400_000] as [Int64])
    func laterAfterSeeing(skew: Int64) {
        var seen = HybridClock(device: "b")
        let theirs = seen.stamp(now: 1_000_000_000 + skew)
        var clock = HybridClock(device: "a")
        _ = clock.stamp(now: 1_000_000_000)
        clock.observe(theirs)
        let mine = clock.stamp(now: 1_000_000_000)
        #expect(mine > theirs)
        #expect(mine.device == "a")
    }

    @Test("stamps of one clock only grow, when its wall clock stands still or goes back")
    func monotonic() {
        var clock = HybridClock(device: "a")
        var previous = SyncStamp.zero
        for now in [5, 5, 5, 3, 9, 9, 1] as [Int64] {
            let stamp = clock.stamp(now: now)
            #expect(stamp > previous)
            previous = stamp
        }
    }
}

/// Devices syncing one set of `Int`s through a simulated replicating engine. Users write unique values (and removals),
/// so a value tells which write it came from.
struct Simulation {
    /// One device: what it persisted (its device file, its record, its set) and its wall clock's error.
    struct Device {
        var replica: SyncReplica<Int>
        var set: [String: Int]
        var skew: Int64
        /// The greatest stamp its record held, to check that its next change comes after it.
        var known = SyncStamp.zero
        /// The set as the last recorded pass left it: a key holding another value now was written by the user since.
        var baseline: [String: Int] = [:]
        /// On its first recorded pass, the keys some other device's log had.
        var foundOnJoining: Set<String>?
        /// Whether the last pass that kept a record stopped after the set was written, before the record was kept again.
        var stoppedBeforeApplied = false
    }

    var random: SeededGenerator
    var devices: [Device] = []
    /// Every version of every device file, as the engine received them.
    var versions: [String: [DeviceLog<Int>]] = [:]
    /// What each device's folder holds of each device file: an index into `versions` that only moves forward.
    var views: [Int: [String: Int]] = [:]
    var now: Int64 = 1_700_000_000_000
    /// Every change a device recorded as its own, with its key.
    var explicit: [(key: String, entry: SyncEntry<Int>)] = []
    let keys = ["a", "b", "c", "d"]
    var nextValue = 1
    var crashes = 0
    /// device-1 refuses resets of "d" (a locked key there, say).
    static func accepts(_ index: Int) -> (String, Int?) -> Bool {
        index == 1 ? { key, value in !(key == "d" && value == nil) } : { _, _ in true }
    }

    init(seed: UInt64) {
        random = SeededGenerator(state: seed)
    }

    mutating func addDevice(set: [String: Int] = [:]) {
        let skews: [Int64] = [-86_400_000, 0, 86_400_000, Int64.random(in: -5_000...5_000, using: &random)]
        let name = "device-\(devices.count)"
        devices.append(Device(replica: SyncReplica(device: name), set: set, skew: skews.randomElement(using: &random)!, baseline: set))
        views[devices.count - 1] = [:]
    }

    /// The logs device `index` finds in its folder: its view of every other device file, sometimes with an older
    /// version of one of them beside it (a conflict copy, or a stale copy an engine left), sometimes twice.
    mutating func others(of index: Int, copies: Bool) -> [DeviceLog<Int>] {
        var logs: [DeviceLog<Int>] = []
        for (name, version) in views[index]!.sorted(by: { $0.key < $1.key }) where name != devices[index].replica.device {
            logs.append(versions[name]![version])
            if copies, version > 0, Int.random(in: 0..<6, using: &random) == 0 {
                logs.append(versions[name]![Int.random(in: 0..<version, using: &random)])
            }
        }
        logs.shuffle(using: &random)
        if copies, let duplicate = logs.randomElement(using: &random) { logs.append(duplicate) }
        return logs
    }

    /// One pass of device `index`, persisted in its four steps (the record, the device file, the set, the record
    /// again); with `crash`, only the first 0 to 3 of them are, and the device starts again from what was.
    mutating func pass(_ index: Int, crash: Bool, copies: Bool) {
        let others = others(of: index, copies: copies)
        var device = devices[index]
        let before = device.replica.state
        let result = device.replica.pass(local: device.set, others: others, now: now + device.skew, accept: Self.accepts(index))
        let written = Set(device.set.keys).union(device.baseline.keys).filter { device.set[$0] != device.baseline[$0] }
        let steps = crash ? Int.random(in: 0..<4, using: &random) : 4
        var persistedLog = devices[index].replica.log
        var persistedState = before
        if steps >= 1 {
            persistedState = result.state
            for (key, entry) in result.ownChanges {
                // A change made after seeing another wins: its stamp is above every stamp the record held.
                #expect(entry.stamp > device.known, "\(key): \(entry.stamp) not after \(device.known)")
                // Only what the device's user wrote is published as the device's (its values when it joined aside).
                #expect(!before.started || written.contains(key), "\(key) published by \(device.replica.device), which did not write it")
                explicit.append((key, entry))
            }
            // No write of the user is lost: each is published, or puts back what the set held. (A value equal to what the
            // set held before a merge that a crash cut between the set and the record reads as not applied: a known limit.)
            for key in written where result.ownChanges[key] == nil && before.started {
                let interrupted = device.stoppedBeforeApplied && before.pending[key].map { $0.before == device.set[key] } ?? false
                #expect(device.set[key] == before.holding(key) || interrupted, "\(device.replica.device)'s write of \(key) lost")
            }
            device.baseline = device.set
            device.known = result.state.entries.values.map(\.stamp).max() ?? device.known
            if !before.started {
                device.foundOnJoining = Set(others.flatMap { $0.entries.keys })
            }
        }
        if steps >= 2, let log = result.log {
            persistedLog = log
            versions[log.device, default: []].append(log)
            views[index]![log.device] = versions[log.device]!.count - 1
        }
        if steps >= 3 {
            for (key, value) in result.changes { device.set[key] = value }
            device.baseline = device.set
        }
        if steps >= 4 { persistedState = device.replica.applied() }
        if steps >= 3 {
            // The set holds what the record says it holds.
            for key in Set(device.set.keys).union(result.state.entries.keys) {
                #expect(device.set[key] == result.state.holding(key), "\(device.replica.device) \(key)")
            }
        }
        if steps >= 1 { device.stoppedBeforeApplied = steps == 3 }  // a pass that kept no record leaves the record as it was
        if crash {
            crashes += 1
            device.replica = SyncReplica(log: persistedLog, state: persistedState)
        }
        devices[index] = device
    }

    /// The engine copies a random version, not older than the one there, of a random device file into a random folder.
    mutating func deliver() {
        guard let index = devices.indices.randomElement(using: &random), let name = versions.keys.sorted().randomElement(using: &random)
        else { return }
        let latest = versions[name]!.count - 1
        let current = views[index]![name] ?? 0
        views[index]![name] = Int.random(in: min(current, latest)...latest, using: &random)
    }

    /// Every folder gets the latest version of every device file (with stale copies beside them at first), and every
    /// device passes, until no log changes; whether that happened within 16 rounds.
    mutating func settle() -> Bool {
        for round in 0..<16 {
            let counts = versions.mapValues(\.count)
            for index in devices.indices.shuffled(using: &random) {
                for (name, logs) in versions { views[index]![name] = logs.count - 1 }
                now += 1000
                pass(index, crash: false, copies: round < 3)
            }
            if round >= 3, versions.mapValues(\.count) == counts { return true }
        }
        return false
    }

    /// What every device must hold: for each key, the value of the greatest entry any device recorded as its own
    /// change (a tombstone: no value).
    var expected: [String: Int] {
        var best: [String: SyncEntry<Int>] = [:]
        for (key, entry) in explicit where entry.stamp > (best[key]?.stamp ?? .zero) { best[key] = entry }
        return best.compactMapValues(\.value)
    }

    /// Random steps, then ``settle()``; whether the folder settled.
    mutating func run(steps: Int, crashes crashing: Bool, joinAt join: Int?) -> Bool {
        addDevice(set: ["b": -3])  // values held before the device first synced
        for _ in 0..<2 { addDevice() }
        for step in 0..<steps {
            if step == join { addDevice(set: ["a": -1, "c": -2]) }  // an install that wrote its own values first
            now += Int64.random(in: 0..<40, using: &random)
            let index = devices.indices.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                let key = keys.randomElement(using: &random)!
                let value = Int.random(in: 0..<5, using: &random) == 0 ? nil : nextValue
                nextValue += 1
                devices[index].set[key] = value
            case 3..<6:
                pass(index, crash: crashing && Int.random(in: 0..<5, using: &random) == 0, copies: true)
            default:
                deliver()
            }
        }
        return settle()
    }
}

@Suite("Sync's merge model: simulated devices and engine")
struct SyncModelTests {
    @Test("every device ends with the greatest published entry of each key, whatever the engine's order, delays, copies and duplicates, clocks a day off, and crashes between a pass's steps",
          arguments: 0..<40)
    func converges(seed: UInt64) {
        var simulation = Simulation(seed: seed &+ 0x51C0)
        // The folder settles: no device file is written again once every device has every other's latest.
        let settled = simulation.run(steps: 400, crashes: seed % 2 == 0, joinAt: seed % 3 == 0 ? 150 : nil)
        #expect(settled, "seed \(seed)")
        let expected = simulation.expected
        for (index, device) in simulation.devices.enumerated() {
            var set = device.set
            // device-1 refuses resets of "d": where one won, it keeps its value.
            if index == 1, expected["d"] == nil { set["d"] = nil }
            #expect(set == expected, "seed \(seed), \(device.replica.device): \(device.set) against \(expected)")
            // Tombstones are dropped once every device has merged them.
            #expect(device.replica.log.entries.values.allSatisfy { $0.value != nil }, "seed \(seed): \(device.replica.log.entries)")
        }
        // A fresh install's own values never replace a value some device had published when it joined.
        if let joined = simulation.devices.dropFirst(3).first, let found = joined.foundOnJoining {
            for key in found { #expect(![-1, -2].contains(expected[key]), "seed \(seed): the install's value of \(key) won") }
        }
        #expect(!simulation.explicit.isEmpty)
    }

    @Test("a fresh install takes the values the folder has, publishes only the others, and loses to a device that joined before it")
    func freshInstall() {
        var old = SyncReplica<Int>(device: "old")
        _ = old.pass(local: ["w": 0], others: [], now: 1_000)
        let oldLog = old.pass(local: ["w": 0, "a": 1], others: [], now: 2_000).log!
        var fresh = SyncReplica<Int>(device: "fresh")
        // The install wrote its own values before it first synced, on a clock far ahead.
        let first = fresh.pass(local: ["a": 9, "b": 7], others: [oldLog], now: 9_000_000_000_000)
        #expect(first.changes == ["a": .some(1), "w": .some(0)])
        #expect(first.ownChanges.keys.sorted() == ["b"])
        let back = old.pass(local: ["w": 0, "a": 1], others: [first.log!], now: 3_000)
        #expect(back.changes == ["b": .some(7)])
        // Two first passes that did not see each other: the earlier one's values stand, whatever the names.
        var early = SyncReplica<Int>(device: "a-early")
        let earlyLog = early.pass(local: ["k": 5], others: [], now: 1_000).log!
        var late = SyncReplica<Int>(device: "z-late")
        let lateLog = late.pass(local: ["k": 9], others: [], now: 5_000).log!
        #expect(early.pass(local: ["k": 5], others: [lateLog], now: 6_000).changes.isEmpty)
        #expect(late.pass(local: ["k": 9], others: [earlyLog], now: 6_000).changes == ["k": .some(5)])
    }

    @Test("a new device that took a reset key from a stale copy gets the reset again from a device that had dropped it")
    func staleCopyAfterDrop() {
        var a = SyncReplica<Int>(device: "a")
        var c = SyncReplica<Int>(device: "c")
        _ = a.pass(local: [:], others: [], now: 100)
        _ = c.pass(local: [:], others: [], now: 100)
        let a1 = a.pass(local: ["k": 1], others: [], now: 1_000).log!
        let c1 = c.pass(local: [:], others: [a1], now: 1_100).log!  // carries a's k = 1
        let a2 = a.pass(local: [:], others: [c1], now: 2_000).log!  // reset
        let c2 = c.pass(local: ["k": 1], others: [a2], now: 2_100).log!
        let a3 = a.pass(local: [:], others: [c2], now: 3_000).log!
        #expect(a3.entries["k"] == nil)
        let c3 = c.pass(local: [:], others: [a3], now: 3_100).log!
        #expect(c3.entries["k"] == nil)
        // An older copy of c's log beside its newest is no device holding k: nothing to carry again.
        #expect(a.pass(local: [:], others: [c1, c3], now: 3_500).log?.entries["k"] == nil)
        // A new device finds c's first log beside the newer ones (a stale or conflict copy).
        var e = SyncReplica<Int>(device: "e")
        let e1 = e.pass(local: [:], others: [c1, c3, a3], now: 4_000)
        #expect(e1.changes == ["k": .some(1)])
        let relay = a.pass(local: [:], others: [c3, e1.log!], now: 5_000)
        #expect(relay.log?.entries["k"] != nil && relay.log?.entries["k"]?.value == nil)
        let fixed = e.pass(local: ["k": 1], others: [c3, relay.log!], now: 6_000)
        #expect(fixed.changes == ["k": Int?.none])
    }

    @Test("a crash after the record was written but before the device file: the change is published later, with its stamp")
    func crashBeforeLog() {
        var a = SyncReplica<Int>(device: "a")
        let first = a.pass(local: ["w": 0], others: [], now: 1_000)
        let second = a.pass(local: ["w": 0, "k": 1], others: [], now: 2_000)
        let stamped = second.ownChanges["k"]!
        var restarted = SyncReplica<Int>(log: first.log!, state: second.state)
        let after = restarted.pass(local: ["w": 0, "k": 1], others: [], now: 900_000)
        #expect(after.ownChanges.isEmpty)
        #expect(after.log?.entries["k"] == stamped)
    }

    @Test("a crash after the record was written but before the set was: the merged values are applied again, not published, until the set holds them")
    func crashBeforeSet() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        _ = b.pass(local: ["w": 0], others: [], now: 1_000)
        let fromB = b.pass(local: ["w": 0, "k": 2], others: [], now: 2_000).log!
        _ = a.pass(local: ["k": 1], others: [], now: 1_000)
        let merge = a.pass(local: ["k": 1], others: [fromB], now: 3_000)
        #expect(merge.changes["k"] == .some(2))
        // The record and the log were written; the set still holds 1. Twice.
        var restarted = SyncReplica<Int>(log: merge.log!, state: merge.state)
        let again = restarted.pass(local: ["k": 1, "w": 0], others: [fromB], now: 4_000)
        #expect(again.changes["k"] == .some(2))
        #expect(again.ownChanges.isEmpty)
        var twice = SyncReplica<Int>(log: merge.log!, state: again.state)
        let third = twice.pass(local: ["k": 1, "w": 0], others: [fromB], now: 5_000)
        #expect(third.changes["k"] == .some(2))
        #expect(third.ownChanges.isEmpty)
        // A newer entry merged between two such crashes: still the set's old value, still not published.
        let fromB3 = b.pass(local: ["w": 0, "k": 3], others: [], now: 5_500).log!
        var newer = SyncReplica<Int>(log: merge.log!, state: again.state)
        let withNewer = newer.pass(local: ["k": 1, "w": 0], others: [fromB3], now: 5_700)
        #expect(withNewer.changes["k"] == .some(3))
        var crashedAgain = SyncReplica<Int>(log: withNewer.log ?? merge.log!, state: withNewer.state)
        let fourth = crashedAgain.pass(local: ["k": 1, "w": 0], others: [fromB3], now: 5_800)
        #expect(fourth.ownChanges.isEmpty)
        #expect(fourth.changes["k"] == .some(3))
        // Once the set holds it, the user may put the old value back: that is a change of the device's own.
        _ = twice.applied()
        let back = twice.pass(local: ["k": 1, "w": 0], others: [fromB], now: 6_000)
        #expect(back.ownChanges["k"]?.value == 1)
        #expect(back.changes.isEmpty)
    }

    @Test("a refused entry is reported and left out, the device keeps its own value and does not publish it again, and takes the entry once it accepts it")
    func refused() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        _ = a.pass(local: [:], others: [], now: 500)
        let fromA = a.pass(local: ["k": 1, "x": 2], others: [], now: 1_000).log!
        _ = b.pass(local: ["k": 0], others: [], now: 500)
        let first = b.pass(local: ["k": 0], others: [fromA], now: 1_000) { key, _ in key != "k" }
        #expect(first.refused == ["k"])
        #expect(first.changes == ["x": .some(2)])
        // Its log carries the greatest entry it knows, so no device learns an older one from it.
        #expect(first.log?.entries["k"] == fromA.entries["k"])
        let again = b.pass(local: ["k": 0, "x": 2], others: [fromA], now: 2_000) { key, _ in key != "k" }
        #expect(again.ownChanges.isEmpty)
        #expect(again.refused == ["k"])
        let accepted = b.pass(local: ["k": 0, "x": 2], others: [fromA], now: 3_000)
        #expect(accepted.refused.isEmpty)
        #expect(accepted.changes == ["k": .some(1)])
    }

    @Test("a key reset on one device is reset on the others; its tombstone leaves a log once every device in the folder has merged a log carrying it, and comes back for a log holding an older entry")
    func tombstones() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        _ = a.pass(local: [:], others: [], now: 500)
        var logA = a.pass(local: ["k": 1], others: [], now: 1_000).log!
        var logB = b.pass(local: [:], others: [logA], now: 1_000).log!
        logA = a.pass(local: ["k": 1], others: [logB], now: 2_000).log ?? logA
        logA = a.pass(local: [:], others: [logB], now: 2_500).log!  // reset on a
        #expect(logA.entries["k"] != nil && logA.entries["k"]?.value == nil)
        let merged = b.pass(local: ["k": 1], others: [logA], now: 2_600)
        #expect(merged.changes == ["k": Int?.none])
        logB = merged.log!
        #expect(logB.entries["k"] != nil)
        // a sees that b merged it: a drops its tombstone; then b sees that a merged its log, and drops its copy.
        logA = a.pass(local: [:], others: [logB], now: 3_000).log!
        #expect(logA.entries["k"] == nil)
        logB = b.pass(local: [:], others: [logA], now: 3_000).log!
        #expect(logB.entries["k"] == nil)
        // A device in the folder that has not merged a reset keeps it in the log.
        var d = SyncReplica<Int>(device: "d")
        _ = d.pass(local: [:], others: [], now: 500)
        let fromD = d.pass(local: ["n": 1], others: [], now: 1_000).log!
        let setM = a.pass(local: ["m": 1], others: [logB, fromD], now: 5_000)
        #expect(setM.changes == ["n": .some(1)])
        logA = a.pass(local: ["n": 1], others: [logB, fromD], now: 6_000).log!  // m reset on a
        let mergedM = b.pass(local: [:], others: [logA], now: 6_000)
        #expect(mergedM.changes == ["n": .some(1)])
        logB = mergedM.log!
        logA = a.pass(local: ["n": 1], others: [logB, fromD], now: 7_000).log ?? logA
        #expect(logA.entries["m"] != nil && logA.entries["m"]?.value == nil, "d has not merged the reset of m")
        // A stale copy of an older log (here a device that set k long ago) brings the tombstone of k back.
        var c = SyncReplica<Int>(device: "c")
        _ = c.pass(local: [:], others: [], now: 100)
        let staleC = c.pass(local: ["k": 5], others: [], now: 500).log!
        let relay = a.pass(local: ["n": 1], others: [logB, fromD, staleC], now: 8_000)
        #expect(relay.log?.entries["k"] != nil && relay.log?.entries["k"]?.value == nil)
        #expect(relay.changes.isEmpty)
    }

    @Test("two devices settle beside a device that never writes again, though their logs keep a tombstone for it")
    func settleBesideDormantDevice() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        var c = SyncReplica<Int>(device: "c")
        var logA = a.pass(local: ["k": 1, "v": 1], others: [], now: 1_000).log!
        _ = a.applied()
        var logB = b.pass(local: [:], others: [logA], now: 1_100).log!
        _ = b.applied()
        let logC = c.pass(local: [:], others: [logA, logB], now: 1_200).log!  // c's last log: a retired laptop
        _ = c.applied()
        logA = a.pass(local: ["k": 1, "v": 1], others: [logB, logC], now: 2_000).log ?? logA
        logA = a.pass(local: ["v": 1], others: [logB, logC], now: 3_000).log!  // k reset on a
        #expect(logA.entries["k"]?.value == nil && logA.carried["k"] != nil)
        var b_set: [String: Int] = ["k": 1, "v": 1]
        var writes: [Int] = []
        for round in 0..<40 {
            let now = Int64(4_000 + round * 1_000)
            let passB = b.pass(local: b_set, others: [logA, logC], now: now)
            for (key, value) in passB.changes { b_set[key] = value }
            _ = b.applied()
            if let log = passB.log { logB = log }
            let passA = a.pass(local: ["v": round < 2 ? 1 : 2], others: [logB, logC], now: now + 500)
            _ = a.applied()
            if let log = passA.log { logA = log }
            writes.append((passA.log == nil ? 0 : 1) + (passB.log == nil ? 0 : 1))
        }
        #expect(b_set == ["v": 2])
        #expect(writes.suffix(30).allSatisfy { $0 == 0 }, "the two files are written again and again: \(writes)")
        #expect(logA.entries["k"]?.value == nil, "c never merged the reset: a keeps carrying it")
    }
}

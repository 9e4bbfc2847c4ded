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

/// Devices syncing one set of `Int`s through a simulated replicating engine.
struct Simulation {
    /// One device: what it persisted (its device file, its record, its set) and its wall clock's error.
    struct Device {
        var replica: SyncReplica<Int>
        var set: [String: Int]
        var skew: Int64
        /// The greatest stamp it had merged, to check that its next change comes after it.
        var merged = SyncStamp.zero
    }

    var random: SeededGenerator
    var devices: [Device] = []
    /// Every version of every device file, as the engine received them.
    var versions: [String: [DeviceLog<Int>]] = [:]
    /// What each device's folder holds of each device file: an index into `versions` that only moves forward.
    var views: [Int: [String: Int]] = [:]
    var now: Int64 = 1_700_000_000_000
    /// Every entry a device published as its own change.
    var explicit: [SyncEntry<Int>] = []
    var explicitKeys: [String] = []
    let keys = ["a", "b", "c", "d"]
    var crashes = 0

    init(seed: UInt64) {
        random = SeededGenerator(state: seed)
    }

    mutating func addDevice(set: [String: Int] = [:]) {
        let skews: [Int64] = [-86_400_000, 0, 86_400_000, Int64.random(in: -5_000...5_000, using: &random)]
        let name = "device-\(devices.count)"
        devices.append(Device(replica: SyncReplica(device: name), set: set, skew: skews.randomElement(using: &random)!))
        views[devices.count - 1] = [:]
    }

    /// The logs device `index` finds in its folder: its view of every other device file, sometimes with an older
    /// version of one of them beside it (a conflict copy, or a stale copy an engine left).
    mutating func others(of index: Int, copies: Bool) -> [DeviceLog<Int>] {
        var logs: [DeviceLog<Int>] = []
        for (name, version) in views[index]! where name != devices[index].replica.device {
            logs.append(versions[name]![version])
            if copies, version > 0, Int.random(in: 0..<6, using: &random) == 0 {
                logs.append(versions[name]![Int.random(in: 0..<version, using: &random)])
            }
        }
        logs.shuffle(using: &random)
        if copies, let duplicate = logs.randomElement(using: &random) { logs.append(duplicate) }
        return logs
    }

    /// One pass of device `index`; with `crash`, only the first 0, 1 or 2 of its three steps are persisted, and the
    /// device starts again from what was.
    mutating func pass(_ index: Int, crash: Bool, copies: Bool) {
        let others = others(of: index, copies: copies)
        var device = devices[index]
        let before = device.replica.state.entries
        let result = device.replica.pass(local: device.set, others: others, now: now + device.skew)
        for (key, entry) in result.ownChanges {
            // A change made after seeing another always wins: its stamp is above all the device had merged.
            #expect(entry.stamp > device.merged, "\(key): \(entry.stamp) not after \(device.merged)")
            #expect(entry.stamp > (before[key]?.stamp ?? .zero))
        }
        let steps = crash ? Int.random(in: 0..<3, using: &random) : 3
        // What the device saw: its clock keeps it from the log on (a pass that changes nothing in the log saw nothing new).
        if steps >= 1 { for other in others { device.merged = max(device.merged, other.published) } }
        var persistedLog = devices[index].replica.log
        var persistedState = devices[index].replica.state
        if steps >= 1, let log = result.log {
            persistedLog = log
            versions[log.device, default: []].append(log)
            views[index]![log.device] = versions[log.device]!.count - 1
            for (key, entry) in result.ownChanges {
                explicit.append(entry)
                explicitKeys.append(key)
            }
        }
        if steps >= 2 { persistedState = result.state }
        if steps >= 3 {
            for (key, value) in result.changes { device.set[key] = value }
        }
        if crash {
            crashes += 1
            device.replica = SyncReplica(log: persistedLog, state: persistedState)
        }
        devices[index] = device
    }

    /// The engine copies a random version, not older than the one there, of a random device file into a random folder.
    mutating func deliver() {
        guard let index = devices.indices.randomElement(using: &random), let name = versions.keys.randomElement(using: &random)
        else { return }
        let latest = versions[name]!.count - 1
        let current = views[index]![name] ?? 0
        views[index]![name] = Int.random(in: min(current, latest)...latest, using: &random)
    }

    /// Every folder gets the latest version of every device file, and every device passes, until no log changes.
    mutating func settle() {
        for _ in 0..<12 {
            let counts = versions.mapValues(\.count)
            for index in devices.indices.shuffled(using: &random) {
                for (name, logs) in versions { views[index]![name] = logs.count - 1 }
                now += 1000
                pass(index, crash: false, copies: false)
            }
            if versions.mapValues(\.count) == counts { return }
        }
    }

    /// What every device must hold: for each key, the value of the greatest entry any device published as its own
    /// change (a tombstone: no value).
    var expected: [String: Int] {
        var best: [String: SyncEntry<Int>] = [:]
        for (key, entry) in zip(explicitKeys, explicit) where entry.stamp > (best[key]?.stamp ?? .zero) { best[key] = entry }
        return best.compactMapValues(\.value)
    }

    mutating func run(steps: Int, crashes crashing: Bool, joinAt join: Int?) {
        for _ in 0..<3 { addDevice() }
        for step in 0..<steps {
            if step == join { addDevice(set: ["a": 100, "c": 101]) }  // an install that writes its own values first
            now += Int64.random(in: 0..<40, using: &random)
            let index = devices.indices.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                let key = keys.randomElement(using: &random)!
                devices[index].set[key] = Int.random(in: 0..<5, using: &random) == 0 ? nil : Int.random(in: 0..<6, using: &random)
            case 3..<6:
                pass(index, crash: crashing && Int.random(in: 0..<5, using: &random) == 0, copies: true)
            default:
                deliver()
            }
        }
        settle()
    }
}

@Suite("Sync's merge model: simulated devices and engine")
struct SyncModelTests {
    @Test("every device ends with the greatest published entry of each key, whatever the engine's order, delays, copies and duplicates, clocks a day off, and crashes between a pass's steps",
          arguments: 0..<40)
    func converges(seed: UInt64) {
        var simulation = Simulation(seed: seed &+ 0x51C0)
        simulation.run(steps: 400, crashes: seed % 2 == 0, joinAt: seed % 3 == 0 ? 150 : nil)
        let expected = simulation.expected
        for device in simulation.devices {
            #expect(device.set == expected, "seed \(seed), \(device.replica.device): \(device.set) against \(expected)")
            // Tombstones are dropped once every device has merged them.
            #expect(device.replica.log.entries.values.allSatisfy { $0.value != nil }, "seed \(seed): \(device.replica.log.entries)")
        }
        #expect(!simulation.explicit.isEmpty)
    }

    @Test("a fresh install's own values never replace another device's, and are published where no one set the key")
    func freshInstall() {
        var old = SyncReplica<Int>(device: "old")
        _ = old.pass(local: ["w": 0], others: [], now: 1_000)
        let oldLog = old.pass(local: ["w": 0, "a": 1], others: [], now: 2_000).log!
        var fresh = SyncReplica<Int>(device: "fresh")
        // The install wrote its own values before it first synced, on a clock far ahead.
        let first = fresh.pass(local: ["a": 9, "b": 7], others: [oldLog], now: 9_000_000_000_000)
        #expect(first.changes["a"] == .some(.some(1)))
        #expect(first.ownChanges.keys.sorted() == ["a", "b"])
        #expect(first.log?.entries["a"] == oldLog.entries["a"])
        let back = old.pass(local: ["w": 0, "a": 1], others: [first.log!], now: 3_000)
        #expect(back.changes == ["b": .some(7)])
        #expect(back.changes["a"] == nil)
    }

    @Test("a crash after the device file was written but before the record: the change is not stamped again, so a change made after seeing it still wins")
    func crashAfterLog() {
        var a = SyncReplica<Int>(device: "a")
        let first = a.pass(local: ["w": 0], others: [], now: 1_000)
        let state = first.state
        let published = a.pass(local: ["w": 0, "k": 1], others: [], now: 2_000)
        // The device file was written; the record was not.
        var restarted = SyncReplica<Int>(log: published.log!, state: state)
        var b = SyncReplica<Int>(device: "b")
        _ = b.pass(local: [:], others: [published.log!], now: 2_000)
        let fromB = b.pass(local: ["w": 0, "k": 2], others: [published.log!], now: 2_100).log!
        // a's wall clock runs far ahead: a change stamped again now would beat b's.
        let after = restarted.pass(local: ["w": 0, "k": 1], others: [fromB], now: 900_000)
        #expect(after.ownChanges.isEmpty)
        #expect(after.changes == ["k": .some(2)])
    }

    @Test("a crash after the record was written but before the set was: the merged values are applied again, not published")
    func crashAfterRecord() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        _ = b.pass(local: ["w": 0], others: [], now: 1_000)
        let fromB = b.pass(local: ["w": 0, "k": 2], others: [], now: 2_000).log!
        _ = a.pass(local: ["k": 1], others: [], now: 1_000)
        let merge = a.pass(local: ["k": 1], others: [fromB], now: 3_000)
        #expect(merge.changes["k"] == .some(2))
        // The log and record were written; the set still holds 1.
        var restarted = SyncReplica<Int>(log: merge.log!, state: merge.state)
        let again = restarted.pass(local: ["k": 1], others: [fromB], now: 4_000)
        #expect(again.changes["k"] == .some(2))
        #expect(again.ownChanges.isEmpty)
    }

    @Test("a refused entry is reported and left out; the device keeps its own value and does not publish it again")
    func refused() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        let fromA = a.pass(local: ["k": 1, "x": 2], others: [], now: 1_000).log!
        let first = b.pass(local: [:], others: [fromA], now: 1_000) { key, _ in key != "k" }
        #expect(first.refused == ["k"])
        #expect(first.changes == ["x": .some(2)])
        let again = b.pass(local: ["x": 2], others: [fromA], now: 2_000) { key, _ in key != "k" }
        #expect(again.ownChanges.isEmpty)
        #expect(again.refused == ["k"])
    }

    @Test("a key reset on one device is reset on the others, and its tombstone leaves the logs once all have merged it")
    func tombstones() {
        var a = SyncReplica<Int>(device: "a")
        var b = SyncReplica<Int>(device: "b")
        var logA = a.pass(local: ["k": 1], others: [], now: 1_000).log!
        var logB = b.pass(local: [:], others: [logA], now: 1_000).log!
        logA = a.pass(local: [:], others: [logB], now: 2_000).log!  // reset on a
        #expect(logA.entries["k"]?.value == nil && logA.entries["k"] != nil)
        let merged = b.pass(local: ["k": 1], others: [logA], now: 2_000)
        #expect(merged.changes == ["k": Int?.none])
        logB = merged.log!
        #expect(logB.entries["k"] != nil)
        // a sees that b merged it: a drops its tombstone; then b sees that a merged its log, and drops its copy.
        logA = a.pass(local: [:], others: [logB], now: 3_000).log!
        #expect(logA.entries["k"] == nil)
        logB = b.pass(local: [:], others: [logA], now: 3_000).log!
        #expect(logB.entries["k"] == nil)
        // A device known to a but not in the folder now keeps a's next tombstone in a's log.
        var d = SyncReplica<Int>(device: "d")
        let fromD = d.pass(local: ["m": 1], others: [], now: 1_000).log!
        logA = a.pass(local: ["m": 1], others: [logB, fromD], now: 5_000).log!
        logA = a.pass(local: [:], others: [logB], now: 6_000).log!
        logA = a.pass(local: [:], others: [b.pass(local: [:], others: [logA], now: 6_000).log!], now: 7_000).log ?? logA
        #expect(logA.entries["m"] != nil && logA.entries["m"]?.value == nil, "d has not merged the reset of m")
        // A stale copy of b's older log (the key still set there) brings the tombstone back until b merges it.
        var c = SyncReplica<Int>(device: "c")
        let staleC = c.pass(local: ["k": 5], others: [], now: 500).log!
        let relay = a.pass(local: [:], others: [logB, staleC], now: 4_000)
        #expect(relay.log?.entries["k"] != nil && relay.log?.entries["k"]?.value == nil)
    }
}

import Foundation
import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Eleven `@Pref` integers, durable when a setter returns: the setter the coalesced rows are
/// compared with (the same keys as the peers' groups of 11).
class DurableBurstPrefs: PersistentPrefs {
    @Pref("K0") var k0 = 0
    @Pref("K1") var k1 = 0
    @Pref("K2") var k2 = 0
    @Pref("K3") var k3 = 0
    @Pref("K4") var k4 = 0
    @Pref("K5") var k5 = 0
    @Pref("K6") var k6 = 0
    @Pref("K7") var k7 = 0
    @Pref("K8") var k8 = 0
    @Pref("K9") var k9 = 0
    @Pref("K10") var k10 = 0
}

/// ``DurableBurstPrefs``'s eleven integers in a set whose changes of 0.1 s reach the file in
/// one durable write.
final class CoalescedBurstPrefs: DurableBurstPrefs {
    override class var coalescingInterval: TimeInterval? { 0.1 }
}

/// Counts the atomic replacements of one file: the `IN_MOVED_TO` events of its name in its
/// folder, read by a thread of its own as they arrive (the kernel merges an event into an
/// identical one still unread, so a reader that lags would count fewer), each with its arrival
/// time on `DispatchTime`'s clock.
final class ReplacementCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var arrivals: [UInt64] = []
    private var stopped = false
    private let descriptor: Int32
    private let name: String

    /// Watches `name` in `folder`; `nil` when inotify is not available (or not on Linux).
    init?(folder: String, name: String) {
        #if canImport(Glibc)
            let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            guard descriptor >= 0 else { return nil }
            guard inotify_add_watch(descriptor, folder, UInt32(IN_MOVED_TO)) >= 0 else {
                close(descriptor)
                return nil
            }
            self.descriptor = descriptor
            self.name = name
            let thread = Thread { [self] in read() }
            thread.name = "prefs-bench.ReplacementCounter"
            thread.start()
        #else
            return nil
        #endif
    }

    /// The arrival times of the replacements seen so far.
    var times: [UInt64] { lock.withLock { arrivals } }

    /// How many replacements arrived at or after `start` (and before `end`, when given).
    func count(from start: UInt64, to end: UInt64 = .max) -> Int {
        times.filter { $0 >= start && $0 < end }.count
    }

    /// Waits until no replacement has arrived for `quiet` seconds since `since` or the last
    /// arrival after it, at most `limit` seconds; returns the arrival time of the last
    /// replacement after `since`, `nil` when there was none.
    func waitQuiet(since: UInt64, quiet: Double, limit: Double = 10) -> UInt64? {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(limit * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let last = times.last(where: { $0 >= since })
            if now >= max(last ?? since, since) + UInt64(quiet * 1e9) || now >= deadline { return last }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Ends the reading thread (within 50 ms); the thread closes the descriptor.
    func stop() {
        lock.withLock { stopped = true }
    }

    private func read() {
        #if canImport(Glibc)
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while !lock.withLock({ stopped }) {
                guard poll(&waiting, 1, 50) > 0 else { continue }
                let length = Glibc.read(descriptor, &buffer, buffer.count)
                guard length > 0 else { continue }
                let arrived = DispatchTime.now().uptimeNanoseconds
                var offset = 0
                var seen = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= length {
                    let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                    let nameBytes = buffer[(offset + header)..<min(length, offset + header + Int(event.len))]
                    let eventName = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    if event.mask & UInt32(IN_MOVED_TO) != 0 && eventName == name { seen += 1 }
                    offset += header + Int(event.len)
                }
                if seen > 0 { lock.withLock { arrivals += Array(repeating: arrived, count: seen) } }
            }
            close(descriptor)
        #endif
    }
}

/// The coalesced-write rows (issue 38): a burst of 1,000 setter calls on a set with a
/// coalescing interval of 0.1 s against the durable-at-return setter, the file replacements a
/// burst makes, the time until its last change is durable, `synchronize()` after a burst, and
/// the peers' bursts (KConfig's `writeEntry` + `sync()`, GSettings' `g_settings_set_int` +
/// `g_settings_sync()`) beside them.
enum CoalescingRows {
    /// The calls of one burst.
    static let burst = 1000
    /// `burst` as the rows print it.
    static let burstName = "1,000"

    /// Prints the rows and their targets; returns `false` when a write failed.
    static func run(suite: String, config: Bench.Config) -> Bool {
        let interval = CoalescedBurstPrefs.coalescingInterval ?? 0.1
        let quick = config.quickIncrements
        let rounds = quick ? 3 : 5
        let durablePerRound = quick ? 100 : 200
        let spreadBursts = quick ? 1 : 3
        let peerRuns = quick ? 1 : 5
        // Built (when installed) before anything is timed.
        let kconfig = Peers.kconfig(enabled: config.peers)
        let gsettings = Peers.gsettings(enabled: config.peers)

        let coalescedSuite = suite + "-coalesced", durableSuite = suite + "-durable"
        guard let coalescedStore = UserDefaultsStore(suiteName: coalescedSuite),
            let durableStore = UserDefaultsStore(suiteName: durableSuite)
        else { return false }
        defer {
            Bench.removeSuite(coalescedStore, suite: coalescedSuite)
            Bench.removeSuite(durableStore, suite: durableSuite)
        }
        let coalesced = CoalescedBurstPrefs(key: "Burst", store: coalescedStore)
        let durable = DurableBurstPrefs(key: "Burst", store: durableStore)
        coalesced.k1 = 1
        durable.k1 = 1
        do { try coalesced.synchronize() } catch {
            FileHandle.standardError.write(Data("prefs-bench: a coalesced write failed: \(error)\n".utf8))
            return false
        }
        let fileName = coalescedSuite + ".plist"
        let counter = ReplacementCounter(folder: PreferencesFile.preferencesDirectory.path, name: fileName)
        defer { counter?.stop() }
        let suiteFile = PreferencesFile(url: URL(fileURLWithPath: TransactionRows.suiteFilePath(coalescedSuite)))
        /// The value of K0 in the suite's file, read from the disk.
        func storedK0() -> Int? {
            ((try? suiteFile.contents())?["Burst"] as? [String: Any])?["K0"] as? Int
        }

        var coalescedCalls: [Double] = [], durableSamples: [Double] = []
        var fastReplacements: [Int] = [], untilDurable: [Double] = [], burstSpans: [Double] = []
        var syncTimes: [Double] = [], syncReplacements: [Int] = [], beforeSync: [Int] = []
        var lastValueStored = true
        var value = 10
        for round in 0..<(rounds + 1) {  // round 0 warms up and is not counted
            // A fast burst, left to the background writer.
            let start = DispatchTime.now().uptimeNanoseconds
            var calls: [Double] = []
            calls.reserveCapacity(burst)
            var lastReturn: UInt64 = 0
            for _ in 0..<burst {
                value += 1
                let before = DispatchTime.now().uptimeNanoseconds
                coalesced.k0 = value
                lastReturn = DispatchTime.now().uptimeNanoseconds
                calls.append(Double(lastReturn - before))
            }
            // Once no replacement has come for 0.3 s, the burst's last replacement holds its last
            // value (checked on disk below).
            _ = counter?.waitQuiet(since: lastReturn, quiet: 3 * interval)
            let lastReplacement = counter?.times.last { $0 >= start }
            if counter == nil { Thread.sleep(forTimeInterval: 3 * interval) }
            let stored = storedK0() == value
            if round > 0 {
                coalescedCalls += calls
                burstSpans.append(Double(lastReturn - start))
                lastValueStored = lastValueStored && stored
                if let counter {
                    fastReplacements.append(counter.count(from: start))
                    if let lastReplacement { untilDurable.append(Double(Int64(lastReplacement) - Int64(lastReturn))) }
                }
            }

            // The durable-at-return setter, in the same round.
            var durableRound: [Double] = []
            for _ in 0..<durablePerRound {
                value += 1
                let before = DispatchTime.now().uptimeNanoseconds
                durable.k0 = value
                durableRound.append(Double(DispatchTime.now().uptimeNanoseconds - before))
            }
            if round > 0 { durableSamples += durableRound }

            // A fast burst, then synchronize().
            let syncStart: UInt64
            let syncEnd: UInt64
            let burstStart = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<burst {
                value += 1
                coalesced.k0 = value
            }
            syncStart = DispatchTime.now().uptimeNanoseconds
            do { try coalesced.synchronize() } catch {
                FileHandle.standardError.write(Data("prefs-bench: synchronize() failed: \(error)\n".utf8))
                return false
            }
            syncEnd = DispatchTime.now().uptimeNanoseconds
            let stable = storedK0() == value
            _ = counter?.waitQuiet(since: syncEnd, quiet: 3 * interval)
            if counter == nil { Thread.sleep(forTimeInterval: 3 * interval) }
            if round > 0 {
                syncTimes.append(Double(syncEnd - syncStart))
                lastValueStored = lastValueStored && stable
                if let counter {
                    beforeSync.append(counter.count(from: burstStart, to: syncStart))
                    syncReplacements.append(counter.count(from: syncStart))
                }
            }
        }

        // Bursts spread over 2 s: call i at start + i × 2 ms.
        var spreadReplacements: [Int] = [], spreadSpans: [Double] = []
        for _ in 0..<spreadBursts {
            let start = DispatchTime.now().uptimeNanoseconds
            var lastReturn = start
            for i in 0..<burst {
                let due = start + UInt64(i) * 2_000_000
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
                value += 1
                coalesced.k0 = value
                lastReturn = DispatchTime.now().uptimeNanoseconds
            }
            _ = counter?.waitQuiet(since: lastReturn, quiet: 3 * interval)
            if counter == nil { Thread.sleep(forTimeInterval: 3 * interval) }
            lastValueStored = lastValueStored && storedK0() == value
            spreadSpans.append(Double(lastReturn - start))
            if let counter { spreadReplacements.append(counter.count(from: start)) }
        }
        if let error = coalesced.lastError ?? durable.lastError {
            FileHandle.standardError.write(Data("prefs-bench: a coalescing row failed: \(error)\n".utf8))
            return false
        }

        // The peers' bursts.
        var kconfigRuns: [[Double]] = [], gsettingsRuns: [Peers.GSettingsBurst] = []
        for _ in 0..<peerRuns {
            if let figures = kconfig?.burst(iterations: burst) { kconfigRuns.append(figures) }
            if let figures = gsettings?.burst(iterations: burst) { gsettingsRuns.append(figures) }
        }

        let cMedian = Bench.median(coalescedCalls), cP99 = percentile99(coalescedCalls)
        let dMedian = Bench.median(durableSamples), dP99 = percentile99(durableSamples)
        let ratio = dMedian / cMedian
        let spans = String(format: "%.1f ms", Bench.median(burstSpans) / 1e6)
        print("prefs-bench: coalesced writes (interval \(interval) s), bursts of \(burstName) calls, \(rounds) rounds")
        print(String(repeating: "-", count: 78))
        func row(_ name: String, _ figure: String, _ note: String) {
            print("\(name.padding(toLength: 50, withPad: " ", startingAt: 0)) \(figure)   \(note)")
        }
        func count(_ n: Int) -> String { String(format: "%9d   ", n) }
        row("coalesced set  setter median, \(burstName)-call burst", Bench.format(cMedian), String(format: "durable/coalesced %.0f×", ratio))
        row("coalesced set  setter p99", Bench.format(cP99), "\(coalescedCalls.count) calls")
        row("durable set    setter median (durable at return)", Bench.format(dMedian), "1.00× durable")
        row("durable set    setter p99", Bench.format(dP99), "\(durableSamples.count) calls")
        let untilFigure = untilDurable.isEmpty ? nil : Bench.median(untilDurable)
        if counter != nil, !fastReplacements.isEmpty {
            row("fast burst     file replacements", count(fastReplacements.max() ?? 0),
                "max of \(fastReplacements.count) bursts (\(fastReplacements.map(String.init).joined(separator: ", "))), each \(spans)")
            row("spread burst   file replacements", count(spreadReplacements.max() ?? 0),
                String(format: "max of %d, each %.2f s (%@)", spreadReplacements.count, (spreadSpans.max() ?? 0) / 1e9,
                    spreadReplacements.map(String.init).joined(separator: ", ")))
            if let untilFigure {
                row("fast burst     last call -> file replaced", Bench.format(untilFigure),
                    String(format: "interval %+.1f ms (a durable setter: %.1f ms)", (untilFigure - interval * 1e9) / 1e6, dMedian / 1e6))
            } else {
                row("fast burst     last call -> file replaced", "     none   ", "no replacement in a burst")
            }
        } else {
            row("fast burst     file replacements", "      n/a   ", "(no inotify here)")
            row("spread burst   file replacements", "      n/a   ", "(no inotify here)")
            row("fast burst     last call -> file replaced", "      n/a   ", "(no inotify here)")
        }
        let syncMedian = Bench.median(syncTimes)
        var syncNote = String(format: "%.2f× a durable setter", syncMedian / dMedian)
        if !syncReplacements.isEmpty {
            syncNote += "; by it: \(syncReplacements.map(String.init).joined(separator: ", ")); burst before it: \(beforeSync.map(String.init).joined(separator: ", "))"
        }
        row("synchronize()  right after a fast burst", Bench.format(syncMedian), syncNote)
        if !kconfigRuns.isEmpty {
            let median = Bench.median(kconfigRuns.map { $0[0] }), p99 = Bench.median(kconfigRuns.map { $0[1] })
            let sync = Bench.median(kconfigRuns.map { $0[2] })
            row("KConfig        writeEntry median, \(burstName)-call burst", Bench.format(median), String(format: "coalesced setter %.2f× it", cMedian / median))
            row("KConfig        writeEntry p99", Bench.format(p99), String(format: "coalesced setter %.2f× it", cP99 / p99))
            row("KConfig        sync() after the burst", Bench.format(sync), String(format: "synchronize() %.2f× it", syncMedian / sync))
        } else if kconfig == nil {
            print(Peers.kconfigMissing(enabled: config.peers))
        } else {
            print("KConfig        (the burst program failed; see stderr)")
        }
        if !gsettingsRuns.isEmpty {
            let label = gsettingsRuns[0].label
            let median = Bench.median(gsettingsRuns.map(\.median)), p99 = Bench.median(gsettingsRuns.map(\.p99))
            let sync = Bench.median(gsettingsRuns.map(\.sync))
            let replacements = gsettingsRuns.map { String($0.replacements) }.joined(separator: ", ")
            let fallback = label == "dconf" ? "" : "; GLib's keyfile backend: dconf cannot run here"
            row("GSettings      g_settings_set_int median (\(label))", Bench.format(median),
                String(format: "coalesced setter %.2f× it", cMedian / median) + fallback)
            row("GSettings      g_settings_set_int p99", Bench.format(p99), String(format: "coalesced setter %.2f× it", cP99 / p99))
            row("GSettings      g_settings_sync() after the burst", Bench.format(sync), String(format: "synchronize() %.2f× it", syncMedian / sync))
            row("GSettings      file replacements for the burst", count(gsettingsRuns.map(\.replacements).max() ?? 0),
                "max of \(gsettingsRuns.count) runs (\(replacements))")
        } else if gsettings == nil {
            print(Peers.gsettingsMissing(enabled: config.peers))
        } else {
            print("GSettings      (the burst program failed; see stderr)")
        }
        if !lastValueStored { print("(a burst's last value was not in the file after it: see the targets)") }

        let speedOK = cMedian <= 5_000 && ratio >= 50
        print(String(format: "target: coalesced setter median ≤ 5 µs (%.2f µs) and ≤ 1/50 of the durable setter (1/%.0f): %@",
            cMedian / 1000, ratio, speedOK ? "met" : "MISSED"))
        let allowed = Int((2.0 / interval).rounded(.up)) + 1
        if let spread = spreadReplacements.max() {
            print("target: \(burstName) calls over 2 s ≤ \(allowed) file replacements (\(spread)): \(spread <= allowed ? "met" : "MISSED")")
        } else {
            print("target: \(burstName) calls over 2 s ≤ \(allowed) file replacements: n/a (no inotify here)")
        }
        if let untilFigure {
            let bound = interval * 1e9 + dMedian
            let met = untilFigure <= bound && lastValueStored
            print(String(format: "target: durable ≤ interval + one durable write after the last call (%.1f ms ≤ %.1f ms): %@",
                untilFigure / 1e6, bound / 1e6, met ? "met" : "MISSED"))
        } else if counter != nil {
            print("target: durable ≤ interval + one durable write after the last call: MISSED (no replacement after a burst)")
        } else {
            print("target: durable ≤ interval + one durable write after the last call: n/a (no inotify here)")
        }
        let oneWrite = syncReplacements.isEmpty || syncReplacements.allSatisfy { $0 == 1 }
        let syncOK = oneWrite && syncMedian <= 1.5 * dMedian && lastValueStored
        let madeFigure = syncReplacements.isEmpty ? "" : "replacements by each call: \(Set(syncReplacements).sorted().map(String.init).joined(separator: "/")); "
        print(String(format: "target: synchronize() after a burst costs one durable write (%@%.2f× a durable setter, ≤ 1.5×): %@",
            madeFigure, syncMedian / dMedian, syncOK ? "met" : "MISSED"))
        return true
    }

    /// The 99th percentile of `samples`.
    static func percentile99(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }
}

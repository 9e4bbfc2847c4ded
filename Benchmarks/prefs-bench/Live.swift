import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// The live-set rows: how fast another process's write reaches an observer here, and what
/// observing costs an idle process.
enum Live {
    struct Latency {
        /// From the writer's setter being called to the handler running.
        let median: Double
        let p99: Double
        /// From the writer's setter returning: negative when the handler ran first (readers take
        /// no lock, so they see the new file while the writer still flushes the folder and
        /// releases its lock).
        let medianFromReturn: Double
        let count: Int
    }

    /// Milliseconds from the writer process's setter being called (and returning) to this
    /// process's handler running, for `changes` writes spaced 4 ms apart (so each is its own
    /// event), or `nil` when the writer failed. Both sides read `CLOCK_MONOTONIC`, which is one
    /// clock for the whole machine.
    static func propagation(suite: String, changes: Int) -> Latency? {
        guard let store = UserDefaultsStore(suiteName: suite), let executable = Bundle.main.executableURL else { return nil }
        defer { Bench.removeSuite(store, suite: suite) }
        let prefs = SamplePrefs(key: "Live", store: store)
        prefs.int = 0
        let arrivals = ArrivalLog()
        let observation = prefs.observeChanges(to: [SamplePrefs.Key.int.rawValue]) { _ in
            let now = DispatchTime.now().uptimeNanoseconds
            arrivals.record(SamplePrefs(key: "Live", store: store).int, at: now)
        }
        defer { observation.cancel() }

        guard let printed = Bench.output(of: executable, arguments: ["--propagation-writer=\(suite),\(changes)"]) else { return nil }
        Thread.sleep(forTimeInterval: 0.2)  // the last event

        var latencies: [Double] = []
        var fromReturn: [Double] = []
        let arrived = arrivals.first
        for line in String(decoding: printed, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let value = Int(fields[0]), let called = UInt64(fields[1]), let returned = UInt64(fields[2]),
                let seen = arrived[value]
            else { continue }
            latencies.append((Double(seen) - Double(called)) / 1_000_000)
            fromReturn.append((Double(seen) - Double(returned)) / 1_000_000)
        }
        guard !latencies.isEmpty else { return nil }
        latencies.sort()
        fromReturn.sort()
        let p99 = latencies[min(latencies.count - 1, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)]
        return Latency(
            median: latencies[latencies.count / 2], p99: p99, medianFromReturn: fromReturn[fromReturn.count / 2], count: latencies.count)
    }

    /// The writer process: `SUITE,COUNT`; sets the int to 1…COUNT, printing each value and the
    /// monotonic times its setter was called and returned.
    static func writer(arguments: String) -> Int32 {
        let parts = arguments.split(separator: ",")
        guard parts.count == 2, let count = Int(parts[1]), let store = UserDefaultsStore(suiteName: String(parts[0])) else { return 2 }
        let prefs = SamplePrefs(key: "Live", store: store)
        var lines = ""
        for value in 1...count {
            let called = DispatchTime.now().uptimeNanoseconds
            prefs.int = value
            let returned = DispatchTime.now().uptimeNanoseconds
            guard prefs.lastError == nil else { return 1 }
            lines += "\(value) \(called) \(returned)\n"
            Thread.sleep(forTimeInterval: 0.004)
        }
        FileHandle.standardOutput.write(Data(lines.utf8))
        return 0
    }

    /// Milliseconds of CPU time (user + system) this process spends in `seconds` while holding
    /// `sets` observed sets (half in a suite, half in a `PlistFileStore` folder) and nothing
    /// changes.
    static func idleCPU(seconds: Double, sets: Int) -> Double {
        let suite = "prefs-bench-idle-\(getpid())"
        guard let store = UserDefaultsStore(suiteName: suite) else { return .nan }
        defer { Bench.removeSuite(store, suite: suite) }
        let folder = NSTemporaryDirectory() + "prefs-bench-idle-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let files = PlistFileStore(directory: URL(fileURLWithPath: folder))
        var held: [(SamplePrefs, PrefsObservation)] = []
        for index in 0..<sets {
            let prefs = SamplePrefs(key: "Idle \(index)", store: index.isMultiple(of: 2) ? store : files)
            held.append((prefs, prefs.observeChanges { _ in }))
        }
        // Let the setup's events settle, and the pooled threads that delivered them retire
        // (libdispatch lets an idle one go after about 5 s): what is measured is a quiet process.
        Thread.sleep(forTimeInterval: 6)
        let before = cpuMilliseconds()
        Thread.sleep(forTimeInterval: seconds)
        let spent = cpuMilliseconds() - before
        for (_, observation) in held { observation.cancel() }
        return spent
    }

    private static func cpuMilliseconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        let user = Double(usage.ru_utime.tv_sec) * 1000 + Double(usage.ru_utime.tv_usec) / 1000
        let system = Double(usage.ru_stime.tv_sec) * 1000 + Double(usage.ru_stime.tv_usec) / 1000
        return user + system
    }
}

/// When each value first reached the handler.
final class ArrivalLog: @unchecked Sendable {  // `arrivals` is only touched while holding `lock`
    private let lock = NSLock()
    private var arrivals: [Int: UInt64] = [:]

    func record(_ value: Int, at time: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        if arrivals[value] == nil { arrivals[value] = time }
    }

    var first: [Int: UInt64] {
        lock.lock()
        defer { lock.unlock() }
        return arrivals
    }
}

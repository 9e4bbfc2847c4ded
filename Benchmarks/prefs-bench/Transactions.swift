import Foundation
import PersistentPrefs
import PersistentPrefsSample

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ten `@Pref` integers, for the batch rows.
final class TenPrefs: PersistentPrefs {
    @Pref("P0") var p0 = 0
    @Pref("P1") var p1 = 0
    @Pref("P2") var p2 = 0
    @Pref("P3") var p3 = 0
    @Pref("P4") var p4 = 0
    @Pref("P5") var p5 = 0
    @Pref("P6") var p6 = 0
    @Pref("P7") var p7 = 0
    @Pref("P8") var p8 = 0
    @Pref("P9") var p9 = 0
    @Pref("Count") var counter = 0

    /// Sets property `index % 10` to `value`.
    func setOne(_ index: Int, _ value: Int) {
        switch index % 10 {
        case 0: p0 = value
        case 1: p1 = value
        case 2: p2 = value
        case 3: p3 = value
        case 4: p4 = value
        case 5: p5 = value
        case 6: p6 = value
        case 7: p7 = value
        case 8: p8 = value
        default: p9 = value
        }
    }
}

/// A set that accepts the keys "k0" … "k9999".
final class WideBenchPrefs: PersistentPrefs {
    static let allKeys = (0..<10_000).map { "k\($0)" }
    override var keys: [String] { Self.allKeys }
}

/// A set that declares 1,000 keys, for a fresh process's first write of a 1,000-key set: its
/// first write publishes the schema of the keys it declares.
final class ThousandBenchPrefs: PersistentPrefs {
    static let allKeys = Array(WideBenchPrefs.allKeys.prefix(1000))
    override var keys: [String] { Self.allKeys }
}

/// The transaction rows: batches against single sets, `update` against a set, four processes
/// incrementing at once, and the one-key write against its hand-written floor.
enum TransactionRows {
    /// Prints the rows; returns `false` when a write failed.
    ///
    /// - Parameter kconfig: KConfig's program (see ``Peers``), timed in step with the library's
    ///   one-key write, its 1,000-key write and its batch of 1,000 keys; `nil`: no KConfig rows.
    static func run(suite: String, config: Bench.Config, kconfig: Peers.Program?) -> Bool {
        guard let store = UserDefaultsStore(suiteName: suite) else { return false }
        defer { Bench.removeSuite(store, suite: suite) }
        let ten = TenPrefs(key: "Ten", store: store)
        ten.values = [:]
        let reps = config.repetitions
        let writes = config.writeIterations

        // One-key write vs the floor: the same XML bytes, written crash-safely by hand.
        let floorFile = floorPath()
        defer { unlink(floorFile) }
        ten.p0 = 1
        let suiteFile = suiteFilePath(suite)
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: suiteFile))) ?? Data(repeating: 0x20, count: 600)
        var singleCases: [() -> Double] = [
            { Bench.time(iterations: writes) { i in ten.p0 = i } },
            { Bench.time(iterations: writes) { _ in crashSafeWrite(bytes, to: floorFile) } },
            { Bench.time(iterations: writes) { _ in try? ten.update(\.counter) { $0 += 1 } } },
        ]
        // KConfig: writeEntry of one key + sync() (which fdatasyncs), in a group of 11 keys.
        if let kconfig { singleCases.append { kconfig.time("write11", iterations: writes) ?? .infinity } }
        let single = Bench.compare(repetitions: reps, singleCases)

        // Batches of 10 and 1,000 @Pref sets vs as many single sets.
        let batches = Bench.compare(repetitions: reps, [
            { Bench.time(iterations: writes) { i in ten.batch { for n in 0..<10 { $0.setOne(n, i + n) } } } },
            { Bench.time(iterations: max(1, writes / 10)) { i in for n in 0..<10 { ten.setOne(n, i + n) } } },
            { Bench.time(iterations: writes) { i in ten.batch { for n in 0..<1000 { $0.setOne(n, i + n) } } } },
        ])
        // 1,000 single sets take over a second each time: fewer repetitions.
        let thousandSingles = Bench.compare(repetitions: max(3, reps / 5), warmUp: 1, [
            { Bench.time(iterations: 1) { i in for n in 0..<1000 { ten.setOne(n, i + n) } } }
        ])[0]

        // A 1,000-key set, one key written; and the 5-key set beside a 10,000-key root key.
        let wide = WideBenchPrefs(key: "Wide", store: store)
        wide.batch { prefs in for n in 0..<1000 { prefs["k\(n)"] = n } }
        let beside = WideBenchPrefs(key: "Big", store: store)
        var sizeCases: [() -> Double] = [
            { Bench.time(iterations: max(2, writes / 4)) { i in wide["k0"] = i } },
            { Bench.time(iterations: max(2, writes / 4)) { i in wide.batch { for n in 0..<1000 { $0["k\(n)"] = i + n } } } },
        ]
        // A fresh process's first batch after the set's first write (see ``firstBatch(suite:)``).
        let firstBatchSuite = suite + "-first"
        sizeCases.append { Self.timeFirstBatch(suite: firstBatchSuite) ?? .infinity }
        // A fresh process's first write of the set, with no write before it (see ``freshBatch(suite:)``).
        sizeCases.append { Self.timeFirstBatch(suite: firstBatchSuite, fresh: true) ?? .infinity }
        if let kconfig {  // the same writes into a KConfig group of 1,000 keys
            sizeCases.append { kconfig.time("write1000", iterations: max(2, writes / 4)) ?? .infinity }
            sizeCases.append { kconfig.time("batch1000", iterations: max(2, writes / 4)) ?? .infinity }
            // kconfig-bench writes and syncs the group once before it times: N = 1 is its first batch.
            sizeCases.append { kconfig.time("batch1000", iterations: 1) ?? .infinity }
            sizeCases.append { kconfig.time("fresh1000", iterations: 1) ?? .infinity }
        }
        let sizes = Bench.compare(repetitions: max(3, reps / 3), warmUp: 1, sizeCases)
        beside.batch { prefs in for n in 0..<10_000 { prefs["k\(n)"] = n } }
        wide.values = [:]
        let besideBig = Bench.compare(repetitions: max(3, reps / 3), warmUp: 1, [
            { Bench.time(iterations: max(2, writes / 4)) { i in ten.p0 = i } }
        ])[0]
        beside.values = [:]
        let files = NSTemporaryDirectory() + "prefs-bench-tx-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: files) }
        let fileStore = PlistFileStore(directory: URL(fileURLWithPath: files))
        let fileTen = TenPrefs(key: "Ten", store: fileStore)
        WideBenchPrefs(key: "Big", store: fileStore).batch { prefs in for n in 0..<10_000 { prefs["k\(n)"] = n } }
        let fileRows = Bench.compare(repetitions: max(3, reps / 3), warmUp: 1, [
            { Bench.time(iterations: max(2, writes / 4)) { i in fileTen.p0 = i } }
        ])[0]

        // Reading a suite holding a 1,000-key set that another process just wrote (its bytes
        // differ from the last read, so nothing is reused): the library's reader vs Foundation's
        // parser and cast, each after rewriting the file (no fsync) with one of two variants.
        guard let suiteFile = WrittenSuite(url: URL(fileURLWithPath: files + "/read-1000.plist")) else { return false }
        let suiteReads = Bench.compare(repetitions: max(3, reps / 3), warmUp: 1, [
            { Bench.time(iterations: writes) { i in consume(suiteFile.readByLibrary(i)) } },
            { Bench.time(iterations: writes) { i in consume(suiteFile.readByFoundation(i)) } },
        ])

        let failed = [ten, wide, beside, fileTen].compactMap(\.lastError).first
        if let failed {
            FileHandle.standardError.write(Data("prefs-bench: a transaction row failed: \(failed)\n".utf8))
            return false
        }

        let incr = increments(suite: suite + "-incr", processes: 4, each: config.quickIncrements ? 50 : 250)

        var rows: [(String, Double, String)] = [
            ("durable write  @Pref set, 11-key set", single[0], String(format: "%.2f× floor", single[0] / single[1])),
            ("floor          same XML bytes, crash-safe by hand", single[1], "1.00× floor"),
            ("update         update(\\.counter) { $0 += 1 }", single[2], String(format: "%.2f× a set", single[2] / single[0])),
            ("batch of 10    @Pref sets", batches[0], String(format: "%.1f× faster than 10 sets", batches[1] / batches[0])),
            ("10 sets        one write each", batches[1], String(format: "%.1f× one set", batches[1] / single[0])),
            (
                "batch of 1,000 @Pref sets", batches[2],
                String(format: "%.2f× one set; %.0f× faster than 1,000 sets", batches[2] / single[0], thousandSingles / batches[2])
            ),
            ("1,000 sets     one write each", thousandSingles, String(format: "%.0f× one set", thousandSingles / single[0])),
            ("1,000-key set  one key written", sizes[0], String(format: "%.1f× a set of 11", sizes[0] / single[0])),
            ("1,000-key set  batch of all 1,000 keys", sizes[1], String(format: "%.2f× one key of it", sizes[1] / sizes[0])),
            ("1,000-key set  a fresh process's first batch", sizes[2], String(format: "%.2f× a warm batch", sizes[2] / sizes[1])),
            ("1,000-key set  its first write, nothing before", sizes[3], String(format: "%.2f× a warm batch", sizes[3] / sizes[1])),
            ("beside 10,000  set in a suite with a 10,000-key set", besideBig, String(format: "%.1f× alone", besideBig / single[0])),
            ("beside 10,000  the same, PlistFileStore", fileRows, String(format: "%.2f× UserDefaultsStore alone", fileRows / single[0])),
            ("read suite     1,000-key set another process wrote", suiteReads[0], String(format: "%.2f× Foundation's", suiteReads[0] / suiteReads[1])),
            ("Foundation     PropertyListSerialization + as?", suiteReads[1], "1.00×"),
        ]
        if kconfig != nil {
            rows += [
                ("KConfig        writeEntry + sync, 11-key group", single[3], String(format: "the 11-key write %.2f× it", single[0] / single[3])),
                ("KConfig        writeEntry + sync, 1,000-key group", sizes[4], String(format: "the 1,000-key write %.2f× it", sizes[0] / sizes[4])),
                ("KConfig        1,000 writeEntry + sync", sizes[5], String(format: "the batch of 1,000 %.2f× it", sizes[1] / sizes[5])),
                ("KConfig        the same, a fresh process's first", sizes[6], String(format: "the first batch %.2f× it", sizes[2] / sizes[6])),
                ("KConfig        its first write, nothing before", sizes[7], String(format: "the first write %.2f× it", sizes[3] / sizes[7])),
            ]
        }
        for (name, ns, ratio) in rows {
            print("\(name.padding(toLength: 50, withPad: " ", startingAt: 0)) \(Bench.format(ns))   \(ratio)")
        }
        if kconfig == nil { print(Peers.kconfigMissing(enabled: config.peers)) }
        if let incr {
            print(
                String(
                    format: "4 processes    update increments at once: %.0f/s, %d of %d lost", incr.perSecond, incr.lost, incr.total))
        } else {
            print("4 processes    (an increment worker failed; see stderr)")
        }
        print("target: batch of 1,000 ≥ 500× faster than 1,000 sets: \(thousandSingles / batches[2] >= 500 ? "met" : "MISSED")")
        print("target: batch of 1,000 ≤ 1.2× one set: \(batches[2] / single[0] <= 1.2 ? "met" : "MISSED")")
        print("target: update ≤ 1.2× a set: \(single[2] / single[0] <= 1.2 ? "met" : "MISSED")")
        print("target: one-key write ≤ 1.3× the hand-written crash-safe floor: \(single[0] / single[1] <= 1.3 ? "met" : "MISSED")")
        // Issue #22's targets for large sets.
        let wideFigure = String(format: "%.2f ms", sizes[0] / 1e6)
        print("target: 1,000-key write ≤ 1.5 ms (\(wideFigure)): \(sizes[0] <= 1_500_000 ? "met" : "MISSED")")
        let wideRatio = String(format: "%.2f×", sizes[0] / single[0])
        print("target: 1,000-key write ≤ 2× the 11-key write (\(wideRatio)): \(sizes[0] / single[0] <= 2 ? "met" : "MISSED")")
        let batchFigure = String(format: "%.2f ms", sizes[1] / 1e6)
        print("target: batch of 1,000 keys ≤ 2.5 ms (\(batchFigure)): \(sizes[1] <= 2_500_000 ? "met" : "MISSED")")
        if kconfig != nil {
            print("target: 1,000-key write ≤ 1.0× KConfig's: \(sizes[0] <= sizes[4] ? "met" : "MISSED")")
            print("target: batch of 1,000 keys ≤ 1.0× KConfig's: \(sizes[1] <= sizes[5] ? "met" : "MISSED")")
            print("target: a fresh process's first batch ≤ 1.5× KConfig's: \(sizes[2] <= 1.5 * sizes[6] ? "met" : "MISSED")")
            print("target: a fresh process's first write, nothing before, ≤ 1.5× KConfig's: \(sizes[3] <= 1.5 * sizes[7] ? "met" : "MISSED")")
        }
        return true
    }

    /// Where the floor row (and `--write-once=SUITE,N,floor`) writes: a file of this process's own.
    static func floorPath() -> String {
        NSTemporaryDirectory() + "prefs-bench-floor-\(getpid()).plist"
    }

    /// Writes `bytes` to `path` the crash-safe way, by hand: a temporary file, `fsync`, `rename`,
    /// and an `fsync` of the folder.
    static func crashSafeWrite(_ bytes: Data, to path: String) {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        fsync(descriptor)
        close(descriptor)
        rename(temporary, path)
        let folder = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    static func suiteFilePath(_ suite: String) -> String {
        PreferencesFile.preferencesDirectory.path + "/\(suite).plist"
    }

    struct Increments {
        let perSecond: Double
        let lost: Int
        let total: Int
    }

    /// Starts `processes` copies of this program, each doing `each` update increments of one key
    /// at once; returns the rate and how many increments are missing at the end.
    static func increments(suite: String, processes: Int, each: Int) -> Increments? {
        guard let store = UserDefaultsStore(suiteName: suite), let executable = Bundle.main.executableURL else { return nil }
        defer { Bench.removeSuite(store, suite: suite) }
        let started = DispatchTime.now().uptimeNanoseconds
        let workers = (0..<processes).map { _ -> Process in
            let worker = Process()
            worker.executableURL = executable
            worker.arguments = ["--increment-worker=\(suite),\(each)"]
            return worker
        }
        do { for worker in workers { try worker.run() } } catch { return nil }
        for worker in workers { worker.waitUntilExit() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        guard workers.allSatisfy({ $0.terminationStatus == 0 }) else { return nil }
        let total = processes * each
        let final = TenPrefs(key: "Counter", store: store).counter
        return Increments(perSecond: Double(total) / seconds, lost: total - final, total: total)
    }

    /// The worker process: `SUITE,COUNT` update increments of "Count" under the root key "Counter".
    static func incrementWorker(arguments: String) -> Int32 {
        let parts = arguments.split(separator: ",")
        guard parts.count == 2, let count = Int(parts[1]), let store = UserDefaultsStore(suiteName: String(parts[0])) else { return 2 }
        let prefs = TenPrefs(key: "Counter", store: store)
        for _ in 0..<count {
            do { try prefs.update(\.counter) { $0 += 1 } } catch { return 1 }
        }
        return 0
    }

    /// A suite file holding a 1,000-key set as another process just wrote it: each read first
    /// rewrites it (no `fsync`) with one of two variants that mean the same, so no read finds
    /// the bytes it read last.
    struct WrittenSuite {
        let url: URL
        let variants: [Data]
        let file: PreferencesFile

        init?(url: URL) {
            let thousand = Dictionary(uniqueKeysWithValues: (0..<1000).map { ("k\($0)", $0) })
            guard let document = try? PropertyListSerialization.data(fromPropertyList: ["Wide": thousand], format: .xml, options: 0)
            else { return nil }
            self.url = url
            variants = [document, document + Data("\n".utf8)]
            file = PreferencesFile(url: url)
        }

        func readByLibrary(_ i: Int) -> Any? {
            try? variants[i % 2].write(to: url)
            return (try? file.contents())?["Wide"]
        }

        func readByFoundation(_ i: Int) -> Any? {
            try? variants[i % 2].write(to: url)
            let data = (try? Data(contentsOf: url)) ?? Data()
            return ((try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any])?["Wide"]
        }
    }

    /// Nanoseconds of a fresh process's first batch (see ``firstBatch(suite:)``, or with `fresh`
    /// ``freshBatch(suite:)``), run in a child process; `nil` when it failed.
    static func timeFirstBatch(suite: String, fresh: Bool = false) -> Double? {
        guard let executable = Bundle.main.executableURL,
            let data = Bench.output(of: executable, arguments: [(fresh ? "--fresh-batch=" : "--first-batch=") + suite])
        else { return nil }
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The child of ``timeFirstBatch(suite:)``, as `kconfig-bench FILE batch1000 1` times
    /// KConfig: in a new suite, writes a 1,000-key set once (untimed, as KConfig's program writes
    /// and syncs its group first), then prints the nanoseconds of one batch of all 1,000 keys.
    static func firstBatch(suite: String) -> Int32 {
        guard let store = UserDefaultsStore(suiteName: suite) else { return 2 }
        defer { Bench.removeSuite(store, suite: suite) }
        let wide = WideBenchPrefs(key: "Wide", store: store)
        wide.batch { prefs in for n in 0..<1000 { prefs[WideBenchPrefs.allKeys[n]] = n } }
        let ns = Bench.time(iterations: 1) { _ in
            wide.batch { prefs in for n in 0..<1000 { prefs[WideBenchPrefs.allKeys[n]] = n + 1 } }
        }
        guard wide.lastError == nil else { return 1 }
        print(ns)
        return 0
    }

    /// The child of ``timeFirstBatch(suite:fresh:)`` with `fresh`, as a program meets its first
    /// write and as `kconfig-bench FILE fresh1000 1` times KConfig: in a new suite with nothing
    /// stored, reads one key (untimed), then prints the nanoseconds of one batch of all 1,000 keys.
    static func freshBatch(suite: String) -> Int32 {
        guard let store = UserDefaultsStore(suiteName: suite) else { return 2 }
        defer { Bench.removeSuite(store, suite: suite) }
        let wide = ThousandBenchPrefs(key: "Wide", store: store)
        guard wide[ThousandBenchPrefs.allKeys[0]] == nil else { return 1 }
        let ns = Bench.time(iterations: 1) { _ in
            wide.batch { prefs in for n in 0..<1000 { prefs[ThousandBenchPrefs.allKeys[n]] = n } }
        }
        guard wide.lastError == nil else { return 1 }
        print(ns)
        return 0
    }

    /// For `strace -c`, callgrind and `perf`: `SUITE,N,batch|single|batches|wide|widebatch` sets N
    /// `@Pref` values in one batch or one by one, writes N batches of 10, or N times one key of (or
    /// all of) a 1,000-key set; `SUITE,N,floor` writes the 11-key set's file N times as the floor
    /// row does; `FOLDER,N,read` reads N times a suite file of a 1,000-key set (see ``WrittenSuite``).
    /// `single`, `unwatched` (`single` in a process that watches no set) and `floor` print the median
    /// time of one write in microseconds, so processes run in turn compare the watcher's cost.
    static func writeOnce(arguments: String) -> Int32 {
        let parts = arguments.split(separator: ",")
        guard parts.count == 3, let count = Int(parts[1]) else { return 2 }
        if parts[2] == "unwatched" {
            return PersistentPrefs.$watchesSets.withValue(false) { writeOnce(arguments: "\(parts[0]),\(count),single") }
        }
        let target = String(parts[0])
        if parts[2] == "read" {
            try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            guard let suiteFile = WrittenSuite(url: URL(fileURLWithPath: target + "/read-1000.plist")) else { return 2 }
            for i in 0..<count where suiteFile.readByLibrary(i) == nil { return 1 }
            return 0
        }
        if parts[2] == "floor" && target.hasPrefix("/") { return 2 }  // the floor row writes a suite's file
        let store: any PrefsStore
        if target.hasPrefix("/") {  // a PlistFileStore folder, removed after
            store = PlistFileStore(directory: URL(fileURLWithPath: target))
        } else {
            guard let suite = UserDefaultsStore(suiteName: target) else { return 2 }
            store = suite
        }
        defer {
            if let suite = store as? UserDefaultsStore {
                Bench.removeSuite(suite, suite: target)
            } else {
                try? FileManager.default.removeItem(atPath: target)
            }
        }
        if parts[2] == "floor" {  // the floor row: the set's file, written N times crash-safely by hand
            let prefs = TenPrefs(key: "Ten", store: store)
            prefs.p0 = 1
            guard prefs.lastError == nil, let bytes = try? Data(contentsOf: URL(fileURLWithPath: suiteFilePath(target))) else { return 1 }
            let floorFile = floorPath()
            defer { unlink(floorFile) }
            printMedian(timing: count) { _ in crashSafeWrite(bytes, to: floorFile) }
            return 0
        }
        if parts[2] == "wide" || parts[2] == "widebatch" {  // N writes into (or batches of) a 1,000-key set
            let wide = WideBenchPrefs(key: "Wide", store: store)
            wide.batch { prefs in for n in 0..<1000 { prefs[WideBenchPrefs.allKeys[n]] = n } }
            for i in 0..<count {
                if parts[2] == "wide" {
                    wide["k0"] = i
                } else {
                    wide.batch { prefs in for n in 0..<1000 { prefs[WideBenchPrefs.allKeys[n]] = i + n } }
                }
            }
            return wide.lastError == nil ? 0 : 1
        }
        let prefs = TenPrefs(key: "Ten", store: store)
        _ = prefs.values
        if parts[2] == "batch" {
            prefs.batch { for n in 0..<count { $0.setOne(n, n) } }
        } else if parts[2] == "batches" {
            for n in 0..<count { prefs.batch { for k in 0..<10 { $0.setOne(k, n + k) } } }
        } else {
            printMedian(timing: count) { n in prefs.setOne(n, n) }
        }
        return prefs.lastError == nil ? 0 : 1
    }

    /// Runs `body` `count` times (with 0, 1, …), each timed alone, and prints the median in microseconds.
    private static func printMedian(timing count: Int, _ body: (Int) -> Void) {
        guard count > 0 else { return }
        let times = (0..<count).map { n in Bench.time(iterations: 1) { _ in body(n) } }
        print(String(format: "%.1f", Bench.median(times) / 1000))
    }
}

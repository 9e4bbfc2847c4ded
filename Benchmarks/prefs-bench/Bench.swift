import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// Keeps the optimiser from discarding a benchmark's work.
@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The benchmark driver: times each case with warm-up and repetitions, prints medians.
enum Bench {
    struct Config {
        var repetitions = 21
        var readIterations = 200_000
        var writeIterations = 40
        var otherRoots = 1000
        var propagationChanges = 250
        var idleSeconds: Double = 10
        var readsOnly = false
        var quickIncrements = false
        var transactionsOnly = false
        /// Whether to time the peers' programs too (see ``Peers``).
        var peers = true
        /// Only the coalesced-write rows (see ``CoalescingRows``).
        var coalescingOnly = false
    }

    /// Nanoseconds per operation, median over repetitions.
    static func median(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        return sorted[sorted.count / 2]
    }

    /// Times `iterations` calls of `body`, returning nanoseconds per call.
    static func time(iterations: Int, _ body: (Int) -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<iterations { body(i) }
        let end = DispatchTime.now().uptimeNanoseconds
        return Double(end - start) / Double(iterations)
    }

    /// Runs cases round-robin (one repetition of each, then the next), so slow drift of a
    /// noisy machine hits every case alike. Returns the median ns/op of each case.
    static func compare(repetitions: Int, warmUp: Int = 2, _ cases: [() -> Double]) -> [Double] {
        for _ in 0..<warmUp { for run in cases { _ = run() } }
        var samples = Array(repeating: [Double](), count: cases.count)
        for _ in 0..<repetitions {
            for (index, run) in cases.enumerated() { samples[index].append(run()) }
        }
        return samples.map(median)
    }

    /// What `executable` printed, run with `arguments` to its end; `nil` when it could not be
    /// started or did not exit with 0.
    static func output(of executable: URL, arguments: [String]) -> Data? {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        do { try process.run() } catch { return nil }
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? printed : nil
    }

    static func format(_ ns: Double) -> String {
        ns >= 10_000 ? String(format: "%9.1f µs", ns / 1000) : String(format: "%9.1f ns", ns)
    }

    static func run(arguments: [String]) -> Int32 {
        var config = Config()
        for argument in arguments {
            switch argument {
            case "--quick":
                let (readsOnly, transactionsOnly, peers) = (config.readsOnly, config.transactionsOnly, config.peers)
                config = Config(
                    repetitions: 7, readIterations: 20_000, writeIterations: 10, otherRoots: 100, propagationChanges: 50,
                    idleSeconds: 2, readsOnly: readsOnly, quickIncrements: true, transactionsOnly: transactionsOnly, peers: peers,
                    coalescingOnly: config.coalescingOnly)
            case "--transactions":
                config.transactionsOnly = true
            case "--reads":
                config.readsOnly = true
            case "--coalescing":
                config.coalescingOnly = true
            case "--no-peers":
                config.peers = false
            case "--idle":
                // Only the idle row: a process holding 100 observed sets, for `strace -f -tt`.
                print(String(format: "idle         CPU of 100 observed sets for %2.0f s     %8.2f ms", config.idleSeconds, Live.idleCPU(seconds: config.idleSeconds, sets: 100)))
                return 0
            case "--help", "-h":
                print("usage: prefs-bench [--quick] [--reads | --transactions | --coalescing | --idle] [--no-peers]")
                print("  --quick         fewer repetitions (a smoke run)")
                print("  --reads         only the read rows (for comparing read-path changes)")
                print("  --transactions  only the write, batch and update rows")
                print("  --coalescing    only the coalesced-write rows (bursts of setter calls)")
                print("  --idle          only the idle row (100 observed sets, nothing changing)")
                print("  --no-peers      leave out the KConfig and GSettings rows (timed when installed)")
                return 0
            case _ where argument.hasPrefix("--propagation-writer="):
                // The other process of the propagation row (see ``Live/propagation``).
                return Live.writer(arguments: String(argument.dropFirst("--propagation-writer=".count)))
            case _ where argument.hasPrefix("--increment-worker="):
                // One of the processes of the concurrent-increment row.
                return TransactionRows.incrementWorker(arguments: String(argument.dropFirst("--increment-worker=".count)))
            case _ where argument.hasPrefix("--first-batch="):
                // The child of the row of a fresh process's first batch.
                return TransactionRows.firstBatch(suite: String(argument.dropFirst("--first-batch=".count)))
            case _ where argument.hasPrefix("--fresh-batch="):
                // The child of the row of a fresh process's first write, nothing written before.
                return TransactionRows.freshBatch(suite: String(argument.dropFirst("--fresh-batch=".count)))
            case _ where argument.hasPrefix("--write-once="):
                // SUITE,N,MODE: N writes in one process, for `strace -c`, callgrind and `perf`
                // (see ``TransactionRows/writeOnce(arguments:)``).
                return TransactionRows.writeOnce(arguments: String(argument.dropFirst("--write-once=".count)))
            default:
                FileHandle.standardError.write(Data("prefs-bench: unknown argument '\(argument)'\n".utf8))
                return 2
            }
        }
        let suite = "prefs-bench-\(getpid())"
        guard let store = UserDefaultsStore(suiteName: suite) else {
            FileHandle.standardError.write(Data("prefs-bench: cannot open suite \(suite)\n".utf8))
            return 1
        }
        defer { removeSuite(store, suite: suite) }
        #if DEBUG
            print("warning: a debug build; run `swift run -c release prefs-bench` for real figures\n")
        #endif
        if config.coalescingOnly {
            return CoalescingRows.run(suite: suite + "-co", config: config) ? 0 : 1
        }
        // Built (when installed) before anything is timed.
        let kconfig = Peers.kconfig(enabled: config.peers)
        if config.transactionsOnly {
            print("prefs-bench: transaction rows, medians of \(config.repetitions) repetitions")
            print(String(repeating: "-", count: 78))
            return TransactionRows.run(suite: suite + "-tx", config: config, kconfig: kconfig) ? 0 : 1
        }

        let prefs = SamplePrefs(key: "Bench", store: store)
        let intKey = SamplePrefs.Key.int.rawValue
        let defaults = store.userDefaults
        // The same five values, as a plain dictionary of native Swift values.
        let bare: [String: Any] = [
            intKey: 12345, "String Value": "Any String", "Array Value": ["One", "Two"],
            "Dictionary Value": ["One": "1"], "Date Value": Date(),
        ]

        // Reads, with an observer on the set and the watcher running (as in a live app).
        let stringKey = SamplePrefs.Key.string.rawValue
        let observed = prefs.observeChanges { _ in }
        defer { observed.cancel() }
        var readCases: [() -> Double] = [
            {
                time(iterations: config.readIterations) { _ in consume(prefs.int) }
            },
            {
                time(iterations: config.readIterations) { _ in consume(bare[intKey] as? Int) }
            },
            {
                time(iterations: config.readIterations) { _ in consume(prefs.string) }
            },
            {
                time(iterations: config.readIterations) { _ in consume(bare[stringKey] as? String) }
            },
            {
                // What RVS_PersistentPrefs does: re-read the root dictionary on every access.
                time(iterations: config.readsOnly ? 1 : config.readIterations / 20) { _ in
                    consume(defaults.dictionary(forKey: "Bench")?[intKey] as? Int)
                }
            },
        ]
        // The reads users reach for beside a stored `Int`: an enum `@Pref`, a `@Pref` whose key is
        // not stored (it reads its default), and the base class's subscript, as the seed reads it.
        let audio = AudioPrefs(key: "BenchAudio", store: store)
        audio.theme = .dark
        readCases.append { time(iterations: config.readIterations) { _ in consume(audio.theme) } }
        readCases.append { time(iterations: config.readIterations) { _ in consume(audio.muted) } }
        readCases.append { time(iterations: config.readIterations) { _ in consume(prefs[intKey] as? Int) } }
        // The subscript alone: what the library costs of the row above (the rest is the cast).
        readCases.append { time(iterations: config.readIterations) { _ in consume(prefs[intKey]) } }
        if let kconfig, !config.readsOnly {  // KConfig's readEntry of an int and a string, in step
            readCases.append { kconfig.time("readint", iterations: config.readIterations) ?? .infinity }
            readCases.append { kconfig.time("readstring", iterations: config.readIterations) ?? .infinity }
        }
        let reads = compare(repetitions: config.repetitions, readCases)

        if config.readsOnly {
            print(String(format: "typed read Int    %6.1f ns  %.2f× bare (%.1f ns)", reads[0], reads[0] / reads[1], reads[1]))
            print(String(format: "typed read String %6.1f ns  %.2f× bare (%.1f ns)", reads[2], reads[2] / reads[3], reads[3]))
            print(String(format: "enum @Pref read   %6.1f ns  %.2f× Int read", reads[5], reads[5] / reads[0]))
            print(String(format: "default-key read  %6.1f ns  %.2f× Int read", reads[6], reads[6] / reads[0]))
            print(String(format: "subscript as? Int %6.1f ns  %.2f× bare", reads[7], reads[7] / reads[1]))
            print(String(format: "subscript, no as? %6.1f ns  %.2f× bare", reads[8], reads[8] / reads[1]))
            return 0
        }

        // Writes: one key through the library vs the same dictionary straight to UserDefaults, in a
        // suite of its own (a plain writer on the library's suite puts it in its careful mode,
        // measured on the row after).
        let rawSuite = suite + "-raw"
        guard let rawStore = UserDefaultsStore(suiteName: rawSuite) else { return 1 }
        defer { removeSuite(rawStore, suite: rawSuite) }
        let rawDefaults = rawStore.userDefaults
        let sharedSuite = suite + "-shared"
        guard let sharedStore = UserDefaultsStore(suiteName: sharedSuite) else { return 1 }
        defer { removeSuite(sharedStore, suite: sharedSuite) }
        let shared = SamplePrefs(key: "Bench", store: sharedStore)
        var snapshot = prefs.values
        let writes = compare(repetitions: config.repetitions, [
            {
                time(iterations: config.writeIterations) { i in prefs.int = i }
            },
            {
                time(iterations: config.writeIterations) { i in
                    snapshot[intKey] = i
                    rawDefaults.set(snapshot, forKey: "Raw")
                    _ = rawDefaults.synchronize()
                }
            },
            {
                // Beside plain UserDefaults code writing the same suite: one plain save first.
                time(iterations: config.writeIterations) { i in
                    if i == 0 {
                        sharedStore.userDefaults.set(i, forKey: "Plain")
                        _ = sharedStore.userDefaults.synchronize()
                    }
                    shared.int = i
                }
            },
        ])
        // PlistFileStore: a write's cost should not depend on how many other sets share the folder.
        let folder = NSTemporaryDirectory() + "prefs-bench-files-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alone = SamplePrefs(key: "Bench", store: PlistFileStore(directory: URL(fileURLWithPath: folder + "/alone")))
        let crowdedStore = PlistFileStore(directory: URL(fileURLWithPath: folder + "/crowded"))
        for index in 0..<config.otherRoots {
            try? crowdedStore.save(["Integer Value": NSNumber(value: index)], root: "Other \(index)")
        }
        let crowded = SamplePrefs(key: "Bench", store: crowdedStore)
        let files = compare(repetitions: config.repetitions, [
            { time(iterations: config.writeIterations) { i in alone.int = i } },
            { time(iterations: config.writeIterations) { i in crowded.int = i } },
        ])

        if let error = prefs.lastError ?? shared.lastError ?? alone.lastError ?? crowded.lastError {
            FileHandle.standardError.write(Data("prefs-bench: a write failed: \(error)\n".utf8))
            return 1
        }

        var rows: [(String, Double, String)] = [
            ("typed read  SamplePrefs.int", reads[0], String(format: "%.2f× bare", reads[0] / reads[1])),
            ("bare        [String: Any] lookup + as? Int", reads[1], "1.00× bare"),
            ("typed read  SamplePrefs.string", reads[2], String(format: "%.2f× bare", reads[2] / reads[3])),
            ("bare        [String: Any] lookup + as? String", reads[3], "1.00× bare"),
            ("reload      UserDefaults.dictionary per read", reads[4], String(format: "%.1f× bare Int", reads[4] / reads[1])),
            ("enum read   AudioPrefs.theme (stored)", reads[5], String(format: "%.2f× typed Int", reads[5] / reads[0])),
            ("default     AudioPrefs.muted (not stored)", reads[6], String(format: "%.2f× typed Int", reads[6] / reads[0])),
            ("subscript   prefs[\"Integer Value\"] as? Int", reads[7], String(format: "%.2f× bare", reads[7] / reads[1])),
            ("subscript   prefs[\"Integer Value\"], no cast", reads[8], String(format: "%.2f× bare", reads[8] / reads[1])),
            ("durable write  prefs.int = n", writes[0], String(format: "%.3f× raw", writes[0] / writes[1])),
            ("raw write      set + synchronize()", writes[1], "1.000× raw"),
            ("shared write   prefs.int = n, plain writer too", writes[2], String(format: "%.1f× raw", writes[2] / writes[1])),
            ("file write     PlistFileStore, 1 set", files[0], String(format: "%.3f× raw", files[0] / writes[1])),
            (
                "file write     PlistFileStore, \(config.otherRoots + 1) sets", files[1],
                String(format: "%.3f× 1 set", files[1] / files[0])
            ),
        ]
        if reads.count == 11 {
            rows.insert(("KConfig     readEntry(key, 0) of an int", reads[9], String(format: "SamplePrefs.int %.2f× it", reads[0] / reads[9])), at: 9)
            rows.insert(("KConfig     readEntry(key, QString())", reads[10], String(format: "SamplePrefs.string %.2f× it", reads[2] / reads[10])), at: 10)
        }
        print("prefs-bench: medians of \(config.repetitions) repetitions (\(config.readIterations) reads, \(config.writeIterations) writes each)")
        print(String(repeating: "-", count: 78))
        for (name, ns, ratio) in rows {
            print("\(name.padding(toLength: 46, withPad: " ", startingAt: 0)) \(format(ns))   \(ratio)")
        }
        let propagation = Live.propagation(suite: suite + "-live", changes: config.propagationChanges)
        let idle = Live.idleCPU(seconds: config.idleSeconds, sets: 100)
        if let propagation {
            print(String(format: "propagation  B's setter call -> A's handler, median%8.2f ms", propagation.median))
            print(String(format: "propagation  same, p99 (%d changes)               %8.2f ms", propagation.count, propagation.p99))
            print(String(format: "propagation  B's setter return -> A's handler     %8.2f ms (< 0: heard first)", propagation.medianFromReturn))
        } else {
            print("propagation  (the writer process failed; see stderr)")
        }
        print(String(format: "idle         CPU of 100 observed sets for %2.0f s     %8.2f ms", config.idleSeconds, idle))
        print(String(repeating: "-", count: 78))
        guard TransactionRows.run(suite: suite + "-tx", config: config, kconfig: kconfig) else { return 1 }
        print(String(repeating: "-", count: 78))
        let readOK = reads[0] / reads[1] <= 2 && reads[2] / reads[3] <= 2
        let answersOnce = reads[5] / reads[0] <= 1.2 && reads[6] / reads[0] <= 1.2 && reads[7] / reads[1] <= 2
        let writeOK = writes[0] / writes[1] <= 1.1
        print("target: typed read within 2× of bare (Int and String): \(readOK ? "met" : "MISSED")")
        print("target: enum and default-key reads ≤ 1.2× an Int read, subscript ≤ 2× bare: \(answersOnce ? "met" : "MISSED")")
        if let propagation {
            let met = propagation.median <= 5 && propagation.p99 <= 50
            print("target: propagation median ≤ 5 ms, p99 ≤ 50 ms: \(met ? "met" : "MISSED")")
        }
        print("target: durable write within 1.1× of raw: \(writeOK ? "met" : "MISSED")")
        if !writeOK {
            print("        (the crash-safe write replaces the file atomically: a rename and a directory fsync")
            print("         more than UserDefaults' in-place rewrite, which a crash can leave empty)")
        }
        // Last, so that no background write of a coalesced set overlaps another row.
        print(String(repeating: "-", count: 78))
        return CoalescingRows.run(suite: suite + "-co", config: config) ? 0 : 1
    }

    static func removeSuite(_ store: UserDefaultsStore, suite: String) {
        store.userDefaults.removePersistentDomain(forName: suite)
        _ = store.userDefaults.synchronize()
        let base = PreferencesFile.preferencesDirectory.path
        // The file, its sidecars and the folder of schemas its sets publish (asking for it waits for them).
        for suffix in [".plist", ".plist.lock", ".plist.damaged"] {
            try? FileManager.default.removeItem(atPath: base + "/\(suite)" + suffix)
        }
        if let schemas = store.schemaFileURL(forRoot: suite)?.deletingLastPathComponent() {
            try? FileManager.default.removeItem(at: schemas)
        }
    }
}

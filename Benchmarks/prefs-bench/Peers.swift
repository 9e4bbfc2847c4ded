import Foundation

/// Programs built on the stores the library is compared with, timed in the same run as the
/// library's rows (one repetition of each in turn, see ``Bench/compare(repetitions:warmUp:_:)``).
///
/// Each program times its own loop and prints nanoseconds per operation, so starting it costs
/// nothing in the figure. Built from `Benchmarks/peers` by `build.sh` when the peer is installed;
/// a peer that is not installed gives no row.
enum Peers {
    /// The KConfig program, or `nil` when KConfig is not installed (`libkf5config-dev`) or
    /// `enabled` is `false` (`--no-peers`).
    static func kconfig(enabled: Bool) -> Program? {
        enabled ? built()["kconfig-bench"] : nil
    }

    /// Why there is no KConfig row, for the output.
    static func kconfigMissing(enabled: Bool) -> String {
        enabled ? "(no KConfig rows: KConfig is not installed; apt-get install libkf5config-dev)" : "(no KConfig rows: --no-peers)"
    }

    /// A peer's benchmark program.
    struct Program {
        let path: String

        /// Nanoseconds per operation of `mode` (see `Benchmarks/peers/kconfig-bench.cpp`) over
        /// `iterations` operations, on a fresh file; `nil` when the program failed.
        func time(_ mode: String, iterations: Int) -> Double? {
            let folder = NSTemporaryDirectory() + "prefs-bench-peer-\(getpid())"
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let arguments = [folder + "/\(mode).ini", mode, String(iterations)]
            guard let data = Bench.output(of: URL(fileURLWithPath: path), arguments: arguments) else { return nil }
            return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// The programs `Benchmarks/peers/build.sh` built, by name.
    private static func built() -> [String: Program] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("peers/build.sh").path
        guard FileManager.default.isExecutableFile(atPath: script) else { return [:] }
        guard let data = Bench.output(of: URL(fileURLWithPath: "/usr/bin/env"), arguments: ["bash", script]) else { return [:] }
        var programs: [String: Program] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1)
            if fields.count == 2 { programs[String(fields[0])] = Program(path: String(fields[1])) }
        }
        return programs
    }
}

import Foundation

/// Programs built on the stores the library is compared with, timed in the same run as the
/// library's rows (one repetition of each in turn, see ``Bench/compare(repetitions:warmUp:_:)``).
///
/// Each program times its own loop and prints nanoseconds per operation, so starting it costs
/// nothing in the figure. Built from `Benchmarks/peers` by `build.sh` when the peer is installed;
/// a peer that is not installed gives no row. The burst rows (``CoalescingRows``) take several
/// figures from one run of a program instead: per-call median and 99th percentile, then the call
/// that makes the burst durable.
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

    /// The GSettings program, or `nil` when GLib's development files are not installed
    /// (`libglib2.0-dev`) or `enabled` is `false` (`--no-peers`).
    static func gsettings(enabled: Bool) -> GSettingsProgram? {
        enabled ? built()["gsettings-bench"].map { GSettingsProgram(path: $0.path) } : nil
    }

    /// Why there is no GSettings row, for the output.
    static func gsettingsMissing(enabled: Bool) -> String {
        enabled ? "(no GSettings rows: GLib's headers are not installed; apt-get install libglib2.0-dev)" : "(no GSettings rows: --no-peers)"
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

        /// KConfig's burst (mode `burst` of `kconfig-bench.cpp`): `iterations` `writeEntry` calls
        /// of one key of an 11-key group, then one `sync()`, on a fresh file. Returns the median and
        /// 99th percentile of one call and the time of the `sync()`, in nanoseconds; `nil` when the
        /// program failed.
        func burst(iterations: Int) -> [Double]? {
            let folder = NSTemporaryDirectory() + "prefs-bench-peer-\(getpid())"
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let arguments = [folder + "/burst.ini", "burst", String(iterations)]
            guard let data = Bench.output(of: URL(fileURLWithPath: path), arguments: arguments) else { return nil }
            let figures = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
            return figures.count == 3 ? figures : nil
        }
    }

    /// What one run of `gsettings-bench.c` measured.
    struct GSettingsBurst {
        /// Median and 99th percentile of one `g_settings_set_int` call, nanoseconds.
        let median: Double
        let p99: Double
        /// The `g_settings_sync()` after the burst, nanoseconds.
        let sync: Double
        /// Replacements of the backend's file from the burst's first call until 300 ms after the sync.
        let replacements: Int
        /// The backend, as the row names it: "dconf", or "keyfile" (GLib's keyfile backend, when
        /// dconf cannot run here).
        let label: String
    }

    /// The GSettings program (`gsettings-bench.c`) and the schema `build.sh` compiled beside it.
    struct GSettingsProgram {
        let path: String

        /// A burst of `iterations` `g_settings_set_int` calls and one `g_settings_sync()`, with
        /// dconf as the backend (under `dbus-run-session`, which starts a session bus and, on the
        /// first change, `dconf-service`); with GLib's keyfile backend when dconf cannot run here.
        /// Configuration and runtime folders are throwaway ones (`XDG_CONFIG_HOME`,
        /// `XDG_RUNTIME_DIR`), removed after; `nil` when the program failed with both backends.
        func burst(iterations: Int) -> GSettingsBurst? {
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-run-session"),
                let figures = run(iterations: iterations, backend: "dconf"), figures.label == "DConfSettingsBackend"
            {
                return GSettingsBurst(median: figures.median, p99: figures.p99, sync: figures.sync, replacements: figures.replacements, label: "dconf")
            }
            guard let figures = run(iterations: iterations, backend: "keyfile"), figures.label == "GKeyfileSettingsBackend" else { return nil }
            return GSettingsBurst(
                median: figures.median, p99: figures.p99, sync: figures.sync, replacements: figures.replacements,
                label: "keyfile")
        }

        /// One run with `backend` (`GSETTINGS_BACKEND`); the label is the backend's type the
        /// program reports. What the program and the bus print on stderr is shown only when it fails.
        private func run(iterations: Int, backend: String) -> GSettingsBurst? {
            let folder = NSTemporaryDirectory() + "prefs-bench-gsettings-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o700]
            for sub in ["config", "run"] {
                try? FileManager.default.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true, attributes: attributes)
            }
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = nil
            environment["GSETTINGS_SCHEMA_DIR"] = (path as NSString).deletingLastPathComponent + "/gsettings-schemas"
            environment["GSETTINGS_BACKEND"] = backend
            environment["XDG_CONFIG_HOME"] = folder + "/config"
            environment["XDG_RUNTIME_DIR"] = folder + "/run"
            let process = Process()
            if backend == "dconf" {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-run-session")
                process.arguments = ["--", path, String(iterations)]
            } else {
                process.executableURL = URL(fileURLWithPath: path)
                process.arguments = [String(iterations)]
            }
            process.environment = environment
            let output = Pipe()
            process.standardOutput = output
            let errors = folder + "/stderr"
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: errors)
            do { try process.run() } catch { return nil }
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let fields = String(decoding: printed, as: UTF8.self).split(whereSeparator: \.isWhitespace)
            guard process.terminationStatus == 0, fields.count == 6, let median = Double(fields[0]), let p99 = Double(fields[1]),
                let sync = Double(fields[2]), let replacements = Int(fields[3])
            else {
                if let said = FileManager.default.contents(atPath: errors) { FileHandle.standardError.write(said) }
                return nil
            }
            return GSettingsBurst(median: median, p99: p99, sync: sync, replacements: replacements, label: String(fields[5]))
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

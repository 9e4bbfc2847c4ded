import Foundation
import PersistentPrefs
import PersistentPrefsSync

/// `sync FOLDER [--watch]` and `sync-status FOLDER`: the set under the root key of `--suite`, synced through a folder
/// an engine replicates (see `PrefsSync`).
enum SyncCommands {
    /// One pass (or, with `watch`, passes until Ctrl-C) of the session's set through `folder`.
    ///
    /// - Throws: ``HarnessError/usage(_:)`` without `--suite` or at the prompt with `watch`;
    ///   ``HarnessError/refused(_:)`` when some value was refused (each named on stdout first) or the pass failed.
    static func sync(folder: String, watch: Bool, json: Bool, session: HarnessSession, console: Console) throws {
        let suite = try suiteName(session, command: "sync")
        let sync = try refusing { try PrefsSync(folder: URL(fileURLWithPath: folder)) }
        let set = try HarnessSet.of(session)
        let printer = SerialConsole(console)
        let root = session.rootKey
        func run(_ prefs: PersistentPrefs) throws {
            // `nil`: the keys the set's program recorded as this device's own stay home. Passes run on this thread,
            // where a program's set has its schema version bound (``SchemaSet``), never on the library's queue.
            let report = try refusing {
                try SignalGuard.deferringSignals { try sync.start(prefs, suite: suite, localKeys: nil, live: false) }
            }
            for line in lines(report, folder: folder, suite: suite, root: root, json: json) { printer.print(line) }
            guard watch else {
                guard report.refused.isEmpty else {
                    throw HarnessError.refused(
                        "\(report.refused.count) value\(report.refused.count == 1 ? "" : "s") from other devices refused (named above); the set keeps its own")
                }
                return
            }
            try watchPasses(sync, prefs: prefs, refused: report.refused, suite: suite, folder: folder, json: json, console: console)
        }
        if let file = set.file {
            _ = try SchemaSet.change(root: session.rootKey, store: session.store, schema: set.schema, file: file) { try run($0) }
        } else {
            try run(try session.prefs())
        }
    }

    /// `sync --watch` after its first pass: a pass each time the set or its folder changes (changes within half a
    /// second joining one), every ``PrefsSync/pollInterval`` too on a network or FUSE file system, and
    /// ``PrefsSync/retryDelay`` after one that failed; one report per pass that applied something, refused something
    /// it had not refused before, or warns. Ends with the process, on Ctrl-C (exit 0).
    private static func watchPasses(
        _ sync: PrefsSync, prefs: PersistentPrefs, refused first: [PrefsSyncReport.Refusal], suite: String, folder: String, json: Bool,
        console: Console
    ) throws -> Never {
        let root = prefs.key
        let wake = DispatchSemaphore(value: 0)
        let setFolder = try refusing { try sync.setFolder(suite: suite, root: root) }
        let stopWatching = FolderWatching.watch(setFolder) { wake.signal() }
        let observation = prefs.observeChanges { _ in wake.signal() }
        let polled = FolderWatching.remoteFileSystem(at: folder) != nil
        WatchCommand.exitOnInterrupt()
        console.error("Syncing \"\(root)\" of \(suite) through \(folder); Ctrl-C to stop.")
        var refused = Set(first.map(\.key))
        while true {
            _ = wake.wait(timeout: polled ? .now() + PrefsSync.pollInterval : .distantFuture)
            usleep(500_000)
            while wake.wait(timeout: .now()) == .success {}  // the changes meanwhile join this pass
            do {
                let report = try SignalGuard.deferringSignals { try sync.syncNow() }
                let now = Set(report.refused.map(\.key))
                if !report.applied.isEmpty || !now.subtracting(refused).isEmpty || !report.warnings.isEmpty {
                    for line in lines(report, folder: folder, suite: suite, root: root, json: json) { console.print(line) }
                }
                refused = now
            } catch {
                console.error("error: \(error) (tried again in \(Int(PrefsSync.retryDelay)) s)")
                DispatchQueue.global().asyncAfter(deadline: .now() + PrefsSync.retryDelay) { wake.signal() }
            }
            withExtendedLifetime((stopWatching, observation)) {}
        }
    }

    /// What the folder holds for the session's set: devices, when each last wrote, where each value came from.
    static func status(folder: String, json: Bool, session: HarnessSession, console: Console) throws {
        let suite = try suiteName(session, command: "sync-status")
        let status = try refusing {
            try PrefsSync(folder: URL(fileURLWithPath: folder)).status(suite: suite, root: session.rootKey)
        }
        if json {
            let object: [String: Any] = [
                "folder": status.setFolder.path,
                "devices": status.devices.map {
                    ["device": $0.identity, "thisDevice": $0.isThisDevice, "lastWrote": timestamp($0.lastWrote), "files": $0.files] as [String: Any]
                },
                "keys": status.entries.map {
                    ["key": $0.key, "value": $0.value ?? NSNull(), "reset": $0.value == nil, "device": $0.device, "time": $0.time.map(timestamp) ?? NSNull()] as [String: Any]
                },
                "skipped": status.skippedFiles.map { ["path": $0.path, "reason": $0.reason] },
            ]
            return console.print(ValueFormatter.jsonText(object))
        }
        console.print("\(status.setFolder.path):")
        if status.devices.isEmpty { console.print("No device has synced \"\(session.rootKey)\" of \(suite) here yet.") }
        for device in status.devices {
            console.print("  device \(device.identity)\(device.isThisDevice ? " (this device)" : "")  last wrote \(timestamp(device.lastWrote))")
            if device.files.count > 1 { device.files.forEach { console.print("    \($0)") } }
        }
        for entry in status.entries {
            let value = entry.value.map { "= \(ValueFormatter.text($0))" } ?? "(reset)"
            let when = entry.time.map { "at \(timestamp($0))" } ?? "(held when it first synced)"
            console.print("  \(entry.key) \(value)  from \(entry.device) \(when)")
        }
        for skipped in status.skippedFiles { console.print("  skipped \(skipped.path): \(skipped.reason)") }
    }

    /// The suite `--suite` names: the set's name on every device.
    private static func suiteName(_ session: HarnessSession, command: String) throws -> String {
        guard case .suite(let suite) = session.storeChoice else {
            throw HarnessError.usage("\(command) needs --suite SUITE: the suite's name and the root key name the set on every device")
        }
        return suite
    }

    /// A pass's report as printed.
    private static func lines(_ report: PrefsSyncReport, folder: String, suite: String, root: String, json: Bool) -> [String] {
        if json {
            let object: [String: Any] = [
                "folder": folder, "suite": suite, "root": root, "applied": report.applied.map(\.key),
                "refused": report.refused.map { ["key": $0.key, "reason": $0.reason] },
                "skipped": report.skippedFiles.map { ["path": $0.path, "reason": $0.reason] }, "warnings": report.warnings,
            ]
            return [ValueFormatter.jsonText(object)]
        }
        var lines = [
            report.applied.isEmpty
                ? "Synced \"\(root)\" of \(suite) through \(folder): nothing new from other devices."
                : "Synced \"\(root)\" of \(suite) through \(folder): applied \(report.applied.map(\.key).joined(separator: ", ")) from other devices."
        ]
        lines += report.refused.map { "refused \($0.key): \($0.reason)" }
        lines += report.skippedFiles.map { "skipped \($0.path): \($0.reason)" }
        lines += report.warnings.map { "warning: \($0)" }
        return lines
    }

    private static func timestamp(_ time: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: time)
    }
}

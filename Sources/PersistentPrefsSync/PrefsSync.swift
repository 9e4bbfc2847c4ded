import Foundation
import PersistentPrefs

/// Syncs preference sets across machines through a folder that an engine replicates (Syncthing, Nextcloud, Dropbox,
/// iCloud Drive, a git repository): each device writes its own file per set there, and merges everyone else's.
///
/// ```swift
/// let sync = try PrefsSync(folder: URL(fileURLWithPath: "/home/me/Sync/prefs"))
/// try sync.start(prefs, localKeys: ["Window Frame"])
/// try sync.syncNow()
/// sync.stop()
/// ```
///
/// For each key, the value set last wins (a stamp of wall time, a counter and the device, where a change made after
/// seeing another always comes after it). Only values set on a device are published, never defaults; device-local
/// keys and the schema version never sync; a value this device's set refuses (its keys, `@Pref` declarations,
/// validators, locked keys) is reported, not applied; a fresh install takes the folder's values and overwrites none.
/// Not yet: publishing a change on its own within a second and merging as the folder changes (call ``syncNow()``).
public final class PrefsSync: @unchecked Sendable {  // `sets` is guarded by `lock`; the rest is immutable
    /// The folder the engine replicates.
    public let folder: URL

    private let files: SyncFolder
    private let state: DeviceState
    private let device: String?
    private let clock: @Sendable () -> Date
    private let lock = NSLock()
    private var sets: [Started] = []

    private struct Started {
        let prefs: PersistentPrefs
        let suite: String
        let localKeys: Set<String>
    }

    /// Syncs through `folder`, which must exist (an engine's folder that is missing may be a drive not mounted).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when `folder` is not a folder.
    public convenience init(folder: URL) throws {
        try self.init(folder: folder, device: nil, clock: { Date() })
    }

    /// Syncs through `folder` as the device `device` (the identity kept for the folder when `nil`), reading the wall
    /// time from `clock`, keeping the device's state under `stateFolder` (`$XDG_STATE_HOME/PersistentPrefsSync`, or
    /// Application Support on Apple platforms, when `nil`). Tests give all three.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when `folder` is not a folder, or
    ///   ``PersistentPrefs/PrefsError/invalidValue(key:reason:)`` for an identity that cannot be one.
    public init(folder: URL, device: String?, clock: @escaping @Sendable () -> Date, stateFolder: URL? = nil) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw PersistentPrefs.PrefsError.ioError(
                path: folder.path, reason: "the sync folder does not exist (make it, or mount the drive it is on, then start again)")
        }
        if let device, !DeviceFile.isIdentity(device) {
            throw PersistentPrefs.PrefsError.invalidValue(key: "device", reason: "\"\(device)\" is not a device identity (1–64 letters, digits, - and _)")
        }
        self.folder = folder
        files = SyncFolder(url: folder)
        state = stateFolder.map { DeviceState(syncFolder: folder, root: $0) } ?? DeviceState(syncFolder: folder)
        self.device = device
        self.clock = clock
    }

    /// Syncs `prefs`'s set from now on, and makes a first pass (as ``syncNow()`` does for it).
    ///
    /// - Parameters:
    ///   - prefs: Any instance whose set is kept in a named `UserDefaults` suite (the suite's name and the root key name
    ///     the set on every device).
    ///   - localKeys: Keys never published or applied on this device (window frames, state). Kept in the device's
    ///     record, so every process syncing the set on this device keeps them home.
    /// - Returns: What the first pass did.
    /// - Throws: Why the set cannot sync (no suite name, a name no folder can hold), or what the pass threw.
    @discardableResult
    public func start(_ prefs: PersistentPrefs, localKeys: Set<String> = []) throws -> PrefsSyncReport {
        guard let suite = try prefs.syncSuiteName() else {
            throw PersistentPrefs.PrefsError.invalidValue(
                key: prefs.key,
                reason: "the set is not kept in a named UserDefaults suite, so it has no name alike on every device; name it with start(_:suite:localKeys:)")
        }
        return try start(prefs, suite: suite, localKeys: localKeys)
    }

    /// ``start(_:localKeys:)`` for a set named `suite` in the sync folder, whatever keeps it on this device (another
    /// suite, a `PlistFileStore`, a store of your own): devices whose sets have the same `suite` and root key sync.
    @discardableResult
    public func start(_ prefs: PersistentPrefs, suite: String, localKeys: Set<String> = []) throws -> PrefsSyncReport {
        _ = try files.setFolder(suite: suite, root: prefs.key)  // a name no folder can hold is refused here
        let started = Started(prefs: prefs, suite: suite, localKeys: localKeys)
        lock.withLock { sets.append(started) }
        return try pass([started])
    }

    /// Publishes every started set's changes and merges the other devices' files now; returns when done.
    ///
    /// - Returns: What the pass did: values refused (each named, with why), files skipped, warnings.
    /// - Throws: What stopped a set's pass (its state locked by another process too long, a file that cannot be
    ///   written); the sets before it were synced.
    @discardableResult
    public func syncNow() throws -> PrefsSyncReport {
        try pass(lock.withLock { sets })
    }

    /// Stops syncing every set (a pass in progress finishes).
    public func stop() {
        lock.withLock { sets = [] }
    }

    private func pass(_ started: [Started]) throws -> PrefsSyncReport {
        var report = PrefsSyncReport()
        for set in started { try pass(set, into: &report) }
        return report
    }

    /// One pass of one set, holding the device's lock: keep the record, write the device file, write the merged values
    /// into the set, keep the record again, remove the copies merged (see ``SyncPass``).
    private func pass(_ set: Started, into report: inout PrefsSyncReport) throws {
        let root = set.prefs.key
        let setFolder = try files.setFolder(suite: set.suite, root: root)
        try state.locked {
            var me: String
            if let device {
                me = device
            } else {
                let (identity, problem) = try state.identity()
                me = identity
                if let problem { report.warnings.append(problem) }
            }
            let recordPath = try state.recordFile(suite: set.suite, root: root)
            var (kept, damage) = state.record(at: recordPath)
            kept.localKeys = set.localKeys
            if kept.lastWritten?.device != me { kept.lastWritten = nil }

            var scan = files.scan(setFolder, me: me, lastWritten: kept.lastWritten)
            if kept.lastWritten == nil, let own = scan.own {
                // No record of the device's own file (lost, or never kept for this identity): taken from the file.
                if kept.record.started { kept.lastWritten = own } else { kept = .rebuilt(from: own, localKeys: set.localKeys) }
            }
            if let damage {
                let outcome = kept.lastWritten == nil
                    ? "the set syncs as a fresh install: it takes the folder's values and overwrites none"
                    : "it was rebuilt from this device's file in the folder"
                report.warnings.append(damage + "; " + outcome)
            }
            if let clone = scan.clone {
                let old = me
                guard device == nil else {
                    throw PersistentPrefs.PrefsError.invalidValue(
                        key: "device", reason: "\(clone) holds the identity \(old) given to this PrefsSync, but this device did not write it: another machine uses it")
                }
                me = try state.newIdentity()
                report.warnings.append(
                    "\(clone) holds this device's identity \(old) but this device did not write it (a copied home folder?); this device took the identity \(me)")
                kept.lastWritten = nil
                scan = files.scan(setFolder, me: me, lastWritten: nil)
            }
            report.skippedFiles.append(contentsOf: scan.skipped.map { PrefsSyncReport.SkippedFile(path: $0.path, reason: $0.reason) })

            let unsynced = set.localKeys.union([PersistentPrefs.schemaVersionKey])
            var local: [String: SyncValue] = [:]
            for (key, value) in try set.prefs.syncStoredValues() where !unsynced.contains(key) {
                if let value = SyncValue(plist: value) { local[key] = value }
            }
            let others = scan.others.map { found in
                var log = found.log
                log.entries = log.entries.filter { !unsynced.contains($0.key) }
                return log
            }
            var replica = SyncReplica(log: kept.lastWritten ?? DeviceLog(device: me), state: kept.record)
            var refusals: [String: PersistentPrefs.PrefsError] = [:]
            let now = Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
            let result = replica.pass(local: local, others: others, now: now) { key, value in
                guard let refusal = set.prefs.refusal(of: value?.plist, forKey: key) else { return true }
                refusals[key] = refusal
                return false
            }

            // The record first: a crash after it publishes nothing twice and loses nothing (the next pass finds the rest).
            kept.record = result.state
            if let log = result.log { kept.lastWritten = log }
            try state.keep(kept, at: recordPath)
            if let log = result.log {
                try files.write(log, in: setFolder)
            } else if scan.own == nil, let log = kept.lastWritten {
                try files.write(log, in: setFolder)  // the device's file went missing: written again
            }
            if !result.changes.isEmpty {
                let pending = result.state.pending
                try set.prefs.update { values in
                    for (key, value) in result.changes {
                        // A key changed on this device since the pass read the set keeps that change; the next pass
                        // publishes it, stamped after the merged one.
                        guard Self.same(values[key], pending[key]?.before) else { continue }
                        values[key] = value?.plist
                    }
                }
                report.applied.append(contentsOf: result.changes.keys.sorted().map { PrefsSyncReport.Key(root: root, key: $0) })
            }
            kept.record = replica.applied()
            try state.keep(kept, at: recordPath)
            for failure in files.removeCopies(scan.others) {
                report.skippedFiles.append(PrefsSyncReport.SkippedFile(path: failure.path, reason: "a copy merged but not removed: \(failure.reason)"))
            }
            for key in result.refused {
                let why = refusals[key] ?? set.prefs.refusal(of: replica.state.entries[key]?.value?.plist, forKey: key)
                report.refused.append(PrefsSyncReport.Refusal(root: root, key: key, reason: why.map { "\($0)" } ?? "refused"))
            }
        }
    }

    private static func same(_ left: Any?, _ right: SyncValue?) -> Bool {
        switch (left.flatMap(SyncValue.init(plist:)), right) {
        case (nil, nil): return left == nil
        case let (value?, expected?): return value == expected
        default: return false
        }
    }
}

/// What a ``PrefsSync`` pass did.
public struct PrefsSyncReport: Sendable, Equatable {
    /// A key of a set.
    public struct Key: Sendable, Equatable {
        /// The set's root key.
        public let root: String
        /// The key.
        public let key: String
    }

    /// A value from another device that this device's set refused.
    public struct Refusal: Sendable, Equatable {
        /// The set's root key.
        public let root: String
        /// The key whose value was refused.
        public let key: String
        /// Why, as the set's vetting says it.
        public let reason: String
    }

    /// A file in the sync folder that was not merged.
    public struct SkippedFile: Sendable, Equatable {
        /// The file's path.
        public let path: String
        /// Why (a link, another user's, damaged, a newer format, …).
        public let reason: String
    }

    /// Values merged into this device's sets.
    public var applied: [Key] = []
    /// Values this device's sets refused (asked again on every pass; taken once the set accepts them).
    public var refused: [Refusal] = []
    /// Files skipped.
    public var skippedFiles: [SkippedFile] = []
    /// What else a person should know: a new identity taken, a damaged record replaced.
    public var warnings: [String] = []
}

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
///
/// Live: a change of a started set is published within a second (changes in that time coalesced into one write of the
/// device's file, off the thread that made them), and a change of the folder is merged as the operating system reports
/// it; on a network or FUSE file system, which reports only this machine's changes, the folder is looked at every
/// ``pollInterval`` as well. ``lastReport`` and ``lastError`` tell what the latest pass did.
public final class PrefsSync: @unchecked Sendable {  // `live` is guarded by `lock`; passes by `passes`; the rest is immutable
    /// The folder the engine replicates.
    public let folder: URL

    private let files: SyncFolder
    private let state: DeviceState
    private let device: String?
    private let clock: @Sendable () -> Date
    private let lock = NSLock()
    /// Held for a whole pass: one pass of this object at a time, whichever thread asks.
    private let passes = NSLock()
    private let queue = DispatchQueue(label: "PersistentPrefsSync.PrefsSync")
    private var live = Live()

    /// How long a change waits for others to join its pass.
    static let coalescingDelay: TimeInterval = 0.5
    /// How often a folder on a network or FUSE file system is looked at.
    public static let pollInterval: TimeInterval = 5
    /// How long after a live pass failed (the sync folder gone for a moment, a lock held too long) it is tried again.
    public static let retryDelay: TimeInterval = 5

    private struct Started {
        let prefs: PersistentPrefs
        let suite: String
        let root: String
        /// `nil`: the keys the device recorded.
        let localKeys: Set<String>?
        /// Stops what tells this object of the set's and the folder's changes.
        var stop: [@Sendable () -> Void] = []
    }

    private struct Live {
        var sets: [Started] = []
        /// Whether a pass is queued and not begun.
        var scheduled = false
        var poller: (any DispatchSourceTimer)?
        var lastReport: PrefsSyncReport?
        var lastError: (any Error)?
        var onLivePass: (@Sendable (Result<PrefsSyncReport, any Error>) -> Void)?
        /// The thread running a pass, while one runs: the set's observers run on it during the merge's write.
        var passThread: ObjectIdentifier?
    }

    /// What the latest pass did (``syncNow()``'s, ``start(_:localKeys:)``'s or a live one), `nil` before the first.
    public var lastReport: PrefsSyncReport? { lock.withLock { live.lastReport } }

    /// Why the latest pass stopped, or `nil` when it ended well (a live pass that failed is tried again
    /// ``retryDelay`` later, and on the next change).
    public var lastError: (any Error)? { lock.withLock { live.lastError } }

    /// Calls `handler` after each live pass (one a change of a set or of the folder started; ``syncNow()`` and
    /// ``start(_:localKeys:)`` return theirs) with what it did or why it stopped, on the sync's own queue.
    public func onLivePass(_ handler: @escaping @Sendable (Result<PrefsSyncReport, any Error>) -> Void) {
        lock.withLock { live.onLivePass = handler }
    }

    /// Syncs through `folder`, which must exist (an engine's folder that is missing may be a drive not mounted).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when `folder` is not a folder.
    public convenience init(folder: URL) throws {
        try self.init(folder: folder, device: nil, clock: { Date() })
    }

    /// Syncs through `folder` as the device `device` (the identity kept for the folder when `nil`), reading the wall
    /// time from `clock`, keeping the device's state under `stateFolder` (`$XDG_STATE_HOME/PersistentPrefsSync`, or
    /// Application Support on Apple platforms, when `nil`). Tests give all three. An identity names the device's files
    /// in the folder: give each device one that no other's equals ignoring case (a Mac or Windows machine's file
    /// system does not tell `Laptop` from `laptop`); the identities the library makes are UUIDs.
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
    ///   - localKeys: Keys never published or applied on this device (window frames, state), added to those recorded
    ///     on the device, so every process syncing the set keeps them home; a key once kept home stays home.
    /// - Returns: What the first pass did.
    /// - Throws: Why the set cannot sync (no suite name, a name no folder can hold), or what the pass threw (see
    ///   ``syncNow()``).
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
    /// `localKeys` `nil` keeps the keys a program recorded on this device (as `prefs-harness sync` does). Starting an
    /// instance again replaces its registration.
    @discardableResult
    public func start(_ prefs: PersistentPrefs, suite: String, localKeys: Set<String>? = []) throws -> PrefsSyncReport {
        try start(prefs, suite: suite, localKeys: localKeys, live: true)
    }

    /// ``start(_:suite:localKeys:)``; without `live`, the set is synced by ``syncNow()`` only (`prefs-harness sync
    /// --watch` makes its passes on its own thread, where a program's set has its schema version bound).
    package func start(_ prefs: PersistentPrefs, suite: String, localKeys: Set<String>?, live syncsLive: Bool) throws -> PrefsSyncReport {
        let root = prefs.key
        try refuseWithinPass(root: root)
        let setFolder = try files.setFolder(suite: suite, root: root)  // a name no folder can hold is refused here
        var started = Started(prefs: prefs, suite: suite, root: root, localKeys: localKeys)
        let report = try pass([started]) ?? PrefsSyncReport()
        if syncsLive {
            let observation = prefs.observeChanges { [weak self] _ in self?.schedule() }
            started.stop = [{ observation.cancel() }, FolderWatching.watch(setFolder) { [weak self] in self?.schedule() }]
        }
        let polls = syncsLive && FolderWatching.remoteFileSystem(at: folder.path) != nil
        let replaced = lock.withLock { () -> [Started] in
            let replaced = live.sets.filter { $0.prefs === prefs }
            live.sets.removeAll { $0.prefs === prefs }
            live.sets.append(started)
            if polls, live.poller == nil {
                let timer = DispatchSource.makeTimerSource(queue: queue)
                timer.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval, leeway: .seconds(1))
                timer.setEventHandler { [weak self] in self?.schedule() }
                live.poller = timer
                timer.resume()
            }
            return replaced
        }
        for set in replaced { set.stop.forEach { $0() } }
        if syncsLive { schedule() }  // a change between the first pass and the watch's start is not missed
        return report
    }

    /// The folder of the set under `root` of `suite` in the sync folder.
    package func setFolder(suite: String, root: String) throws -> URL {
        try files.setFolder(suite: suite, root: root)
    }

    /// Publishes every started set's changes and merges the other devices' files now; returns when done.
    ///
    /// - Returns: What the pass did: values refused (each named, with why), files skipped, warnings.
    /// - Throws: What stopped a set's pass (its state locked by another process too long, a file that cannot be
    ///   written), the first when several did; every other set was synced.
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` when called from an observer of a set's
    ///   changes that a pass's own write runs (the pass would wait for itself): the change is synced by a live pass.
    @discardableResult
    public func syncNow() throws -> PrefsSyncReport {
        try refuseWithinPass(root: lock.withLock { live.sets.first?.root } ?? "")
        return try pass(lock.withLock { live.sets }) ?? PrefsSyncReport()
    }

    /// Refuses a pass asked for by code the running pass called on its own thread (an observer of a set's changes,
    /// run by the merge's write), which would wait for itself: ask again later, or from another thread.
    private func refuseWithinPass(root: String) throws {
        let thread = ObjectIdentifier(Thread.current)
        guard lock.withLock({ live.passThread == thread }) else { return }
        throw PersistentPrefs.PrefsError.transactionInProgress(root: root)
    }

    /// Stops syncing every set: no pass starts after this returns (one under way finishes), and the
    /// ``onLivePass(_:)`` handler is let go. Call ``syncNow()`` first to publish a change made within the last second.
    public func stop() {
        let stopped = lock.withLock { () -> [Started] in
            defer {
                live.sets = []
                live.onLivePass = nil
            }
            live.poller?.cancel()
            live.poller = nil
            return live.sets
        }
        for set in stopped { set.stop.forEach { $0() } }
    }

    deinit {
        live.poller?.cancel()
        for set in live.sets { set.stop.forEach { $0() } }
    }

    /// Queues a pass of every started set in ``coalescingDelay``, unless one is queued and not begun.
    private func schedule() {
        let queues = lock.withLock { () -> Bool in
            guard !live.scheduled, !live.sets.isEmpty else { return false }
            live.scheduled = true
            return true
        }
        guard queues else { return }
        queue.asyncAfter(deadline: .now() + Self.coalescingDelay) { [weak self] in
            guard let self else { return }
            let handler = lock.withLock { live.onLivePass }
            let result: Result<PrefsSyncReport, any Error>
            do {
                guard let report = try pass(nil) else { return }  // stopped meanwhile
                result = .success(report)
            } catch {
                result = .failure(error)
                queue.asyncAfter(deadline: .now() + Self.retryDelay) { [weak self] in self?.schedule() }
            }
            handler?(result)
        }
    }

    /// One pass of `started` (`nil`: the sets started when the pass begins, none after ``stop()``), one at a time; its
    /// outcome becomes ``lastReport`` and ``lastError``. `nil` when there was no set to sync.
    private func pass(_ started: [Started]?) throws -> PrefsSyncReport? {
        try passes.withLock {
            let sets = started ?? lock.withLock { () -> [Started] in
                live.scheduled = false
                return live.sets
            }
            lock.withLock { live.passThread = ObjectIdentifier(Thread.current) }
            defer { lock.withLock { live.passThread = nil } }
            guard started != nil || !sets.isEmpty else { return nil }
            var report = PrefsSyncReport()
            var failure: (any Error)?
            for set in sets {
                do {
                    try pass(set, into: &report)
                } catch {
                    failure = failure ?? error  // one set's failure holds back no other
                }
            }
            lock.withLock { (live.lastReport, live.lastError) = (report, failure) }
            if let failure { throw failure }
            return report
        }
    }

    /// What the folder holds for the set under `root` of `suite`, read without writing anything: the devices whose
    /// files are there, when each last wrote, and the entry each key's value comes from.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` for a name no folder can hold, or a folder that
    ///   cannot be listed.
    public func status(suite: String, root: String) throws -> PrefsSyncStatus {
        let setFolder = try files.setFolder(suite: suite, root: root)
        let me = device ?? state.existingIdentity() ?? ""
        let scan = try files.scan(setFolder, me: me, lastWritten: nil)
        var logs = scan.others.map { (path: $0.path, log: $0.log) }
        if let own = scan.own { logs.append((SyncFolder.file(of: own.device, in: setFolder), own)) }
        var devices: [String: PrefsSyncStatus.Device] = [:]
        var newest: [String: SyncEntry<SyncValue>] = [:]
        for (path, log) in logs {
            let known = devices[log.device]
            let wrote = Self.date(log.published)
            devices[log.device] = PrefsSyncStatus.Device(
                identity: log.device, isThisDevice: log.device == me, lastWrote: max(known?.lastWrote ?? wrote, wrote),
                files: ((known?.files ?? []) + [path]).sorted())
            for (key, entry) in log.entries where entry.stamp > (newest[key]?.stamp ?? .zero) { newest[key] = entry }
        }
        return PrefsSyncStatus(
            setFolder: setFolder, devices: devices.values.sorted { $0.identity < $1.identity },
            entries: newest.keys.sorted().map { key in
                let entry = newest[key]!
                return PrefsSyncStatus.Entry(
                    key: key, value: entry.value?.plist, device: entry.stamp.device, time: entry.stamp.wall == 0 ? nil : Self.date(entry.stamp))
            },
            skippedFiles: scan.skipped.map { PrefsSyncReport.SkippedFile(path: $0.path, reason: $0.reason) })
    }

    private static func date(_ stamp: SyncStamp) -> Date { Date(timeIntervalSince1970: Double(stamp.wall) / 1000) }

    /// How far ahead of this device's clock a device file may be stamped: a file further ahead is skipped (reported),
    /// as merging it would move every device's clock there for good.
    static let greatestLead: Int64 = 7 * 86_400_000

    /// One pass of one set, holding the device's lock: keep the record, write the device file, write the merged values
    /// into the set, keep the record again, remove the copies merged (see ``SyncPass``).
    private func pass(_ set: Started, into report: inout PrefsSyncReport) throws {
        let root = set.root
        let setFolder = try files.setFolder(suite: set.suite, root: root)
        try files.checkInPlace(setFolder)
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
            var (kept, damage) = try state.record(at: recordPath)
            // A key once kept home on this device stays home, whichever process syncs the set.
            kept.localKeys.formUnion(set.localKeys ?? [])
            if kept.lastWritten?.device != me { kept.lastWritten = nil }

            var scan = try files.scan(setFolder, me: me, lastWritten: kept.lastWritten)
            var rebuilt = false
            if kept.lastWritten == nil, let own = scan.own {
                // No record of the device's own file (lost, or never kept for this identity): taken from the file.
                if kept.record.started {
                    kept.lastWritten = own
                } else {
                    kept = .rebuilt(from: own, localKeys: kept.localKeys)
                    rebuilt = true
                }
            }
            if let damage {
                let outcome = rebuilt
                    ? "it was rebuilt from this device's file in the folder"
                    : "the set syncs as a fresh install: it takes the folder's values and overwrites none"
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
                scan = try files.scan(setFolder, me: me, lastWritten: nil)
            }
            let now = Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
            scan.others.removeAll { found in
                let lead = found.log.published.wall - now
                guard lead > Self.greatestLead else { return false }
                scan.skipped.append(
                    SyncFolder.Skipped(
                        path: found.path,
                        reason: "it is stamped \(lead / 86_400_000) days ahead of this device's clock, so one of the two clocks is wrong; it is merged once they agree within 7 days"))
                return true
            }
            report.skippedFiles.append(contentsOf: scan.skipped.map { PrefsSyncReport.SkippedFile(path: $0.path, reason: $0.reason) })

            // Device-local keys and the schema version: out of everything, so never published, applied, relayed or reset.
            let unsynced = kept.localKeys.union([PersistentPrefs.schemaVersionKey])
            kept.leaveOut(unsynced)
            var local: [String: SyncValue] = [:]
            for (key, value) in try set.prefs.syncStoredValues() where !unsynced.contains(key) {
                if let value = SyncValue(plist: value) { local[key] = value }
            }
            let others = scan.others.map { found in
                var log = found.log
                log.entries = log.entries.filter { !unsynced.contains($0.key) }
                return log
            }
            var refusals: [String: PersistentPrefs.PrefsError] = [:]
            let accept = { (key: String, value: SyncValue?) -> Bool in
                guard let refusal = set.prefs.refusal(of: value?.plist, forKey: key) else { return true }
                refusals[key] = refusal
                return false
            }
            if rebuilt { kept.record.settle(local, me: me, accept: accept) }
            var replica = SyncReplica(log: kept.lastWritten ?? DeviceLog(device: me), state: kept.record)
            let result = replica.pass(local: local, others: others, now: now, accept: accept)

            // The record first: a crash after it publishes nothing twice and loses nothing (the next pass finds the rest).
            kept.record = result.state
            if let log = result.log { kept.lastWritten = log }
            try state.keep(kept, at: recordPath)
            if let log = kept.lastWritten, result.log != nil || scan.own != log {
                // New, or the file is not what the record says was written: older (a copy put back, a write cut
                // short), damaged, gone, or holding keys since made device-local. (A file newer than the record, or
                // as new and different, was a clone's, found above.)
                try files.write(log, in: setFolder)
            }
            if !result.changes.isEmpty {
                let pending = result.state.pending
                var written: [String] = []
                try set.prefs.update { values in
                    written = []  // the body may run again, on a newer set
                    for (key, value) in result.changes {
                        // A key changed on this device since the pass read the set keeps that change; the next pass
                        // publishes it, stamped after the merged one.
                        guard Self.same(values[key], pending[key]?.before) else { continue }
                        values[key] = value?.plist
                        written.append(key)
                    }
                }
                report.applied.append(contentsOf: written.sorted().map { PrefsSyncReport.Key(root: root, key: $0) })
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

/// What a sync folder holds for one set (``PrefsSync/status(suite:root:)``).
public struct PrefsSyncStatus {
    /// A device with a file in the set's folder.
    public struct Device {
        /// The device's identity, as its file's contents name it.
        public let identity: String
        /// Whether it is this device.
        public let isThisDevice: Bool
        /// When it last wrote its file, by its clock (its newest file's stamp).
        public let lastWrote: Date
        /// Its files: its own, and copies an engine made.
        public let files: [String]
    }

    /// The entry a key's value comes from: the greatest across every device's file.
    public struct Entry {
        /// The key.
        public let key: String
        /// Its value, or `nil` where it was reset.
        public let value: Any?
        /// The device that set or reset it.
        public let device: String
        /// When, by that device's clock; `nil` for a value the device held when it first synced (published as set
        /// before any other device's, so that it overwrites none).
        public let time: Date?
    }

    /// The set's folder in the sync folder.
    public let setFolder: URL
    /// The devices, by identity.
    public let devices: [Device]
    /// The keys, sorted.
    public let entries: [Entry]
    /// Files not read, with why.
    public let skippedFiles: [PrefsSyncReport.SkippedFile]
}

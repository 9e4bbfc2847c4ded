import Foundation
import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a device keeps about one sync folder, never synced: its identity in the folder, and for each set its record
/// (``SyncRecord``, the log it last wrote, its device-local keys). Every process of the device that syncs the folder
/// (a program, `prefs-harness`) reads and writes them holding one lock, ``locked(_:)``; the device's clock is kept in
/// them (a replica's clock starts from its record and log), not in a process.
///
/// Layout: `<state>/<folder name>-<hash of its path>/` holding `device.plist` (`{device: …}`), `lock`, and
/// `<suite>/<root key>.plist` per set (names escaped as in ``SyncFolder``).
struct DeviceState: Sendable {
    /// This folder's state.
    let url: URL

    /// The state of the sync folder `folder`, under `root` (``defaultRoot`` unless a test gives one).
    init(syncFolder folder: URL, root: URL = DeviceState.defaultRoot) {
        let path = folder.standardizedFileURL.path
        // Lowercased (the path's hash below tells folders apart): a readable name, without the mark of capitals.
        let name = (try? SyncFolder.component(folder.lastPathComponent.lowercased())).map { String($0.prefix(64)) } ?? "folder"
        url = root.appendingPathComponent("\(name)-\(String(FNV1a.hash(Array(path.utf8)), radix: 16))", isDirectory: true)
    }

    /// Where devices keep their sync state: `$XDG_STATE_HOME/PersistentPrefsSync` (`~/.local/state` when unset) on
    /// Linux, `~/Library/Application Support/PersistentPrefsSync` on Apple platforms.
    static var defaultRoot: URL {
        #if canImport(Darwin)
            let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? URL(fileURLWithPath: NSHomeDirectory() + "/Library/Application Support")
        #else
            let state = ProcessInfo.processInfo.environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            let base = URL(fileURLWithPath: state ?? NSHomeDirectory() + "/.local/state", isDirectory: true)
        #endif
        return base.appendingPathComponent("PersistentPrefsSync", isDirectory: true)
    }

    /// How long a pass waits for another process of the device to finish its own.
    static let lockTimeout: TimeInterval = 5

    /// Runs `body` holding the device's lock of this folder.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)`` after ``lockTimeout``, an
    ///   ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when the lock file cannot be made, or what `body` throws.
    func locked<T>(_ body: () throws -> T) throws -> T {
        let path = url.appendingPathComponent("lock").path
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: url.path, reason: "the folder cannot be made: \(error.localizedDescription)")
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw PersistentPrefs.PrefsError.ioError(path: path, reason: "it cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }  // lets the lock go
        let start = Date()
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw PersistentPrefs.PrefsError.ioError(path: path, reason: "it cannot be locked: \(String(cString: strerror(errno)))")
            }
            let waited = Date().timeIntervalSince(start)
            guard waited < Self.lockTimeout else { throw PersistentPrefs.PrefsError.lockTimeout(path: path, holderPID: nil, waited: waited) }
            usleep(10_000)
        }
        return try body()
    }

    // MARK: - Identity

    private var identityFile: String { url.appendingPathComponent("device.plist").path }

    /// The device's identity in this folder, made (a new UUID) the first time; the caller holds the lock. A damaged
    /// identity file is replaced by a new identity, which `problem` reports.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when the file cannot be read (a link, another
    ///   user's, an error that may pass): the identity is not replaced for that.
    func identity() throws(PersistentPrefs.PrefsError) -> (device: String, problem: String?) {
        switch PlistFiles.read(atPath: identityFile) {
        case .dictionary(let fields):
            if let device = Self.identity(in: fields) { return (device, nil) }
            return (try newIdentity(), "\(identityFile) held no device identity; this device took a new one")
        case .absent:
            return (try newIdentity(), nil)
        case .damaged(let reason):
            return (try newIdentity(), "\(identityFile) is damaged (\(reason)); this device took a new identity")
        case .refused(let reason):
            throw .ioError(path: identityFile, reason: reason)
        }
    }

    /// The device's identity in this folder when it has one, read without the lock and without making one.
    func existingIdentity() -> String? {
        guard case .dictionary(let fields) = PlistFiles.read(atPath: identityFile) else { return nil }
        return Self.identity(in: fields)
    }

    /// The identity an identity file's `fields` hold, when it is one.
    private static func identity(in fields: [String: Any]) -> String? {
        (fields["device"] as? String).flatMap { DeviceFile.isIdentity($0) ? $0 : nil }
    }

    /// Takes a new identity (a cloned home folder, or the first use); the caller holds the lock.
    func newIdentity() throws(PersistentPrefs.PrefsError) -> String {
        let device = UUID().uuidString
        try PlistFiles.write(["device": device], atPath: identityFile)
        return device
    }

    // MARK: - Records

    /// What the device keeps for one set.
    struct SetRecord: Equatable {
        var record = SyncRecord<SyncValue>()
        /// The log the device last wrote, or is about to write (kept before the file is written).
        var lastWritten: DeviceLog<SyncValue>?
        /// The keys never published or applied on this device.
        var localKeys: Set<String> = []

        /// Takes `keys` out of the record and of the log last written, stamping nothing: a key made device-local is
        /// no longer published, and not reset anywhere either (other devices keep their values).
        mutating func leaveOut(_ keys: Set<String>) {
            for key in keys {
                record.entries[key] = nil
                record.held[key] = nil
                record.carried[key] = nil
                record.pending[key] = nil
                lastWritten?.entries[key] = nil
            }
        }

        /// The record of a device whose record was lost, from the log it last published: its entries, its tombstones
        /// carried from that log on. An entry of the device's own is what the set held then (a change since is
        /// published); one merged from another device may not be (refused): the caller settles those against the set
        /// (``SyncRecord/settle(_:me:accept:)``).
        static func rebuilt(from log: DeviceLog<SyncValue>, localKeys: Set<String>) -> SetRecord {
            var record = SyncRecord<SyncValue>()
            record.started = true
            record.entries = log.entries
            for (key, entry) in log.entries where entry.value == nil { record.carried[key] = log.published }
            return SetRecord(record: record, lastWritten: log, localKeys: localKeys)
        }
    }

    /// Where the record of the set under `root` in `suite` is kept.
    func recordFile(suite: String, root: String) throws(PersistentPrefs.PrefsError) -> String {
        url.appendingPathComponent(try SyncFolder.component(suite), isDirectory: true)
            .appendingPathComponent(try SyncFolder.component(root) + ".plist").path
    }

    /// The record of a set, or a fresh one when there is none; a damaged one is moved aside, and `problem` says so
    /// (the caller rebuilds it from the device's file, ``SetRecord/rebuilt(from:)``, or syncs as a fresh install).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when the file cannot be read (a link, another
    ///   user's, an error that may pass): the record is kept for the next pass.
    func record(at path: String) throws(PersistentPrefs.PrefsError) -> (SetRecord, problem: String?) {
        switch PlistFiles.read(atPath: path) {
        case .absent:
            return (SetRecord(), nil)
        case .dictionary(let fields):
            if let record = Self.setRecord(fields) { return (record, nil) }
            return (SetRecord(), moveAside(path, "it is not a sync record"))
        case .damaged(let reason):
            return (SetRecord(), moveAside(path, reason))
        case .refused(let reason):
            throw .ioError(path: path, reason: reason)
        }
    }

    /// Keeps `record` at `path`, atomically and durably; the caller holds the lock.
    func keep(_ record: SetRecord, at path: String) throws(PersistentPrefs.PrefsError) {
        try PlistFiles.write(Self.fields(of: record), atPath: path)
    }

    private func moveAside(_ path: String, _ reason: String) -> String {
        let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
        let moved = rename(path, aside) == 0
        return "the sync record \(path) could not be read (\(reason))\(moved ? "; it was moved to \(aside)" : "")"
    }

    static func fields(of record: SetRecord) -> [String: Any] {
        var fields: [String: Any] = [
            "started": NSNumber(value: record.record.started),
            "entries": record.record.entries.mapValues(DeviceFile.fields(of:)),
            "held": record.record.held.mapValues { held -> [String: Any] in held.value.map { ["value": $0.plist] } ?? [:] },
            "carried": record.record.carried.mapValues(DeviceFile.fields(of:)),
            "pending": record.record.pending.mapValues { pending -> [String: Any] in
                var fields: [String: Any] = [:]
                fields["before"] = pending.before?.plist
                fields["after"] = pending.after?.plist
                return fields
            },
            "localKeys": record.localKeys.sorted(),
        ]
        if let log = record.lastWritten { fields["lastWritten"] = DeviceFile.dictionary(of: log) }
        return fields
    }

    static func setRecord(_ fields: [String: Any]) -> SetRecord? {
        guard let started = fields["started"] as? NSNumber, let entries = fields["entries"] as? [String: Any],
            let held = fields["held"] as? [String: [String: Any]], let carried = fields["carried"] as? [String: Any],
            let pending = fields["pending"] as? [String: [String: Any]], let localKeys = fields["localKeys"] as? [String]
        else { return nil }
        var record = SetRecord(localKeys: Set(localKeys))
        record.record.started = started.boolValue
        func value(_ field: Any?) -> SyncValue?? {
            guard let field else { return .some(nil) }
            return SyncValue(plist: field).map { .some($0) }
        }
        for (key, field) in entries {
            guard let entry = DeviceFile.entry(field) else { return nil }
            record.record.entries[key] = entry
        }
        for (key, field) in held {
            guard let kept = value(field["value"]) else { return nil }
            record.record.held[key] = SyncRecord.Held(value: kept)
        }
        for (key, field) in carried {
            guard let stamp = DeviceFile.stamp(field) else { return nil }
            record.record.carried[key] = stamp
        }
        for (key, field) in pending {
            guard let before = value(field["before"]), let after = value(field["after"]) else { return nil }
            record.record.pending[key] = SyncRecord.Pending(before: before, after: after)
        }
        if let log = fields["lastWritten"] {
            guard let log = log as? [String: Any], case .success(let read) = DeviceFile.log(from: log) else { return nil }
            record.lastWritten = read
        }
        return record
    }
}

import Foundation
import PersistentPrefs

/// The replicated folder: `FOLDER/<suite>/<root key>/<device>.plist`, one ``DeviceFile`` per device and set, written only
/// by that device, so an engine replicating the folder never meets two writers of one file.
///
/// A set's folder may also hold what engines and people leave: conflict copies (Syncthing's
/// `<name>.sync-conflict-<date>-<time>-<id>.plist`, Dropbox's and Nextcloud's `… (… conflicted copy …).plist`, iCloud
/// Drive's `<name> 2.plist`), renamed copies, damaged files, links, other users' files. ``scan(_:me:lastWritten:)`` sorts
/// them; names starting with `.` (temporaries, engines' own files) and names not ending in `.plist` are not looked at.
struct SyncFolder: Sendable {
    /// The folder the engine replicates.
    let url: URL

    /// A log found in a set's folder.
    struct Found: Equatable {
        /// The file's path.
        let path: String
        let log: DeviceLog<SyncValue>
        /// What kind of copy the file is, when it is not its device's own file (`<device>.plist` naming the device in
        /// its contents): merged like any log, then removed (``removeCopies(_:)``).
        let copy: String?
    }

    /// A file in a set's folder that is not merged, with why.
    struct Skipped: Equatable {
        let path: String
        let reason: String
    }

    /// What one look at a set's folder found.
    struct Scan: Equatable {
        /// The logs of other devices, copies included (and copies of this device's own log that it wrote).
        var others: [Found] = []
        /// This device's own file as it is in the folder, when it is there and its contents name this device.
        var own: DeviceLog<SyncValue>?
        /// Files not merged: damaged, links, not regular files, another user's, refused by this version.
        var skipped: [Skipped] = []
        /// A file holding this device's identity that this device did not write (a cloned home folder): the device
        /// must take a new identity before it publishes.
        var clone: String?
    }

    /// The folder of the set under `root` in `suite`: each name one path component, escaped where a file system an
    /// engine replicates to could not hold it.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` for an empty name or one too long for a file name.
    func setFolder(suite: String, root: String) throws(PersistentPrefs.PrefsError) -> URL {
        url.appendingPathComponent(try Self.component(suite), isDirectory: true)
            .appendingPathComponent(try Self.component(root), isDirectory: true)
    }

    /// The path of `device`'s file in `setFolder`.
    static func file(of device: String, in setFolder: URL) -> String {
        setFolder.appendingPathComponent(device + ".plist").path
    }

    /// `name` as a file name alike on Linux, Apple platforms and Windows (which Syncthing, Dropbox and Nextcloud also
    /// replicate to): ASCII letters, digits, space, `.`, `-`, `_` kept, every other byte `%XX`, a leading `.`, a
    /// trailing space or `.`, and the first letter of a name Windows reserves (`con`, `nul`, `com1`, …) escaped too.
    /// A name holding a capital letter ends in `~` and 8 hex digits of its hash, so names that differ only in case
    /// stay apart where the file system ignores case (Apple platforms, Windows): `Main` is `Main~…`, `main` is `main`.
    static func component(_ name: String) throws(PersistentPrefs.PrefsError) -> String {
        let bytes = Array(name.utf8)
        var escaped = ""
        for (index, byte) in bytes.enumerated() {
            let plain = byte.isIdentityByte
                || ((byte == UInt8(ascii: ".") || byte == UInt8(ascii: " ")) && index != 0 && index != bytes.count - 1)
            escaped += plain ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
        }
        // Windows reserves these names, with any extension, in any case.
        let base = escaped.prefix { $0 != "." }.lowercased()
        if ["con", "prn", "aux", "nul"].contains(base) || (base.count == 4 && ["com", "lpt"].contains(String(base.prefix(3))) && base.last!.isNumber) {
            escaped = "%" + String(escaped.utf8.first!, radix: 16, uppercase: true) + escaped.dropFirst()
        }
        guard !escaped.isEmpty, escaped.utf8.count <= 200 else {
            throw .ioError(
                path: name, reason: name.isEmpty ? "an empty name cannot name a sync folder" : "the name is too long to name a sync folder (\(escaped.utf8.count) bytes escaped, at most 200)")
        }
        // `~` is escaped above, so no name's own bytes end this way.
        guard name.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return escaped }
        return escaped + "~" + String(UInt32(truncatingIfNeeded: FNV1a.hash(name.utf8)), radix: 16).leftPadded(8)
    }

    /// Sorts the files of `setFolder` (see the type).
    ///
    /// - Parameters:
    ///   - me: This device's identity.
    ///   - lastWritten: The log this device last wrote or was about to write (kept on the device before the file is
    ///     written). A log holding `me` that is newer, or as new and different, was written by another machine with
    ///     this identity: ``Scan/clone``. `nil` when the device has no record of one (never wrote one, or lost its
    ///     record): nothing is then taken for a clone, and ``Scan/own`` is what the device may rebuild its record from.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` when the folder exists but cannot be listed (a
    ///   pass that took it for empty would publish that it saw no device).
    func scan(_ setFolder: URL, me: String, lastWritten: DeviceLog<SyncValue>?) throws(PersistentPrefs.PrefsError) -> Scan {
        var scan = Scan()
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: setFolder.path).sorted()
        } catch {
            guard FileManager.default.fileExists(atPath: setFolder.path) else { return scan }
            throw .ioError(path: setFolder.path, reason: "the folder cannot be listed: \(error.localizedDescription)")
        }
        for name in names where !name.hasPrefix(".") && name.hasSuffix(".plist") {
            let path = setFolder.appendingPathComponent(name).path
            let dictionary: [String: Any]
            switch PlistFiles.read(atPath: path) {
            case .absent: continue  // removed since the listing
            case .damaged(let reason), .refused(let reason):
                scan.skipped.append(Skipped(path: path, reason: reason))
                continue
            case .dictionary(let read): dictionary = read
            }
            let log: DeviceLog<SyncValue>
            switch DeviceFile.log(from: dictionary) {
            case .failure(let refusal):
                scan.skipped.append(Skipped(path: path, reason: refusal.reason))
                continue
            case .success(let read): log = read
            }
            let stem = String(name.dropLast(".plist".count))
            if log.device == me {
                let mine = lastWritten.map { log.published < $0.published || log == $0 } ?? true
                if !mine, scan.clone == nil { scan.clone = path }
                if stem == me {
                    scan.own = log
                    continue
                }
            }
            scan.others.append(Found(path: path, log: log, copy: stem == log.device ? nil : Self.copyKind(stem)))
        }
        return scan
    }

    /// Checks that the sync folder is still there (a drive unmounted since must not be made again as an empty local
    /// folder) and that the set's folders in it are not links (an engine replicates links: one could lead a device's
    /// writes and removals anywhere).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` saying which.
    func checkInPlace(_ setFolder: URL) throws(PersistentPrefs.PrefsError) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw .ioError(path: url.path, reason: "the sync folder is gone (a drive no longer mounted?); nothing was synced")
        }
        for folder in [setFolder.deletingLastPathComponent(), setFolder] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder.path)
            if let kind = attributes?[.type] as? FileAttributeType, kind != .typeDirectory {
                throw .ioError(path: folder.path, reason: "it is not a folder (a link, say) in the sync folder; nothing was synced")
            }
        }
    }

    /// Writes `log` as this device's file in `setFolder`, atomically and durably; the caller holds the device's lock.
    func write(_ log: DeviceLog<SyncValue>, in setFolder: URL) throws(PersistentPrefs.PrefsError) {
        try PlistFiles.write(DeviceFile.dictionary(of: log), atPath: Self.file(of: log.device, in: setFolder))
    }

    /// Removes the copies a pass merged (after the log that carries their entries is written); returns the ones that
    /// could not be, with why. A copy changed since the scan is left for the next pass.
    func removeCopies(_ found: [Found]) -> [Skipped] {
        var failed: [Skipped] = []
        for copy in found where copy.copy != nil {
            guard case .dictionary(let now) = PlistFiles.read(atPath: copy.path), case .success(copy.log) = DeviceFile.log(from: now) else { continue }
            do {
                _ = try PlistFiles.remove(atPath: copy.path)
            } catch {
                failed.append(Skipped(path: copy.path, reason: "\(error)"))
            }
        }
        return failed
    }

    /// What kind of copy a file named `stem` is (its device's own file is named for the device its contents name).
    static func copyKind(_ stem: String) -> String {
        if stem.contains(".sync-conflict-") { return "a Syncthing conflict copy" }
        if stem.contains("conflicted copy") { return "a conflicted copy (Dropbox or Nextcloud)" }
        if stem.range(of: #" \d+$"#, options: .regularExpression) != nil { return "a numbered copy (iCloud Drive or a file manager)" }
        return "a copy under another name"
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

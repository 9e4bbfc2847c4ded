import Foundation

/// A ``PrefsStore`` that keeps each set in its own binary property-list file in a directory.
///
/// ```swift
/// let store = PlistFileStore(directory: URL(fileURLWithPath: "/var/lib/myapp/prefs"))
/// let prefs = AppPrefs(key: "Main", store: store)      // the file /var/lib/myapp/prefs/Main~….plist
/// ```
///
/// - Each root key has one file, `<percent-encoded root key>.plist` (reversible, never leaving the directory); with
///   upper-case letters `~<hash>` is added, so `Main` and `main` differ where case is ignored (an earlier version's
///   `Main.plist` is renamed on first use). A key too long for a file name gets a shortened name, its full key beside it.
/// - Several processes can share the directory: every change takes a `flock` on `<file>.lock` (waited for at most
///   ``PersistentPrefs/PersistentPrefs/lockTimeout``), re-reads the file and applies only the change, so two
///   processes changing different keys of one root key both keep theirs. Reads take no lock.
/// - Writes are atomic and durable: the new file is written beside the old one, flushed, renamed over it, and the
///   directory is flushed. A crash leaves the old file or the new one, never a mix.
/// - The binary format round-trips every property-list value exactly (sub-second dates, `-0.0`, 64-bit integers).
/// - A file that cannot be parsed is moved aside (`<name>.plist.corrupt-<timestamp>`) and reported as
///   ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)``, never silently replaced.
/// - The directory is created with mode 0700 and files with mode 0600. In a directory other users can write,
///   symbolic links at the files' places are refused, never written through (see <doc:SharedMachines>).
public final class PlistFileStore: PrefsStore, Sendable {
    /// The directory holding the files.
    public let directory: URL

    /// Identifies the directory.
    public let identifier: String

    /// Encoded root keys longer than this get a shortened name (a file name has 255 bytes; lock files add a suffix).
    static let maximumEncodedLength = 200

    /// Where this store's site and vendor defaults are inside each system configuration folder and the vendor
    /// folder (`myapp/prefs`: `/etc/xdg/myapp/prefs/<file>.plist`), or `nil`: none. See <doc:LayersAndLockdown>.
    public let layerName: String?

    /// Whether `directory` is the folder of the `UserDefaults` suites (however spelled), which the store refuses.
    private let isSuiteFolder: Bool

    /// A store for the files in `directory` (created on the first write). The folder of the `UserDefaults` suites
    /// (``PreferencesFile/preferencesDirectory``, by any spelling) cannot be one: such a store throws
    /// ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)`` at its first use, and writes nothing.
    ///
    /// - Parameters:
    ///   - directory: The folder of the set files.
    ///   - layerName: The folder of this store's system defaults inside `/etc/xdg` (each folder of
    ///     `$XDG_CONFIG_DIRS`) and the vendor folder. By default, `directory`'s path inside the user's configuration
    ///     folder (`~/.config/myapp/prefs` gives `myapp/prefs`, symbolic links and `..` resolved first); a directory
    ///     elsewhere has none unless one is named. Stores of one directory share their sets in a process: the first
    ///     one made decides.
    public init(directory: URL, layerName: String? = nil) {
        self.directory = directory.standardizedFileURL
        identifier = "plistfile:\(self.directory.path)"
        let relative = layerName.map { $0.split(separator: "/").filter { $0 != "." && $0 != ".." && !$0.isEmpty }.joined(separator: "/") }
        self.layerName = relative ?? LayerPaths.relativeToConfiguration(self.directory)
        // Where suites go through `UserDefaults`, its daemon keeps them elsewhere.
        isSuiteFolder = !PlatformChoices.current.suitesGoThroughUserDefaults
            && FolderPath.resolved(self.directory.path) == FolderPath.resolved(SuitePaths.directory.path)
    }

    /// The refusal of a store whose directory is the folder of the suites.
    private func checkNotSuiteFolder() throws {
        guard isSuiteFolder else { return }
        throw PersistentPrefs.PrefsError.ioError(
            path: directory.path,
            reason: "this is the folder of the UserDefaults suites; its property-list files are suites, not sets: keep a PlistFileStore's sets in a folder of their own")
    }

    /// The file that holds the set for `root` (named as the type's documentation says).
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)`` in the suites' folder.
    public func fileURL(forRoot root: String) throws -> URL {
        try checkNotSuiteFolder()
        return directory.appendingPathComponent(Self.fileStem(forRoot: root) + ".plist", isDirectory: false)
    }

    /// Where the schema of the set under `root` is kept (``PrefsSchema``): `<file name less .plist>.schema.json` beside it.
    /// A schema this process's writes publish is there when it answers.
    public func schemaFileURL(forRoot root: String) -> URL {
        SchemaPublishing.waitForAll()
        return schemaPath(forRoot: root)
    }

    private func schemaPath(forRoot root: String) -> URL {
        directory.appendingPathComponent(Self.fileStem(forRoot: root) + ".schema.json", isDirectory: false)
    }

    /// The name of `root`'s file without `.plist` (see the type's documentation).
    static func fileStem(forRoot root: String) -> String {
        let encoded = encode(root)
        guard encoded.utf8.count > maximumEncodedLength else {
            // Upper case: a hash of the exact key, so `Main` and `main` differ where case does not.
            let caseProof = root.utf8.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
            return encoded + (caseProof ? "~\(hash(root))" : "")
        }
        return "\(encoded.prefix(120))~\(hash(root))"
    }

    /// The file an earlier version named for `root` (`Main.plist`, which a case-insensitive file system shares with
    /// `main.plist`) while it may still need moving to `url`; `nil` once this process knows there is none.
    private func legacyFile(forRoot root: String, current url: URL) -> URL? {
        let legacy = directory.appendingPathComponent(Self.encode(root) + ".plist", isDirectory: false)
        guard legacy != url, url.lastPathComponent.utf8.count <= Self.maximumEncodedLength + 30,
            !Self.legacyChecked.withLock({ $0.contains(url.path) })
        else { return nil }
        // An earlier version wrote binary: an XML property list, or a file with an `.init` copy beside it, is another
        // program's (a `SettingsManageable` type named as the root key). A damaged file is taken, so it is reported.
        let data = (try? AtomicFile.readRegular(legacy.path, limit: PlistFile.maximumReadSize))??.data
        let isOthers = data.map { data in
            guard !data.starts(with: Data("bplist".utf8)), case .success = PlistFile.parse(data) else { return false }
            return true
        } ?? false
        guard !isOthers, !FileManager.default.fileExists(atPath: legacy.path + ".init") else {
            Self.legacyChecked.withLock { _ = $0.insert(url.path) }
            return nil
        }
        return legacy
    }

    /// Moves `legacy` to `url` (unless a file has that name already), once per root key and process, holding `url`'s lock.
    private func moveLegacyFile(_ legacy: URL, to url: URL) throws {
        if !FileManager.default.fileExists(atPath: url.path), FileManager.default.fileExists(atPath: legacy.path) {
            guard rename(legacy.path, url.path) == 0 else { throw AtomicFile.posixFailure("rename", legacy.path).prefsError }
            try AtomicFile.syncDirectory(directory.path)
        }
        Self.legacyChecked.withLock { _ = $0.insert(url.path) }
    }

    /// The files already checked for an old name in this process.
    private static let legacyChecked = Locked<Set<String>>([])

    /// See ``PrefsStore/load(root:)``; `nil` when `root` has no file.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)`` (the file is moved aside
    ///   first) or ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    public func load(root: String) throws -> [String: Any]? { try read(root: root).set }

    /// See ``PrefsStore/save(_:root:)``: the file is replaced atomically and durably.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``; the old file is then unchanged.
    public func save(_ values: [String: Any], root: String) throws { _ = try apply(.replace(values), root: root) }

    /// See ``PrefsStore/remove(root:)``: removes the file with its lock file (`<file>.lock`), damage note and
    /// `<file>.root` note; the set's schema file and damaged copies moved aside stay. An emptied set goes the same way.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    public func remove(root: String) throws { _ = try apply(.replace([:]), root: root) }

    /// See ``PrefsStore/apply(_:root:)``: under the file's lock, the file is re-read, changed and replaced atomically.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError``; the file is then unchanged.
    public func apply(_ change: PrefsChange, root: String) throws -> [String: Any] {
        try write(WritePlan(change, root: root), root: root).appliedSet()
    }

    /// See ``PrefsStore/roots()``: the root keys that have a file, sorted.
    public func roots() throws -> [String] {
        try checkNotSuiteFolder()
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return []
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: directory.path, reason: (error as NSError).localizedDescription)
        }
        let found = names.compactMap { name -> String? in
            guard name.hasSuffix(".plist"), !name.hasPrefix(".") else { return nil }
            let stem = String(name.dropLast(".plist".count))
            if let tilde = stem.lastIndex(of: "~") {
                let sidecar = directory.appendingPathComponent(name + ".root")
                if let root = Self.rootName(in: sidecar) { return root }
                // A key with upper case: its encoding, then the hash of the exact key.
                guard let root = Self.decode(String(stem[..<tilde])), Self.hash(root) == stem[stem.index(after: tilde)...] else { return nil }
                return root
            }
            return Self.decode(stem)
        }
        return Set(found).sorted()  // a file under its old name and its new one name the same root
    }

    /// Records the full root key beside a file whose name had to be shortened.
    private func writeRootName(_ root: String, for url: URL) throws {
        let sidecar = url.appendingPathExtension("root")
        guard Self.rootName(in: sidecar) != root else { return }
        do {
            try AtomicFile.write(Data(root.utf8), to: sidecar)
        } catch {
            throw error.prefsError
        }
    }

    /// The root key kept in a `.root` file, or `nil` (none, or not a regular file: never a link, FIFO or device).
    private static func rootName(in sidecar: URL) -> String? {
        ((try? AtomicFile.readRegular(sidecar.path, following: false, limit: 1 << 16)) ?? nil).map { String(decoding: $0.data, as: UTF8.self) }
    }

    /// FNV-1a, 64 bits, of the root key's UTF-8: stable across runs and platforms.
    static func hash(_ root: String) -> String { String(FNV1a.hash(root.utf8), radix: 16) }

    // MARK: - File names

    /// Percent-encodes every UTF-8 byte outside `A–Z a–z 0–9 - _`: a safe, reversible name (no `/`, `.`, `~` or NUL).
    static func encode(_ root: String) -> String {
        var name = ""
        for byte in root.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                name.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                name += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        // An empty root key still needs a name.
        return name.isEmpty ? "%" : name
    }

    /// The root key for an encoded file name, or `nil` when the name is not one of ours.
    static func decode(_ name: String) -> String? {
        if name == "%" { return "" }
        var bytes: [UInt8] = []
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        let root = String(decoding: bytes, as: UTF8.self)
        return encode(root) == name ? root : nil
    }

}

// MARK: - SetStorage

extension PlistFileStore: SetStorage {}

extension PlistFileStore {
    /// Reads without a lock (files are replaced atomically), so a stopped writer never blocks it.
    func read(root: String) throws -> StoreRead {
        var url = try fileURL(forRoot: root)
        if let legacy = legacyFile(forRoot: root, current: url) {
            // Renamed now if the lock is free (and usable); else read where it is, and renamed by the next write.
            let moved: Void? = (try? FileLock.withLockIfFree(for: url) { try moveLegacyFile(legacy, to: url) }) ?? nil
            if moved == nil, !FileManager.default.fileExists(atPath: url.path) { url = legacy }
        }
        let (set, _, digest) = try PlistFile.readSigned(url)
        return StoreRead(set: set, version: digest)
    }

    func writeScope(root: String) -> String? {
        (try? fileURL(forRoot: root)).map { FileLock.scope(ofFile: $0.path) }
    }

    func write<Outcome>(_ plan: WritePlan<Outcome>, root: String) throws -> StoreWrite<Outcome> {
        let url = try fileURL(forRoot: root)
        let memory = memoryLayers(root: root)
        return try FileLock.withLock(for: url, label: root) { lock in
            // Layer files read again under the lock: see SetStorage.layerFiles(root:).
            let layers = layerStack(root: root, memory: memory)
            if let legacy = legacyFile(forRoot: root, current: url) { try moveLegacyFile(legacy, to: url) }
            var stored: [String: Any] = [:]
            var readVersion: UInt64?
            if plan.buildsOnCurrent || layers.hasLocks {
                let read = try PlistFile.readSigned(url)
                (stored, readVersion) = (read.dictionary ?? [:], read.digest)
            }
            let outcome = plan.apply(stored, layers)
            guard let (updated, changed) = outcome.written else { return .unwritten(outcome, layers: layers) }
            var version: UInt64?
            if updated.isEmpty {
                try PlistFile.write(nil, to: url, format: .binary)
            } else {
                if url.lastPathComponent.contains("~") { try writeRootName(root, for: url) }
                version = try PlistFile.write(updated, to: url, format: .binary)
            }
            DamageNote.clear(for: url)  // the set is whole again
            if updated.isEmpty {
                // Nor anything beside it: the root key's note and, last, the lock file (FileLock.Held.removeFile()).
                let sidecar = url.path + ".root"
                if let kind = SharedFolders.kind(sidecar), kind == S_IFREG || kind == S_IFLNK { unlink(sidecar) }
                lock.removeFile()
            }
            return StoreWrite(outcome: outcome, set: updated, readVersion: readVersion, version: version, changed: changed, layers: layers)
        }
    }

    func currentVersion(root: String) -> UInt64? { (try? fileURL(forRoot: root)).flatMap(PlistFile.digest(of:)) }

    // MARK: Damage

    func damageNotice(root: String) -> PersistentPrefs.PrefsError? {
        (try? fileURL(forRoot: root)).flatMap(DamageNote.notice(for:))
    }

    func acknowledgeDamage(root: String) throws -> String? {
        let url = try fileURL(forRoot: root)
        // Nothing at the file's place: only a note to remove, and no lock file to leave behind.
        guard SharedFolders.kind(url.path) != nil else {
            DamageNote.clear(for: url)
            return nil
        }
        return try FileLock.withLock(for: url, label: root) { try PlistFile.acknowledgeDamage(atPath: url.path) }
    }

    // MARK: Watching

    var canWatch: Bool { true }

    func watch(root: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        guard let file = try? fileURL(forRoot: root) else { return nil }
        return ChangeWatcher.shared.watching(file, onChange)
    }

    func watchProblem(root: String) -> PersistentPrefs.PrefsError? {
        (try? fileURL(forRoot: root)).flatMap(ChangeWatcher.shared.problem(for:))
    }

    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        ChangeWatcher.shared.watching(URL(fileURLWithPath: directory.path + "/"), onChange)
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        ChangeWatcher.shared.problem(for: URL(fileURLWithPath: directory.path + "/"))
    }

    // MARK: System layers and schemas

    func layerFiles(root: String) -> [LayerFile] {
        guard let layerName, let file = try? fileURL(forRoot: root) else { return [] }
        return LayerPaths.files(relativeFolder: layerName, name: file.lastPathComponent, holdsRoots: false)
    }

    func schemaFile(root: String) -> URL? { schemaPath(forRoot: root) }
}

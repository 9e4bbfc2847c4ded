import Foundation

/// One file of a system layer: site defaults (over `$XDG_CONFIG_DIRS`) or vendor defaults (in
/// ``PersistentPrefs/vendorDefaultsDirectory``). See <doc:LayersAndLockdown>.
struct LayerFile: Hashable, Sendable {
    /// Which layer the file belongs to.
    enum Kind: String, Sendable {
        case site
        case vendor
    }

    let url: URL
    /// The file's path, worked out once (every write looks at the file).
    let path: String
    let kind: Kind
    /// `true` for a suite's file (root keys at the top level, each holding a set), `false` for a
    /// ``PlistFileStore`` set file (the file is the set).
    let holdsRoots: Bool

    init(url: URL, kind: Kind, holdsRoots: Bool) {
        (self.url, path, self.kind, self.holdsRoots) = (url, url.path, kind, holdsRoots)
    }
}

/// The system layers of one set, read from their files: the values each layer gives and the keys it locks.
/// Immutable; ``LayerReader`` makes a new one when a file changes.
/// A key locked in some layer reads the value of that layer or of a less important one (the user's value, and
/// values of more important layers, are ignored); any other key reads the user's value, else the first layer's that
/// has one. What no layer gives reads as the instance's ``PersistentPrefs/fileDefaults``, then its declared default.
struct LayerStack: @unchecked Sendable {  // immutable property-list values
    /// The entry that locks keys, in a set's dictionary or at the top of a suite's layer file: an array of key
    /// names, or `true` for every key at that level.
    static let lockKey = "PersistentPrefs.locked"
    /// The key a set's schema version is stored under (``PersistentPrefs/schemaVersionKey``), which no layer gives
    /// and no lock holds.
    static let schemaVersionKey = "PersistentPrefs.schemaVersion"
    /// The folder of vendor defaults (``PersistentPrefs/vendorDefaultsDirectory``), a process setting.
    static let vendorDirectory = Locked<URL?>(nil)

    struct Layer {
        enum Kind: Sendable {
            /// Values an administrator forces through the platform, above every file.
            case managed
            case site
            case vendor
            /// Defaults registered with the platform, beneath every file.
            case registered
        }

        /// A file's path (for ``Kind/site`` and ``Kind/vendor``), or `registered defaults`, `managed (forced) values`.
        let source: String
        let kind: Kind
        /// The set's values in this layer, normalised, without the lock entry.
        let values: [String: Any]
        let locked: Set<String>
        let locksAll: Bool

        func locks(_ key: String) -> Bool { locksAll || locked.contains(key) }
    }

    /// The layers that exist, the most important first.
    let layers: [Layer]
    /// Layer files that could not be read; they are left out, the rest still apply.
    let problems: [PersistentPrefs.PrefsError]

    static let empty = LayerStack(layers: [], problems: [])

    /// Whether no layer gives a value or locks a key.
    var isEmpty: Bool { layers.allSatisfy { $0.values.isEmpty && $0.locked.isEmpty && !$0.locksAll } }

    var hasLocks: Bool { layers.contains { !$0.locked.isEmpty || $0.locksAll } }

    /// Whether a layer locks every key of the set.
    var locksAll: Bool { layers.contains { $0.locksAll } }

    func isLocked(_ key: String) -> Bool { layers.contains { $0.locks(key) } }

    /// The keys locked by name (a set locked whole locks keys no layer names as well).
    var lockedKeys: Set<String> { layers.reduce(into: Set()) { $0.formUnion($1.locked) } }

    /// The value `key` has without the user's layer: what a removal of the user's value reveals, or a locked key reads.
    func layerValue(forKey key: String) -> Any? { layerGiving(key)?.values[key] }

    /// The layer `key`'s value comes from when the user's value does not count (locked) or there is none: the
    /// locking layer or the first beneath it with a value; `nil` when no layer gives one.
    func layerGiving(_ key: String) -> Layer? {
        let start = layers.firstIndex { $0.locks(key) } ?? 0
        return layers[start...].first { $0.values[key] != nil }
    }

    /// The set readers see: `user` (the user's stored set) with the layers beneath it and the locked keys forced.
    func effective(_ user: [String: Any]) -> [String: Any] {
        guard !isEmpty else { return user }
        var result = user
        for layer in layers.reversed() {
            for (key, value) in layer.values where user[key] == nil {
                result[key] = value
            }
        }
        // Locked keys: the value of the locking layer or one beneath it, never the user's.
        let locked = locksAll ? Set(result.keys).union(lockedKeys) : lockedKeys
        for key in locked { result[key] = layerValue(forKey: key) }
        return result
    }

    /// The first locked key (sorted) whose stored value differs between `old` and `new`, or `nil`. The schema version
    /// the library keeps in a set is not a key of it.
    func lockedChange(from old: [String: Any], to new: [String: Any]) -> String? {
        guard hasLocks else { return nil }
        var changed = PlistValue.changedKeys(old, new)
        changed.remove(Self.schemaVersionKey)
        return changed.filter(isLocked).min()
    }

    /// ``lockedChange(from:to:)`` of two sets in a store's own shapes, normalised only when some key is locked.
    func lockedChange(stored old: [String: Any], to new: [String: Any]) -> String? {
        guard hasLocks else { return nil }
        return lockedChange(from: PlistValue.loadedOrAsIs(old), to: PlistValue.loadedOrAsIs(new))
    }
}

/// The parsed contents of a set's layer files, read again only when a file changes (one `stat` per file otherwise).
struct LayerReader: Sendable {
    let files: [LayerFile]

    private struct Parsed {
        let signature: FileSignature?
        /// The file's top-level dictionary (`nil`: no file, or it could not be read).
        let top: [String: Any]?
        let problem: PersistentPrefs.PrefsError?
    }

    /// The files parsed in this process, by path.
    private static let parsedFiles = Locked<[String: Parsed]>([:])

    /// The layers of the set under `root` (`nil`: the top level of a suite's files: root keys and plain values).
    func stack(root: String?) -> LayerStack {
        guard !files.isEmpty else { return .empty }
        var layers: [LayerStack.Layer] = []
        var problems: [PersistentPrefs.PrefsError] = []
        for file in files {
            let parsed = current(file.path)
            if let problem = parsed.problem { problems.append(problem) }
            guard let top = parsed.top else { continue }
            switch Self.layer(of: file, top: top, root: root) {
            case .success(let layer?): layers.append(layer)
            case .success(nil): break
            case .failure(let problem): problems.append(problem)
            }
        }
        return LayerStack(layers: layers, problems: problems)
    }

    /// Throws ``PersistentPrefs/PrefsError/keyLocked(key:)`` for a change of a suite file's top-level keys that changes
    /// a key locked at the top level, or a locked key inside a root key's set.
    func checkSuiteChange(from before: [String: Any], to after: [String: Any]) throws {
        // Without a layer file holding a dictionary (the usual case) nothing is locked.
        guard files.contains(where: { current($0.path).top != nil }) else { return }
        let top = stack(root: nil)
        for key in PlistValue.changedKeys(before, after).sorted() {
            if top.isLocked(key) { throw PersistentPrefs.PrefsError.keyLocked(key: key) }
            guard holdsRoots else { continue }  // a set file: its keys are the set's, checked above
            let set = stack(root: key)
            guard set.hasLocks else { continue }
            if let locked = set.lockedChange(from: Self.set(before[key]) ?? [:], to: Self.set(after[key]) ?? [:]) {
                throw PersistentPrefs.PrefsError.keyLocked(key: locked)
            }
        }
    }

    /// Keeps in `repaired` (the suite as the ``SuiteLedger`` puts it back after a stale save) the value `found`, the
    /// file as read, has for every locked key: a repair never changes a locked key, at the top level or in a set.
    func sparingLocked(_ repaired: inout [String: Any], from found: [String: Any]) {
        guard files.contains(where: { current($0.path).top != nil }) else { return }
        let top = stack(root: nil)
        for key in PlistValue.changedKeys(found, repaired) {
            if top.isLocked(key) {
                repaired[key] = found[key]
                continue
            }
            // A set file's keys are the set's own: locked or not, nothing beneath them.
            guard holdsRoots else { continue }
            let set = stack(root: key)
            guard set.hasLocks else { continue }
            guard !set.locksAll, let old = Self.set(found[key]), var new = Self.set(repaired[key]) else {
                repaired[key] = found[key]  // locked whole, or not a set: left as found
                continue
            }
            for locked in set.lockedKeys where !PlistValue.same(old[locked], new[locked]) { new[locked] = old[locked] }
            repaired[key] = new
        }
    }

    /// A suite's top-level value as a set: `[:]` for none, `nil` for a value that is not one.
    private static func set(_ value: Any?) -> [String: Any]? {
        guard let value else { return [:] }
        return PlistValue.stringKeyedDictionary(value).map(PlistValue.loadedOrAsIs)
    }

    /// Whether the files are a suite's (see ``LayerFile/holdsRoots``), not a set file's.
    private var holdsRoots: Bool { files.allSatisfy(\.holdsRoots) }

    /// The set under `root` in one file's top-level dictionary, with its locks.
    private static func layer(of file: LayerFile, top: [String: Any], root: String?) -> Result<LayerStack.Layer?, PersistentPrefs.PrefsError> {
        var set: [String: Any]
        var locksAll = false
        if let root, file.holdsRoots {
            let topLocks = locks(top[LayerStack.lockKey])
            if topLocks.invalid { return .failure(invalidLocks(file)) }
            if topLocks.all || topLocks.keys.contains(root) { locksAll = true }
            switch top[root] {
            case nil: set = [:]
            case let dictionary as [String: Any]: set = dictionary
            default: return .failure(damaged(file, "the value of \"\(root)\" is not a dictionary"))
            }
        } else {
            set = top
        }
        let marks = locks(set.removeValue(forKey: LayerStack.lockKey))
        if marks.invalid { return .failure(invalidLocks(file)) }
        // Vetted as a write would be. The top of a suite's file holds its sets, each vetted when read as a set: one bad
        // set never takes the file's top-level locks away.
        let values: [String: Any]
        switch PlistValue.normalizedSet(set, for: root == nil && file.holdsRoots ? .loading : .vetting) {
        case .success(let vetted): values = vetted
        case .failure(let refusal):
            guard case .valuesNotPlistCompatible(let refused) = refusal else { return .failure(damaged(file, refusal.description)) }
            let keys = refused.quotedList
            return .failure(damaged(file, "the value of \(keys) is not one a preferences set can store (nested more than \(PlistValue.maximumDepth) deep, or a date outside the years 1–9999)"))
        }
        if values.isEmpty, marks.keys.isEmpty, !marks.all, !locksAll { return .success(nil) }
        return .success(LayerStack.Layer(source: file.path, kind: file.kind == .site ? .site : .vendor, values: values, locked: marks.keys, locksAll: locksAll || marks.all))
    }

    /// What a lock entry says: `<true/>` or `<false/>`, or an array of key names. Anything else is `invalid`, never
    /// read as a lock or as none.
    private static func locks(_ entry: Any?) -> (keys: Set<String>, all: Bool, invalid: Bool) {
        guard let entry else { return ([], false, false) }
        switch PlistValue.normalized(entry, for: .loading) {
        case let flag as NSNumber where NumberKind(flag) == .boolean:
            return ([], flag.boolValue, false)
        case let list as [Any]:
            let names = list.compactMap { $0 as? String }
            return (Set(names), false, names.count != list.count)
        default:
            return ([], false, true)
        }
    }

    private static func invalidLocks(_ file: LayerFile) -> PersistentPrefs.PrefsError {
        damaged(file, "\"\(LayerStack.lockKey)\" is neither true, false nor a list of key names")
    }

    private static func damaged(_ file: LayerFile, _ reason: String) -> PersistentPrefs.PrefsError {
        .corruptStore(path: file.path, reason: "\(reason); these \(file.kind.rawValue) defaults are ignored, the user's values and the other layers still apply")
    }

    /// The parsed file, read again when its signature changed.
    private func current(_ path: String) -> Parsed {
        let signature = FileSignature.of(path)
        if let known = Self.parsedFiles.withLock({ $0[path] }), known.signature == signature { return known }
        let parsed = Self.parse(path)
        Self.parsedFiles.withLock { $0[path] = parsed }
        return parsed
    }

    private static func parse(_ path: String) -> Parsed {
        let contents: AtomicFile.Contents?
        do {
            contents = try AtomicFile.readRegular(path, limit: PlistFile.maximumReadSize)
        } catch {
            // Not readable by this user, or not a regular file: reported, and left out.
            return Parsed(signature: FileSignature.of(path), top: nil, problem: error.prefsError)
        }
        guard let contents else { return Parsed(signature: nil, top: nil, problem: nil) }
        switch PlistFile.parse(contents.data) {
        case .success(let top):
            return Parsed(signature: contents.signature, top: top, problem: nil)
        case .failure(let failure):
            return Parsed(
                signature: contents.signature, top: nil,
                problem: .corruptStore(path: path, reason: "\(failure.reason); these system defaults are ignored, the user's values and the other layers still apply"))
        }
    }
}

// MARK: - Where layers are

enum LayerPaths {
    /// The system configuration folders, most important first: `$XDG_CONFIG_DIRS` (absolute entries), else `/etc/xdg`.
    static let systemDirectories: [URL] = {
        let variable = ProcessEnvironment.value("XDG_CONFIG_DIRS") ?? ""
        let entries = variable.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return (entries.isEmpty ? ["/etc/xdg"] : entries).map { URL(fileURLWithPath: $0, isDirectory: true) }
    }()

    /// The layer files for a file named `name` in `relativeFolder` (`""`: directly in the configuration folder): one
    /// per system folder, then the vendor folder's.
    static func files(relativeFolder: String, name: String, holdsRoots: Bool) -> [LayerFile] {
        // Every write asks: made once per file name and vendor folder (building URLs is dear).
        let vendor = LayerStack.vendorDirectory.withLock { $0 }
        let key = MadeKey(relativeFolder: relativeFolder, name: name, holdsRoots: holdsRoots, vendor: vendor)
        if let known = madeFiles.withLock({ $0[key] }) { return known }
        let files = makeFiles(relativeFolder: relativeFolder, name: name, holdsRoots: holdsRoots, vendor: vendor)
        madeFiles.withLock { $0[key] = files }
        return files
    }

    private struct MadeKey: Hashable {
        let relativeFolder: String
        let name: String
        let holdsRoots: Bool
        let vendor: URL?
    }

    private static let madeFiles = Locked<[MadeKey: [LayerFile]]>([:])

    private static func makeFiles(relativeFolder: String, name: String, holdsRoots: Bool, vendor: URL?) -> [LayerFile] {
        func file(_ base: URL, _ kind: LayerFile.Kind) -> LayerFile {
            let folder = relativeFolder.isEmpty ? base : base.appendingPathComponent(relativeFolder, isDirectory: true)
            return LayerFile(url: folder.appendingPathComponent(name, isDirectory: false).standardizedFileURL, kind: kind, holdsRoots: holdsRoots)
        }
        var files = systemDirectories.map { file($0, .site) }
        if let vendor { files.append(file(vendor, .vendor)) }
        return files
    }

    /// `folder`'s path inside the user's configuration folder (``SuitePaths/directory``), or `nil` when it is elsewhere
    /// (or that folder itself). Both are resolved first (``FolderPath``), so every spelling finds the same layers.
    static func relativeToConfiguration(_ folder: URL) -> String? {
        let base = FolderPath.resolved(SuitePaths.directory.path)
        let path = FolderPath.resolved(folder.path)
        guard path.hasPrefix(base == "/" ? "/" : base + "/"), path != base else { return nil }
        return String(path.dropFirst(base == "/" ? 1 : base.count + 1))
    }

    /// The layer files of the property-list file at `url`: a suite's file (a `.plist` directly in the user's
    /// configuration folder) has the suite's, a set file (in a folder inside it) those a ``PlistFileStore`` there has
    /// by default, any other file none. Its folder is resolved first (see ``FolderPath``).
    static func files(forFileAt url: URL) -> [LayerFile] {
        let name = url.lastPathComponent
        guard name.hasSuffix(".plist"), name.utf8.count > ".plist".utf8.count else { return [] }
        let folder = FolderPath.resolved(url.deletingLastPathComponent().path)
        // Where suites go through `UserDefaults`, its daemon keeps them elsewhere, without layer files.
        if !PlatformChoices.current.suitesGoThroughUserDefaults, folder == FolderPath.resolved(SuitePaths.directory.path) {
            guard SuitePaths.problem(with: String(name.dropLast(".plist".count))) == nil else { return [] }
            return files(relativeFolder: "", name: name, holdsRoots: true)
        }
        guard let relative = relativeToConfiguration(URL(fileURLWithPath: folder, isDirectory: true)) else { return [] }
        return files(relativeFolder: relative, name: name, holdsRoots: false)
    }
}

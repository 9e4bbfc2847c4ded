import Foundation

/// What the engine needs of a store beyond ``PrefsStore``: versions of what it read and wrote, what a write changed,
/// damage notes, system layers, watching, and where a set's schema is published.
/// ``UserDefaultsStore`` and ``PlistFileStore`` conform. Any other ``PrefsStore`` (``InMemoryStore``, the app's own)
/// is adapted once, when its shared set is made (``SetStorageAdapter``), and gets the default answers (the extension
/// below): no versions, no damage, no layers, no watch (outside changes arrive through
/// ``PrefsStore/setDidChange(root:)``), no published schema.
protocol SetStorage: PrefsStore {
    /// The set under `root` as stored (in the store's own shapes; `nil` when nothing is), and its file's version.
    func read(root: String) throws -> StoreRead

    /// Carries out `plan` on the set under `root` in the store's one atomic step (see ``WritePlan``) and reports what it
    /// did; durable when it returns. The plan's outcome comes back untouched; a refusal in it is not thrown.
    /// Default: through ``PrefsStore/apply(_:root:)``, with no versions or changed keys (the engine compares the sets).
    func write<Outcome>(_ plan: WritePlan<Outcome>, root: String) throws -> StoreWrite<Outcome>

    /// The version of the file holding `root` as it is now (`nil`: unknown, or no file).
    func currentVersion(root: String) -> UInt64?

    /// What ``WriteScope`` knows the lock a write of `root` takes by, so a write started inside one that holds it is
    /// refused before it waits for anything (`nil`: no such lock).
    func writeScope(root: String) -> String?

    /// Whether the file went from version `old` to `new` through this process's own writes alone, none of which
    /// changed `root` (a write of one set of a suite file need not make the others read the file again).
    func unchangedByOwnWrites(root: String, from old: UInt64, to new: UInt64) -> Bool

    /// The damage to report to every reader of `root` (see ``DamageNote``), or `nil`.
    func damageNotice(root: String) -> PersistentPrefs.PrefsError?

    /// Forgets the damage reported for `root` (for a suite: every root key in its file), on the app's word: a file
    /// there the store leaves as it is (a property list it cannot read exactly) is moved aside too. Returns where a
    /// file was moved by this call, or `nil`.
    func acknowledgeDamage(root: String) throws -> String?

    /// The system layer files for the set under `root`, the most important first (they may not exist). The store reads
    /// them again under its lock and hands them to the plan (``WritePlan``), which refuses a change of a locked key:
    /// so a key locked while a write waited for the lock is refused too.
    func layerFiles(root: String) -> [LayerFile]

    /// Layers kept in memory: above every file (values an administrator forces through the platform) and beneath them
    /// all (registered defaults), the most important first.
    func memoryLayers(root: String) -> (above: [LayerStack.Layer], below: [LayerStack.Layer])

    /// Whether ``watch(root:_:)`` can report changes of the store's sets (a set then starts its watch on first read).
    var canWatch: Bool { get }

    /// Starts calling `onChange` (on a background thread, with no lock of the library held) whenever the set under
    /// `root` may have changed; returns how to stop, or `nil` when this store cannot watch that set.
    func watch(root: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?

    /// Why changes of the set under `root` by others reach this process late (found by polling), or `nil`.
    func watchProblem(root: String) -> PersistentPrefs.PrefsError?

    /// Starts calling `onChange` whenever some set of the store may have changed, for
    /// ``PersistentPrefs/observeStore(_:_:)``; returns how to stop, or `nil` when the store cannot watch.
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?

    /// Why changes reach ``watchAllSets(_:)`` late, or `nil`.
    var allSetsWatchProblem: PersistentPrefs.PrefsError? { get }

    /// Where the schema of the set under `root` is published for tools (see ``PrefsSchema``), or `nil`.
    func schemaFile(root: String) -> URL?
}

/// A set as a store read it.
struct StoreRead {
    /// The set, in the store's own shapes; `nil` when nothing is stored under the root key.
    let set: [String: Any]?
    /// The version of the file it was read from: the ``PlistFile/digest(_:)`` of its bytes (unlike a file's size and
    /// time, it changes with any change of the contents). `nil`: unknown.
    let version: UInt64?
}

// MARK: - Default answers

extension SetStorage {
    func read(root: String) throws -> StoreRead { StoreRead(set: try load(root: root), version: nil) }

    func write<Outcome>(_ plan: WritePlan<Outcome>, root: String) throws -> StoreWrite<Outcome> {
        let layers = layerStack(root: root)
        // `nil`: what the store holds cannot be read as a set (a replacement repairs it; the plan refuses any other change).
        let loaded: [String: Any]?
        do {
            loaded = plan.buildsOnCurrent ? try load(root: root) ?? [:] : [:]
        } catch PersistentPrefs.PrefsError.invalidStoredValue(let key) where key == root {
            loaded = nil
        }
        var outcome = plan.apply(loaded, layers)
        guard let written = outcome.written else { return .unwritten(outcome, layers: layers) }
        guard let loaded, plan.buildsOnCurrent else {
            // A replacement needs nothing of the set as stored, so it can repair one the store cannot read.
            return StoreWrite(
                outcome: outcome, set: try apply(.replace(written.set), root: root), readVersion: nil, version: nil, changed: nil, layers: layers)
        }
        // The store's one atomic step: the plan applied again only to a set changed since it was loaded (so migration
        // steps and update bodies run once when nobody else writes), a refusal there thrown so the store keeps its set.
        var refused = false
        let change = PrefsChange.transform { stored in
            guard !PlistValue.changedKeys(PlistValue.loadedOrAsIs(loaded), PlistValue.loadedOrAsIs(stored)).isEmpty else { return written.set }
            outcome = plan.apply(stored, layers)
            if let again = outcome.written { return again.set }
            guard let refusal = outcome.refusal else { return stored }  // nothing to do after all
            refused = true
            throw refusal
        }
        do {
            return StoreWrite(outcome: outcome, set: try apply(change, root: root), readVersion: nil, version: nil, changed: nil, layers: layers)
        } catch where refused {
            return .unwritten(outcome, layers: layers)
        }
    }

    func currentVersion(root: String) -> UInt64? { nil }
    func writeScope(root: String) -> String? { nil }
    func unchangedByOwnWrites(root: String, from old: UInt64, to new: UInt64) -> Bool { false }
    func damageNotice(root: String) -> PersistentPrefs.PrefsError? { nil }
    func acknowledgeDamage(root: String) throws -> String? { nil }
    func layerFiles(root: String) -> [LayerFile] { [] }
    func memoryLayers(root: String) -> (above: [LayerStack.Layer], below: [LayerStack.Layer]) { ([], []) }
    var canWatch: Bool { false }
    func watch(root: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? { nil }
    func watchProblem(root: String) -> PersistentPrefs.PrefsError? { nil }
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? { nil }
    var allSetsWatchProblem: PersistentPrefs.PrefsError? { nil }
    func schemaFile(root: String) -> URL? { nil }
}

extension SetStorage {
    /// The layers of the set under `root` as they are now (files read again when they changed).
    func layerStack(root: String) -> LayerStack { layerStack(root: root, memory: memoryLayers(root: root)) }

    /// The layers of the set under `root`: the files as they are now, between and above `memory` (taken by the caller).
    func layerStack(root: String, memory: (above: [LayerStack.Layer], below: [LayerStack.Layer])) -> LayerStack {
        let files = LayerReader(files: layerFiles(root: root)).stack(root: root)
        guard !memory.above.isEmpty || !memory.below.isEmpty else { return files }
        return LayerStack(layers: memory.above + files.layers + memory.below, problems: files.problems)
    }
}

/// Any ``PrefsStore`` that is not a ``SetStorage``, with the default answers (made by ``adapting(_:)``).
struct SetStorageAdapter: SetStorage {
    let base: any PrefsStore

    /// `store` as the engine uses it: itself when it is a ``SetStorage``, else adapted.
    static func adapting(_ store: any PrefsStore) -> any SetStorage {
        if let storage = store as? any SetStorage { return storage }
        return SetStorageAdapter(base: store)
    }

    var identifier: String { base.identifier }
    func load(root: String) throws -> [String: Any]? { try base.load(root: root) }
    func save(_ values: [String: Any], root: String) throws { try base.save(values, root: root) }
    func remove(root: String) throws { try base.remove(root: root) }
    func apply(_ change: PrefsChange, root: String) throws -> [String: Any] { try base.apply(change, root: root) }
    func roots() throws -> [String] { try base.roots() }
}

import Foundation

/// Where preference sets live: one `[String: Any]` dictionary per root key.
///
/// ``PersistentPrefs`` talks to storage only through this protocol. The library ships ``UserDefaultsStore`` (the
/// default), ``PlistFileStore`` and ``InMemoryStore`` (tests and previews); a store of your own can keep sets anywhere.
///
/// ```swift
/// /// Sets in a key-value database of your own (one process; its writes are atomic).
/// struct DatabaseStore: PrefsStore {
///     let database: MyDatabase
///     var identifier: String { "db:\(database.name)" }
///     func load(root: String) throws -> [String: Any]? { try database.dictionary(forKey: root) }
///     func save(_ values: [String: Any], root: String) throws { try database.set(values, forKey: root) }
///     func remove(root: String) throws { try database.remove(forKey: root) }
///     func roots() throws -> [String] { try database.keys().sorted() }
///     // apply(_:root:) comes from the protocol: load, change.applied(to:), save.
/// }
/// ```
///
/// Contract:
/// - ``save(_:root:)`` and ``remove(root:)`` return only when the change is durable: a process killed right after
///   they return must find the change on its next start. (The default store on Apple platforms meets this through
///   `cfprefsd`; only files the library writes itself also survive a power loss: <doc:ApplePlatforms>.)
/// - Values handed to ``save(_:root:)`` are already vetted and normalised: `String`, `NSNumber`, `Date`, `Data`, and
///   `[Any]` / `[String: Any]` of those, nested.
/// - ``load(root:)`` may hand back values in the platform's own shapes (on Linux, `Optional`-wrapped values and
///   `AnyHashable` keys); ``PersistentPrefs`` normalises them in one place.
/// - Throw ``PersistentPrefs/PersistentPrefs/PrefsError`` to describe a failure; other errors reach callers as
///   ``PersistentPrefs/PersistentPrefs/PrefsError/unknownError(error:)``.
/// - Two stores with equal ``identifier`` values are the same storage: instances using them share one in-memory
///   copy of each set.
///
/// A store of your own: every write is one ``apply(_:root:)`` call, which observers in this process hear of; a change
/// made outside the library reaches the sets in use when the store calls ``setDidChange(root:)`` (or an instance
/// calls ``PersistentPrefs/flush()``). System layers, locked keys, damage notes, schema files and watching belong to
/// the files ``UserDefaultsStore`` and ``PlistFileStore`` keep.
public protocol PrefsStore: Sendable {
    /// A string that identifies the underlying storage (for example the suite name).
    var identifier: String { get }

    /// Returns the dictionary stored under `root`, or `nil` when nothing is stored there.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the stored data cannot be read.
    func load(root: String) throws -> [String: Any]?

    /// Replaces the dictionary stored under `root` with `values`, the whole set, vetted and normalised; durable when
    /// it returns.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the write failed; nothing was changed.
    func save(_ values: [String: Any], root: String) throws

    /// Removes whatever is stored under `root`; durable when it returns.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the removal failed.
    func remove(root: String) throws

    /// Applies `change` (its values vetted and normalised) to the set stored under `root` and returns the whole set as
    /// now stored (values may be in the store's own shapes); durable when it returns.
    ///
    /// This is the store's one atomic read-modify-write step: every write of ``PersistentPrefs`` (one setter, a whole
    /// ``PersistentPrefs/batch(_:)``, an ``PersistentPrefs/update(_:)``) is exactly one call, and a
    /// ``PrefsChange/transform(_:)`` closure must see the set as stored at the moment of the write.
    ///
    /// The default implementation (load, change, save) holds no lock of its own, so it is atomic only among this
    /// process's users of the store. A store that other processes write too must implement this method under a lock
    /// they share, re-reading the set under it and applying the change with ``PrefsChange/applied(to:)`` (as
    /// ``UserDefaultsStore`` on Linux and ``PlistFileStore`` do with `flock`; the default store on Apple platforms has
    /// no such lock, <doc:ApplePlatforms>).
    ///
    /// If applying the change throws (a ``PrefsChange/transform(_:)`` body refused the result), store nothing and
    /// throw that error unchanged.
    ///
    /// - Throws: ``PersistentPrefs/PrefsError``; nothing was changed.
    func apply(_ change: PrefsChange, root: String) throws -> [String: Any]

    /// The root keys that currently hold a set, sorted.
    ///
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError`` when the store cannot be read.
    func roots() throws -> [String]
}

/// A change to one set, as ``PrefsStore/apply(_:root:)`` receives it.
///
/// A store applies it with ``applied(to:)`` to the set as stored, read under its lock. It prints as what it does
/// and to which keys: `merge of "Theme", "Volume"`, `set "Volume"`.
public enum PrefsChange: CustomStringConvertible {
    /// Replace the whole set; an empty set removes the root key.
    case replace([String: Any])
    /// Merge these values over the set (new values win).
    case merge([String: Any])
    /// Set one value, or remove it for `nil`.
    case set(key: String, value: Any?)
    /// Set each of these values whose key holds nothing yet (defaults); stored values win.
    case fillMissing([String: Any])
    /// Replace the set with what the closure makes of the set as stored (an atomic read-modify-write:
    /// ``PersistentPrefs/update(_:)``, ``PersistentPrefs/batch(_:)``).
    ///
    /// The closure gets the set in the store's own shapes and returns the new set, vetted and normalised; an empty
    /// result removes the root key. It throws to refuse the change: then nothing may be stored. A store may call it
    /// more than once, on a newer set each time; only the result of the last call is stored.
    case transform(([String: Any]) throws -> [String: Any])

    /// What the change does, and to which keys (sorted; values left out, as a log line should).
    public var description: String {
        func keys(_ values: some Collection<String>) -> String {
            values.isEmpty ? "no keys" : values.sorted().quotedList
        }
        switch self {
        case .replace(let values): return "replacement by \(keys(values.keys))"
        case .merge(let values): return "merge of \(keys(values.keys))"
        case .set(let key, let value): return value == nil ? "removal of \"\(key)\"" : "set \"\(key)\""
        case .fillMissing(let values): return "defaults for \(keys(values.keys))"
        case .transform: return "transform of the whole set"
        }
    }

    /// The only keys the change can change, when it says (`nil`: any key).
    var touchedKeys: Set<String>? {
        switch self {
        case .set(let key, _): return [key]
        case .merge(let values), .fillMissing(let values): return Set(values.keys)
        case .replace, .transform: return nil
        }
    }

    /// Whether the change builds on the set as stored.
    var buildsOnCurrent: Bool {
        if case .replace = self { return false }
        return true
    }

    /// `current`, the set as stored, with this change applied.
    ///
    /// - Throws: What a ``transform(_:)`` closure throws to refuse the change; the other changes never throw.
    public func applied(to current: [String: Any]) throws -> [String: Any] {
        switch self {
        case .replace(let values):
            return values
        case .merge(let values):
            return current.merging(values) { _, new in new }
        case .set(let key, let value):
            var updated = current
            updated[key] = value
            return updated
        case .fillMissing(let values):
            return current.merging(values) { stored, _ in stored }
        case .transform(let body):
            return try body(current)
        }
    }
}

extension PrefsStore {
    /// The default ``PrefsStore/apply(_:root:)``: load, apply `change`, save (or remove when empty), and put the old
    /// set back if the save fails.
    public func apply(_ change: PrefsChange, root: String) throws -> [String: Any] {
        // A whole-set replacement does not read the old set, so it can repair an unreadable one.
        let current = change.buildsOnCurrent ? (try load(root: root) ?? [:]) : nil
        let updated = try change.applied(to: current ?? [:])
        do {
            if updated.isEmpty { try remove(root: root) } else { try save(updated, root: root) }
        } catch {
            // A store such as UserDefaults may have changed its memory before its disk write failed.
            if let current {
                if current.isEmpty { try? remove(root: root) } else { try? save(current, root: root) }
            }
            throw error
        }
        return updated
    }
}

// MARK: - Outside changes

extension PrefsStore {
    /// Tells the instances in this process that use this store that the set under `root` was changed outside the
    /// library, so they read it again and their observers hear of it.
    ///
    /// The stores in this package need no such call: they watch their files (see <doc:ObservingChanges>). A store of
    /// your own that learns of changes some other way (a server push, a database trigger) calls this when it does.
    public func setDidChange(root: String) {
        let listener = StoreChanges.listener.withLock { $0 }
        listener?(identifier, root)
    }
}

/// Who hears ``PrefsStore/setDidChange(root:)``: the engine's registry of shared sets, once it makes its first set.
/// Kept here so the stores know nothing of the engine above them.
enum StoreChanges {
    /// Called with a store's identifier and a root key; `nil` until the engine listens.
    static let listener = Locked<(@Sendable (_ storeIdentifier: String, _ root: String) -> Void)?>(nil)
}

extension ChangeWatcher {
    /// ``degradation(for:)`` as the error a store reports.
    func problem(for file: URL) -> PersistentPrefs.PrefsError? {
        degradation(for: file).map { .watchDegraded(path: file.path, reason: $0) }
    }

    /// ``watch(_:_:)``, as a way to stop for ``SetStorage/watch(root:_:)``.
    func watching(_ file: URL, _ onChange: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let token = watch(file, onChange)
        return { self.unwatch(token) }
    }
}

import Foundation

/// Gives ``PersistentPrefs`` its `Self`-typed transaction methods: ``batch(_:)``,
/// ``transaction(_:)`` and the typed ``update(_:_:)``.
///
/// `PersistentPrefs` adopts it; a class method cannot take a `Self`-typed closure, a protocol
/// extension can, so a subclass's batch body gets the subclass (`prefs.batch { $0.volume = 7 }`).
/// Nothing else needs to adopt it.
public protocol PrefsTransacting: AnyObject {}

extension PersistentPrefs: PrefsTransacting {}

extension PrefsTransacting where Self: PersistentPrefs {
    /// Collects the changes `body` makes and writes them together, in one durable store write,
    /// all or nothing.
    ///
    /// Inside `body`, `@Pref` setters, the subscript, ``PersistentPrefs/values`` and the
    /// throwing setters of this instance are collected rather than written, and this
    /// instance's reads see the collected changes. When `body` returns, the changes are
    /// written in one step under the store's lock (one ``PrefsStore/apply(_:root:)``), so
    /// another process sees the set as before or as after, never half of it, and observers get
    /// one event naming every changed key.
    ///
    /// - If `body` throws, nothing is written, ``PersistentPrefs/lastError`` holds the error
    ///   (``PersistentPrefs/PrefsError/unknownError(error:)`` for errors of your own), and the
    ///   error is rethrown.
    /// - If any change inside is refused (a key not in ``PersistentPrefs/keys``, a value a
    ///   property list cannot store), nothing is written and ``PersistentPrefs/lastError``
    ///   names the refused keys (all of them, when the refusals are of one kind). A store
    ///   failure is reported the same way.
    /// - A `batch` inside a batch joins the outer one: its changes are written with the outer
    ///   batch's. If the inner `body` throws, only its own changes are dropped.
    /// - ``PersistentPrefs/update(_:)`` inside a batch of the same instance is refused with
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)``: its body would have to
    ///   run when the batch is written, not when it is called.
    /// - Only this instance's changes are collected; other instances of the same set write as
    ///   usual. An instance is not meant for several threads at once, and a batch is no
    ///   exception.
    ///
    /// ```swift
    /// prefs.batch { prefs in
    ///     prefs.fontSize = 16
    ///     prefs.theme = .dark
    ///     prefs.recent = []
    /// }   // one write; lastError == nil when it landed
    /// ```
    ///
    /// ``transaction(_:)`` is the same, but throws refusals and store failures too.
    ///
    /// - Parameter body: Makes the changes, through the instance it is given.
    /// - Throws: Only what `body` throws.
    public func batch(_ body: (Self) throws -> Void) rethrows {
        let pending: PendingChanges?
        do {
            pending = try collectingWrites { try body(self) }
        } catch {
            lastError = PrefsDomain.mapped(error)
            throw error
        }
        guard let pending else { return }  // a nested batch: the outer one writes
        record { try commit(pending) }
    }

    /// ``batch(_:)``, throwing every failure: what `body` throws, a refused change, or a store
    /// failure. Nothing is written when it throws.
    ///
    /// - Parameter body: Makes the changes, through the instance it is given.
    /// - Throws: What `body` throws, or a ``PersistentPrefs/PrefsError``.
    public func transaction(_ body: (Self) throws -> Void) throws {
        try recordingThrows {
            guard let pending = try collectingWrites({ try body(self) }) else { return }
            try commit(pending)
        }
    }

    /// Changes one property atomically: reads it from the set as stored, under the store's
    /// cross-process lock, lets `body` change it, and writes the result in the same locked
    /// step, like ``PersistentPrefs/update(_:)``.
    ///
    /// ```swift
    /// try prefs.update(\.launchCount) { $0 += 1 }
    /// try prefs.update(\.recentFiles) { $0.insert(path, at: 0) }
    /// ```
    ///
    /// The key path may name any property of the subclass, `@Pref` or computed: whatever its
    /// getter reads and its setter writes goes through the locked copy.
    ///
    /// - Parameters:
    ///   - keyPath: The property to change.
    ///   - body: Changes the value; it may run more than once (see ``PersistentPrefs/update(_:)``).
    /// - Throws: What `body` throws, or a ``PersistentPrefs/PrefsError`` (a refused value, a
    ///   store failure, ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` inside a
    ///   batch). Nothing is written when it throws.
    public func update<Value>(_ keyPath: ReferenceWritableKeyPath<Self, Value>, _ body: (inout Value) throws -> Void) throws {
        try recordingThrows {
            try transact { current in
                // The instance's reads and writes inside go to the locked copy.
                let pending = try collectingWrites(over: current) {
                    var value = self[keyPath: keyPath]
                    try body(&value)
                    self[keyPath: keyPath] = value
                }
                if let refusal = pending?.refusal { throw refusal }
                return pending?.applied(to: current) ?? current
            }
        }
    }
}

extension PersistentPrefs {
    /// Changes the set atomically, across threads and processes: runs `body` on the set as
    /// stored — re-read under the store's cross-process lock — and writes what it leaves in the
    /// same locked step.
    ///
    /// Concurrent updaters in any number of threads and processes never lose each other's
    /// changes: a counter incremented by four processes 250 times each ends at 1,000.
    ///
    /// ```swift
    /// try prefs.update { set in
    ///     set["Launch Count"] = (set["Launch Count"] as? Int ?? 0) + 1
    /// }
    /// ```
    ///
    /// - The result is vetted like any write: keys that `body` adds or changes must be in
    ///   ``keys``, and their values must be property-list values. Keys already stored that
    ///   `body` leaves alone or removes pass, even if ``keys`` no longer lists them. A refused result
    ///   writes nothing and names the keys.
    /// - `body` runs while the store is locked: keep it short, and change the set through its
    ///   dictionary. Writing the same set through any instance inside it is refused with
    ///   ``PrefsError/transactionInProgress(root:)``; other sets of the same store (the same
    ///   suite file) must not be touched from inside it. A write to a set in another file waits
    ///   for that set's writers, except one that would wait for this update (its writer is
    ///   itself waiting to write this set): that write is refused with `transactionInProgress`.
    /// - `body` may run more than once, each time on a newer set, when a program that does not
    ///   use this library rewrites the file while the update is being written; only the last
    ///   run is stored. Keep it free of other side effects.
    /// - Inside a ``batch(_:)`` of this instance, `update` is refused with
    ///   ``PrefsError/transactionInProgress(root:)``.
    /// - ``lastError`` is `nil` after a successful update, otherwise the error thrown.
    ///
    /// - Parameter body: Changes the set.
    /// - Throws: What `body` throws (unchanged), or a ``PrefsError``. Nothing is written when it
    ///   throws.
    public func update(_ body: (inout [String: Any]) throws -> Void) throws {
        try recordingThrows {
            try transact { current in
                var updated = current
                try body(&updated)
                return updated
            }
        }
    }

    // MARK: - Internals shared by batches and updates

    /// Runs `body` with this instance's writes collected: the outermost call returns what was
    /// collected; a nested call joins the outer batch and returns `nil`.
    ///
    /// - Parameters:
    ///   - base: The set the collected changes apply to, when it is known (an update's locked
    ///     copy); reads inside then never reach the shared set.
    ///   - body: Makes the changes.
    /// - Returns: The collected changes, or `nil` for a nested call.
    func collectingWrites(over base: [String: Any]? = nil, _ body: () throws -> Void) rethrows -> PendingChanges? {
        let expected = lastBatchCount
        let outer = withPending { pending -> PendingChanges? in
            let outer = pending
            if outer == nil { pending = PendingChanges(base: base, expectedCount: expected) }
            return outer
        }
        do {
            try body()
        } catch {
            withPending { $0 = outer }  // nested: back to where it started; outermost: nothing pending
            throw error
        }
        guard outer == nil else { return nil }  // nested: the outer batch keeps collecting
        let collected = withPending { pending in
            defer { pending = nil }
            return pending
        }
        lastBatchCount = collected?.edits.count ?? 0
        return collected
    }

    /// Writes what a batch collected, in one store write; throws the batch's refusal instead.
    func commit(_ pending: PendingChanges) throws {
        if let refusal = pending.refusal { throw refusal }
        guard let (change, report) = pending.reportingChange else { return }
        // A batch on the set as stored reports the keys it changed: no set of those it touched.
        try resolvedDomain().write(change, schema: schemaPlan, report: report)
    }

    /// Writes what `make` makes of the set as stored, in one locked step of the store, after
    /// vetting the keys it changed.
    func transact(_ make: ([String: Any]) throws -> [String: Any]) throws {
        let root = key
        guard withPending({ $0 == nil }) else { throw PrefsError.transactionInProgress(root: root) }
        let allowed = Set(keys)  // overridable: read before any lock is taken
        let rules = ruleCheck()
        let plan = schemaPlan
        let domain = try resolvedDomain()
        try withoutActuallyEscaping(make) { make in
            try domain.write(
                .transform { stored in
                    do {
                        guard case .success(let current) = PlistValue.normalizedSet(stored, for: .loading) else {
                            throw PrefsError.invalidStoredValue(key: root)
                        }
                        return try Self.vetted(try make(current), changing: current, allowed: allowed, rules: rules)
                    } catch {
                        throw PrefsDomain.TransformFailure(underlying: error)
                    }
                }, schema: plan)
        }
    }

    /// `updated`, with the values of the keys it adds or changes against `current` vetted:
    /// those keys must be in `allowed`, their values property-list values that pass `rules`.
    /// Keys it removes pass, whatever they are.
    static func vetted(
        _ updated: [String: Any], changing current: [String: Any], allowed: Set<String>,
        rules: Rules?
    ) throws -> [String: Any] {
        let changed = PlistValue.changedKeys(current, updated)
        // Removing a key is always allowed: it only drops what an older version stored.
        let refused = changed.filter { updated[$0] != nil && !allowed.contains($0) && $0 != schemaVersionKey }
        guard refused.isEmpty else { throw PrefsError.incorrectKeys(invalidElements: refused.sorted()) }
        var result = updated
        let candidates = try PlistValue.normalizedSet(updated.filter { changed.contains($0.key) }).get()
        if let problem = rules?.problem(in: candidates) { throw problem }
        for (key, value) in candidates { result[key] = value }
        return result
    }

    /// Runs `body` like ``record(_:)`` — ``lastError`` tells the outcome — and also throws its error.
    func recordingThrows(_ body: () throws -> Void) throws {
        var failure: (any Error)?
        record {
            do {
                try body()
            } catch {
                failure = error
                throw error
            }
        }
        if let failure { throw failure }
    }
}

// MARK: - Pending changes

/// The changes a running batch has collected, as this instance's reads see them.
struct PendingChanges {
    /// One collected change of a key.
    enum Edit {
        case set(Any)
        case remove
    }

    /// The set the changes apply to when it is already known: the batch replaced the whole set
    /// (``PersistentPrefs/values``), or it runs on an update's locked copy. `nil`: the set as
    /// stored when the batch is written.
    var base: [String: Any]?
    /// Keys set or removed, the last change of each.
    var edits: [String: Edit] = [:]
    /// Defaults added with ``PersistentPrefs/addMissingValues(_:)``: stored only where the key
    /// holds nothing when the batch is written.
    var fills: [String: Any] = [:]
    /// Why the batch must not be written, naming the refused keys.
    var refusal: PersistentPrefs.PrefsError?
    /// ``PersistentPrefs/keys`` as a set, once the batch's first change was vetted.
    var allowedKeys: Set<String>?

    /// How many keys the batch is expected to change (the instance's last batch): once it has
    /// changed ``reserveAfter`` keys, its table of edits makes room for them all at once
    /// rather than growing (and rehashing every key) five or six times on the way to 1,000.
    let expectedCount: Int
    /// How many edits a batch makes before it trusts ``expectedCount``: a small batch allocates
    /// nothing for a large one that came before.
    static var reserveAfter: Int { 32 }

    init(base: [String: Any]?, expectedCount: Int = 0) {
        self.base = base
        self.expectedCount = expectedCount
    }

    /// Adds a vetted change.
    mutating func collect(_ change: PrefsChange) {
        switch change {
        case .replace(let values):
            base = values
            edits = [:]
            fills = [:]
        case .merge(let values):
            for (key, value) in values { edits[key] = .set(value) }
        case .set(let key, let value):
            if edits.count == Self.reserveAfter, expectedCount > edits.count { edits.reserveCapacity(expectedCount) }
            edits[key] = value.map(Edit.set) ?? .remove
        case .fillMissing(let values):
            for (key, value) in values {
                switch edits[key] {
                case .set?: break
                case .remove?: edits[key] = .set(value)
                case nil: if fills[key] == nil { fills[key] = value }
                }
            }
        case .transform:
            preconditionFailure("an update is never collected")
        }
    }

    /// Spoils the batch: it will not be written. Refusals of one kind are merged, so every
    /// refused key is named; otherwise the first refusal is kept.
    mutating func refuse(_ error: PersistentPrefs.PrefsError) {
        switch (refusal, error) {
        case (nil, _):
            refusal = error
        case let (.incorrectKeys(first)?, .incorrectKeys(more)):
            refusal = .incorrectKeys(invalidElements: Array(Set(first + more)).sorted())
        case let (.valuesNotPlistCompatible(first)?, .valuesNotPlistCompatible(more)):
            refusal = .valuesNotPlistCompatible(invalidElements: Array(Set(first + more)).sorted())
        default:
            break
        }
    }

    /// The value of `key` with the batch applied; `stored` gives the set's own value.
    func value(forKey key: String, stored: () throws -> Any?) rethrows -> Any? {
        switch edits[key] {
        case .set(let value)?: return value
        case .remove?: return nil
        case nil:
            let current = try base.map { $0[key] } ?? stored()
            return current ?? fills[key]
        }
    }

    /// `current` (or ``base``, when known) with the batch applied.
    func applied(to current: [String: Any]) -> [String: Any] {
        applied(to: current, reportingTo: nil)
    }

    /// ``applied(to:)``, telling `report` (when there is one) what the batch was applied to and
    /// which keys it changed: set to another value, added or removed. One look-up a key: the
    /// value replaced comes back from the insertion.
    func applied(to current: [String: Any], reportingTo box: BatchReport.Box?) -> [String: Any] {
        var result = base ?? current
        var changed: Set<String> = []
        var keepsKeys = true
        let reporting = box != nil
        if reporting { changed.reserveCapacity(edits.count + fills.count) }
        // Only a report needs the keys (a set of them costs a hash a key).
        func note(_ key: String, keepingKeys: Bool) {
            if reporting { changed.insert(key) }
            keepsKeys = keepsKeys && keepingKeys
        }
        for (key, edit) in edits {
            switch edit {
            case .set(let value):
                if let replaced = result.updateValue(value, forKey: key) {
                    if reporting, !PlistValue.sameValues(replaced, value) { note(key, keepingKeys: true) }
                } else {
                    note(key, keepingKeys: false)
                }
            case .remove:
                if result.removeValue(forKey: key) != nil { note(key, keepingKeys: false) }
            }
        }
        for (key, value) in fills where result[key] == nil {
            result[key] = value
            note(key, keepingKeys: false)
        }
        box?.report = BatchReport(base: base ?? current, changed: changed, keepsKeys: keepsKeys)
        return result
    }

    /// The one store change that writes the batch (`nil` when it changes nothing) and, for a
    /// change applied to the set as stored, where its store write leaves what it found (see
    /// ``BatchReport``).
    var reportingChange: (PrefsChange, BatchReport.Box?)? {
        if let base { return (.replace(applied(to: base)), nil) }
        if edits.isEmpty && fills.isEmpty { return nil }
        let box = BatchReport.Box()
        return (.transform { current in applied(to: current, reportingTo: box) }, box)
    }
}

/// What a batch's store transform found: the set it was applied to and the keys it changed.
/// The write tells observers those keys instead of comparing each touched key again, when the
/// set it was applied to is the very set cached (see `PrefsDomain.write`).
struct BatchReport {
    /// The set the batch was applied to (its last run's, when the store ran it again).
    let base: [String: Any]
    /// The keys whose values the batch changed.
    let changed: Set<String>
    /// Whether the result has exactly the keys of `base` (no key added or removed).
    let keepsKeys: Bool

    /// Where the transform leaves its report for the write that runs it.
    final class Box {
        /// The last run's report; `nil` until the transform has run.
        var report: BatchReport?
        init() { report = nil }
    }
}

extension PendingChanges {
    /// A copy of pending changes behind one reference, so the read path passes one word.
    final class Box {
        let changes: PendingChanges
        init(_ changes: PendingChanges) { self.changes = changes }
    }
}

/// What a read of an instance sees: the shared set, with the instance's pending batch over it.
///
/// Static functions of the two parts rather than a value holding them: a value would retain the
/// domain on every read.
enum SetView {
    /// The whole set.
    @inline(__always)
    static func values(_ domain: PrefsDomain, _ pending: PendingChanges.Box?) throws -> [String: Any] {
        guard let pending = pending?.changes else { return try domain.values() }
        return pending.applied(to: try pending.base ?? domain.values())
    }

    /// One value.
    @inline(__always)
    static func value(forKey key: String, _ domain: PrefsDomain, _ pending: PendingChanges.Box?) throws -> Any? {
        guard let pending = pending?.changes else { return try domain.value(forKey: key) }
        return try batchedValue(forKey: key, domain, pending)
    }

    /// One value inside a batch or update: the batch's, else the set's; a locked key reads its
    /// mandatory value, and a key the user's set lacks its system layers' value.
    @inline(never)
    private static func batchedValue(forKey key: String, _ domain: PrefsDomain, _ pending: PendingChanges) throws -> Any? {
        let layers = try domain.layers()
        if layers.isEmpty { return try pending.value(forKey: key) { try domain.value(forKey: key) } }
        if layers.isLocked(key) { return layers.layerValue(forKey: key) }
        return try pending.value(forKey: key) { try domain.values()[key] } ?? layers.layerValue(forKey: key)
    }

    /// The `as?` answers for one value.
    @inline(__always)
    static func number(forKey key: String, _ domain: PrefsDomain, _ pending: PendingChanges.Box?) throws -> ExactNumber? {
        guard let pending else { return try domain.number(forKey: key) }
        return try batchedNumber(forKey: key, domain, pending)
    }

    @inline(never)
    private static func batchedNumber(forKey key: String, _ domain: PrefsDomain, _ pending: PendingChanges.Box) throws -> ExactNumber? {
        try value(forKey: key, domain, pending).flatMap(ExactNumber.init)
    }

    /// One value as a `String`.
    @inline(__always)
    static func string(forKey key: String, _ domain: PrefsDomain, _ pending: PendingChanges.Box?) throws -> String? {
        guard let pending else { return try domain.string(forKey: key) }
        return try value(forKey: key, domain, pending) as? String
    }
}

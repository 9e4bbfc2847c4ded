import Foundation

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
            lastError = SharedSet.mapped(error)
            throw error
        }
        guard let pending else { return }  // a nested batch: the outer one writes
        reportingErrors { try commit(pending) }
    }

    /// ``batch(_:)``, throwing every failure: what `body` throws, a refused change, or a store
    /// failure. Nothing is written when it throws.
    ///
    /// - Parameter body: Makes the changes, through the instance it is given.
    /// - Throws: What `body` throws, or a ``PersistentPrefs/PrefsError``.
    public func transaction(_ body: (Self) throws -> Void) throws {
        try reportingAndThrowing {
            guard let pending = try collectingWrites({ try body(self) }) else { return }
            try commit(pending)
        }
    }

    /// Changes one property atomically: reads it from the set as stored, under the store's
    /// lock, lets `body` change it, and writes the result in the same locked step, like
    /// ``PersistentPrefs/update(_:)`` (across processes where the lock spans them).
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
        try reportingAndThrowing {
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
    /// stored — re-read under the store's lock — and writes what it leaves in the same locked
    /// step.
    ///
    /// Concurrent updaters in any number of threads and processes never lose each other's
    /// changes: a counter incremented by four processes 250 times each ends at 1,000. Across
    /// processes that holds with the library's own files (on Linux, and ``PlistFileStore``
    /// everywhere); the default store on Apple platforms is exact within one process
    /// (<doc:ApplePlatforms>).
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
        try reportingAndThrowing {
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
        let outer = withPending { pending -> PendingChanges? in
            let outer = pending
            if outer == nil { pending = PendingChanges(base: base) }
            return outer
        }
        do {
            try body()
        } catch {
            withPending { $0 = outer }  // nested: back to where it started; outermost: nothing pending
            throw error
        }
        guard outer == nil else { return nil }  // nested: the outer batch keeps collecting
        return withPending { pending in
            defer { pending = nil }
            return pending
        }
    }

    /// Writes what a batch collected, in one store write; throws the batch's refusal instead.
    func commit(_ pending: PendingChanges) throws {
        if let refusal = pending.refusal { throw refusal }
        guard let edit = pending.edit else { return }
        try resolvedSet().write(edit, schema: schemaPlan)
    }

    /// Writes what `make` makes of the set as stored, in one locked step of the store, after
    /// vetting the keys it changed.
    func transact(_ make: ([String: Any]) throws -> [String: Any]) throws {
        let root = key
        guard withPending({ $0 == nil }) else { throw PrefsError.transactionInProgress(root: root) }
        let vetting = vetting()  // overridable parts: worked out before any lock is taken
        let plan = schemaPlan
        let sharedSet = try resolvedSet()
        try withoutActuallyEscaping(make) { make in
            try sharedSet.write(
                PrefsChange.transform { stored in
                    guard case .success(let current) = PlistValue.normalizedSet(stored, for: .loading) else {
                        throw PrefsError.invalidStoredValue(key: root)
                    }
                    return try vetting.vet(try make(current), changing: current, scope: .changed)
                }, schema: plan)
        }
    }

    /// Runs `body` like ``reportingErrors(_:)`` — ``lastError`` tells the outcome — and also throws its error.
    func reportingAndThrowing(_ body: () throws -> Void) throws {
        var failure: (any Error)?
        reportingErrors {
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


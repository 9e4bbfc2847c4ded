import Foundation

extension PersistentPrefs: PrefsTransacting {}

extension PrefsTransacting where Self: PersistentPrefs {
    /// Collects the changes `body` makes through this instance (its reads see them) and writes them in one durable
    /// store write, all or nothing; a refused change or store failure writes nothing and is reported in
    /// ``PersistentPrefs/lastError``. A nested batch joins the outer one. Only this instance's changes are
    /// collected; other instances of the same set write as usual. An instance is not meant for several threads at
    /// once, and a batch is no exception. See <doc:Transactions>.
    ///
    /// ```swift
    /// prefs.batch { prefs in
    ///     prefs.fontSize = 16
    ///     prefs.theme = .dark
    ///     prefs.recent = []
    /// }   // one write; lastError == nil when it landed
    /// ```
    ///
    /// - Parameter body: Makes the changes, through the instance it is given.
    /// - Throws: Only what `body` throws (nothing is written then; ``PersistentPrefs/lastError`` holds it too).
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

    /// ``batch(_:)``, throwing every failure; nothing is written when it throws.
    ///
    /// - Parameter body: Makes the changes, through the instance it is given.
    /// - Throws: What `body` throws, or a ``PersistentPrefs/PrefsError`` (a refused change, a store failure).
    public func transaction(_ body: (Self) throws -> Void) throws {
        try reportingAndThrowing {
            guard let pending = try collectingWrites({ try body(self) }) else { return }
            try commit(pending)
        }
    }

    /// Changes one property (any property of the subclass, `@Pref` or computed) atomically, like
    /// ``PersistentPrefs/update(_:)``: its getter and setter run against the set as stored, under the store's lock.
    ///
    /// ```swift
    /// try prefs.update(\.launchCount) { $0 += 1 }
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The property to change.
    ///   - body: Changes the value; it may run more than once (see ``PersistentPrefs/update(_:)``).
    /// - Throws: What `body` throws, or a ``PersistentPrefs/PrefsError`` (a refused value, a store failure,
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` inside a batch). Nothing is written then.
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
    /// Changes the set atomically, across threads and processes (with the library's own files; <doc:ApplePlatforms>):
    /// runs `body` on the set as stored, re-read under the store's lock, and writes what it leaves in the same locked
    /// step. See <doc:Transactions>.
    ///
    /// ```swift
    /// try prefs.update { set in
    ///     set["Launch Count"] = (set["Launch Count"] as? Int ?? 0) + 1
    /// }
    /// ```
    ///
    /// Only the keys `body` adds or changes are vetted. `body` runs while the store is locked: keep it short, change
    /// the set through its dictionary, and touch no other set of the same store; it may run more than once (on a
    /// newer set each time), so keep it free of other side effects. ``lastError`` tells the outcome.
    ///
    /// - Parameter body: Changes the set.
    /// - Throws: What `body` throws (unchanged), or a ``PrefsError`` (``PrefsError/transactionInProgress(root:)`` inside
    ///   a ``batch(_:)``, or for a write in `body` that would wait for itself). Nothing is written then.
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

    /// Runs `body` with this instance's writes collected over `base` (an update's locked copy, when known); returns
    /// what was collected, or `nil` for a nested call, which joins the outer batch.
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

    /// Writes what `make` makes of the set as stored, vetted, in one locked step of the store.
    func transact(_ make: ([String: Any]) throws -> [String: Any]) throws {
        let root = key
        guard withPending({ $0 == nil }) else { throw PrefsError.transactionInProgress(root: root) }
        let vetting = vetting()  // overridable parts: worked out before any lock is taken
        let plan = schemaPlan
        let sharedSet = try resolvedSet()
        try withoutActuallyEscaping(make) { make in
            _ = try sharedSet.write(
                .change(PrefsChange.transform { stored in
                    guard case .success(let current) = PlistValue.normalizedSet(stored, for: .loading) else {
                        throw PrefsError.invalidStoredValue(key: root)
                    }
                    return try vetting.vet(try make(current), changing: current, scope: .changed)
                }), schema: plan)
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

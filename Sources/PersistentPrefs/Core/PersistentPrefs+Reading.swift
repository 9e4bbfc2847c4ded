import Foundation

// The read path of an instance: every typed read by key goes through `typed`, served at once from the shared set's
// state or through ``PersistentPrefs/read(tracking:keepingError:_:)``. A `@Pref` read remembers its answer while
// the set's read stamp stays the same (see ``recall(_:_:)``).

extension PersistentPrefs {
    /// ``value(forKey:as:)``, telling the Observation framework that `tracking` was read.
    @inlinable
    func value<T>(forKey key: String, as type: T.Type, tracking: KeyPath<PrefsKeySpace, Int>) -> T? {
        typed(type, forKey: key, tracking: tracking, keepingError: false)
    }

    /// Every typed read by key: the number's cached answers for `Int`, `Double`, `Float` and `Bool`, the string's for
    /// `String`, else the stored value cast (inlined: one branch survives). `tracking`: what the Observation
    /// framework is told was read; `keepingError`: leave ``lastError`` as it is rather than clearing it on success.
    @inlinable @inline(__always)
    func typed<T>(_ type: T.Type, forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool) -> T? {
        if T.self == Int.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError)?.int.map { $0 as! T } }
        if T.self == Double.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError)?.double.map { $0 as! T } }
        if T.self == Float.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError)?.float.map { $0 as! T } }
        if T.self == Bool.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError)?.bool.map { $0 as! T } }
        if T.self == String.self { return cachedString(forKey: key, tracking: tracking, keepingError: keepingError).map { $0 as! T } }
        // Unwrapped first: a cast from `Any?` looks into the optional in a second, nested cast.
        guard let value = rawValue(forKey: key, tracking: tracking, keepingError: keepingError) else { return nil }
        return value as? T
    }

    /// The `as?` answers for a stored number (worked out once per value), callable from inlinable code.
    @usableFromInline
    func numberCasts(forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool) -> NumberCasts? {
        readPublished(tracking: tracking, keepingError: keepingError) { $0.loadedNumber(forKey: key) }
            ?? read(tracking: tracking, keepingError: keepingError) { try $0.number(forKey: key) } ?? nil
    }

    /// A value as a `String` (worked out once per value), callable from inlinable code.
    @usableFromInline
    func cachedString(forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool) -> String? {
        readPublished(tracking: tracking, keepingError: keepingError) { $0.loadedString(forKey: key) }
            ?? read(tracking: tracking, keepingError: keepingError) { try $0.string(forKey: key) } ?? nil
    }

    /// The stored value under `key` (the subscript getter), callable from inlinable code.
    @usableFromInline
    func rawValue(forKey key: String, tracking: KeyPath<PrefsKeySpace, Int> = \.wholeSet, keepingError: Bool = false) -> Any? {
        readPublished(tracking: tracking, keepingError: keepingError) { $0.loadedValue(forKey: key) }
            ?? read(tracking: tracking, keepingError: keepingError) { try $0.value(forKey: key) } ?? nil
    }

    /// Calls `take` (copying `pref`'s remembered answer) under this instance's lock when the read can be served at
    /// once and ``SharedSet/readStamp`` is the answer's, and returns an empty miss; otherwise the miss names the set
    /// and its stamp when the read can be served at once.
    @usableFromInline
    func recall(_ pref: PrefKey, _ take: () -> Void) -> RecallMiss {
        let generation = currentGeneration()
        return state.withLock { state -> RecallMiss in
            // A `Pref` read leaves `lastError` as it is.
            let stamp = state.quickStamp(generation: generation, keepingError: true)
            guard stamp != 0 else { return RecallMiss(stamp: 0, sharedSet: nil) }
            // A stamp is never 0 without a lease.
            let sharedSet = state.lease!.sharedSet
            guard pref.rememberedStamp == stamp else { return RecallMiss(stamp: stamp, sharedSet: sharedSet) }
            take()
            // `access` records the read for this thread's `withObservationTracking` and calls no one.
            sharedSet.feed.access(pref.observationKey)
            return RecallMiss(stamp: 0, sharedSet: nil)
        }
    }

    /// `body`'s answer served at once, or `nil` when the read must take ``read(tracking:keepingError:_:)``'s way (a
    /// batch running, the set not loaded or damaged, a ``lastError`` to clear).
    @inline(__always)
    private func readPublished<Result>(
        tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool = false, _ body: (SharedSet) -> Result??
    ) -> Result?? {
        let generation = currentGeneration()
        guard let sharedSet = state.withLock({ $0.quickSet(generation: generation, keepingError: keepingError) }), let known = body(sharedSet)
        else { return nil }
        sharedSet.feed.access(tracking)
        return known
    }

    /// Runs a read registering `tracking`; success clears ``lastError`` unless `keepingError`, failure sets it (`nil`).
    func read<Result>(
        tracking: KeyPath<PrefsKeySpace, Int> = \.wholeSet, keepingError: Bool = false,
        _ body: (SetView) throws -> Result
    ) -> Result? {
        let generation = currentGeneration()
        // Inside a batch, reads see its pending changes over the shared set.
        let (cached, hadError, pending) = state.withLock { state in
            (state.sharedSet(generation: generation), state.failed, state.pending)
        }
        do {
            let sharedSet = try cached ?? resolvedSet()
            if Self.watchesSets { sharedSet.watchOnRead() }  // once the watch runs, one look at a flag
            sharedSet.feed.access(tracking)
            let result = try body(SetView(sharedSet: sharedSet, pending: pending))
            if let notice = sharedSet.damageNotice() {
                lastError = notice  // every reader of a damaged store learns it
            } else if hadError && !keepingError {
                state.withLock { $0.lastError = nil }
            }
            return result
        } catch {
            lastError = SharedSet.mapped(error)
            return nil
        }
    }

    /// Runs an operation and reports in ``lastError`` the error it threw, else its store's damage, else `nil`; an
    /// error recorded by a step that does not fail it (a migration on first use) is kept. The error also goes to the
    /// typed `set` running on this thread, if any (see ``WriteOutcome``).
    func reportingErrors(_ body: () throws -> Void) {
        let hadError = state.withLock { $0.failed }
        do {
            try body()
            let notice = cachedSet?.damageNotice()
            if notice != nil || hadError { state.withLock { $0.lastError = notice } }
        } catch {
            let mapped = SharedSet.mapped(error)
            lastError = mapped
            WriteOutcome.current?.record(mapped)
        }
    }
}

/// What a read of an instance sees: the shared set, with the instance's pending batch over it.
struct SetView {
    let sharedSet: SharedSet
    /// The instance's running batch, if any.
    let pending: PendingChanges?

    /// The whole set.
    func values() throws -> [String: Any] {
        guard let pending else { return try sharedSet.values() }
        return pending.applied(to: try pending.base ?? sharedSet.values())
    }

    /// One value, the batch's over the set's; a locked key reads its mandatory value, a missing one its layers'.
    func value(forKey key: String) throws -> Any? {
        guard let pending else { return try sharedSet.value(forKey: key) }
        let layers = try sharedSet.layers()
        if layers.isEmpty { return try pending.value(forKey: key) { try sharedSet.value(forKey: key) } }
        if layers.isLocked(key) { return layers.layerValue(forKey: key) }
        return try pending.value(forKey: key) { try sharedSet.values()[key] } ?? layers.layerValue(forKey: key)
    }

    /// The `as?` answers for one value.
    func number(forKey key: String) throws -> NumberCasts? {
        guard pending != nil else { return try sharedSet.number(forKey: key) }
        return try value(forKey: key).flatMap(NumberCasts.init)
    }

    /// One value as a `String`.
    func string(forKey key: String) throws -> String? {
        guard pending != nil else { return try sharedSet.string(forKey: key) }
        return try value(forKey: key) as? String
    }
}

/// What ``PersistentPrefs/recall(_:_:)`` found when a remembered answer was not current: the set a read can be
/// served from at once and its ``SharedSet/readStamp``, or no set (the slow way).
@usableFromInline
struct RecallMiss {
    let stamp: Int
    let sharedSet: SharedSet?
}

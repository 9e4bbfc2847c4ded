import Foundation

// The read path of an instance: every typed read goes through one generic body (`typed`). A
// `@Pref` read whose remembered answer carries the shared set's current read stamp takes this
// instance's lock and nothing else; a read served at once otherwise takes this instance's lock
// (which set, no batch, nothing to report) and then the shared set's for the value; any other read
// (a batch running, the set not loaded or damaged, an error to clear) goes the way of
// ``PersistentPrefs/read(tracking:keepingError:_:)``.

extension PersistentPrefs {
    /// ``value(forKey:as:)``, telling the Observation framework that `tracking` was read.
    @inlinable
    func value<T>(forKey key: String, as type: T.Type, tracking: KeyPath<PrefsKeySpace, Int>) -> T? {
        typed(type, forKey: key, tracking: tracking, keepingError: false)
    }

    /// ``value(forKey:as:)`` for a ``Pref`` read, which leaves ``lastError`` alone.
    @inlinable
    func value<T>(as type: T.Type, _ pref: PrefKey) -> T? {
        typed(type, forKey: pref.key, tracking: pref.observationKey, keepingError: true, remembering: pref)
    }

    /// The one body of every typed read: a value as `T`, from the answer that serves `T` — the
    /// number's answers for `Int`, `Double`, `Float` and `Bool`, the string's for `String`, else
    /// the stored value cast. Inlined and specialised in the caller: only one branch survives.
    ///
    /// - Parameters:
    ///   - tracking: What the Observation framework is told was read (a key, or the whole set).
    ///   - keepingError: Whether the read leaves ``lastError`` as it is (a ``Pref`` read) rather
    ///     than clearing it on success, as RVS's reads do.
    ///   - pref: The ``Pref`` read, which remembers its answer for the next read (see
    ///     ``PrefKey/rememberedStamp``); `nil` for a read by key.
    @inlinable @inline(__always)
    func typed<T>(_ type: T.Type, forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool, remembering pref: PrefKey? = nil) -> T? {
        if T.self == Int.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref)?.int.map { $0 as! T } }
        if T.self == Double.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref)?.double.map { $0 as! T } }
        if T.self == Float.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref)?.float.map { $0 as! T } }
        if T.self == Bool.self { return numberCasts(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref)?.bool.map { $0 as! T } }
        if T.self == String.self { return cachedString(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref).map { $0 as! T } }
        // Unwrapped first: a cast from `Any?` looks into the optional in a second, nested cast.
        guard let value = rawValue(forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref) else { return nil }
        return value as? T
    }

    /// The current set, or why it cannot be read.
    func currentValues() throws -> [String: Any] {
        try resolvedSet().values()
    }

    /// The `as?` answers for a stored number (worked out once per value), callable from
    /// inlinable code.
    @usableFromInline
    func numberCasts(forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool, remembering pref: PrefKey? = nil) -> NumberCasts? {
        answer(
            forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref, \.rememberedNumber,
            { $0.loadedNumber(forKey: $1) }, { try $1.number(forKey: $0) })
    }

    /// A value as a `String` (worked out once per value, no cast per read), callable from
    /// inlinable code.
    @usableFromInline
    func cachedString(forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool, remembering pref: PrefKey? = nil) -> String? {
        answer(
            forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref, \.rememberedString,
            { $0.loadedString(forKey: $1) }, { try $1.string(forKey: $0) })
    }

    /// The stored value under `key` (the subscript getter), callable from inlinable code.
    @usableFromInline
    func rawValue(
        forKey key: String, tracking: KeyPath<PrefsKeySpace, Int> = \.wholeSet, keepingError: Bool = false, remembering pref: PrefKey? = nil
    ) -> Any? {
        answer(
            forKey: key, tracking: tracking, keepingError: keepingError, remembering: pref, \.rememberedValue, { $0.loadedValue(forKey: $1) }, { try $1.value(forKey: $0) })
    }

    /// The answer for the value under `key`: `pref`'s remembered answer while the shared set's
    /// ``SharedSet/readStamp`` is the one it was worked out at, else `known`'s from the shared
    /// set's state when the read can be served at once, else `slow`'s by way of
    /// ``read(tracking:keepingError:_:)``.
    ///
    /// `pref` remembers only an answer `known` worked out from one shared set whose stamp was the
    /// same before and after: the stamp then names exactly the state the answer came from (no two
    /// states of any set share one), whatever this instance was bound to meanwhile. An answer
    /// read through the instance (a batch's pending value, a set resolved anew) is never
    /// remembered.
    ///
    /// The closures capture nothing (the key is passed to them): a context would cost a retain
    /// and a release of what it holds on every read.
    @inline(__always)
    private func answer<Answer>(
        forKey key: String, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool, remembering pref: PrefKey?,
        _ memo: ReferenceWritableKeyPath<PrefKey, Answer?>, _ known: (SharedSet, String) -> Answer??,
        _ slow: (String, SetView) throws -> Answer?
    ) -> Answer? {
        // `pref` stays optional until an answer is remembered: binding it costs a retain and a
        // release on every read (65 against 86 ns a typed read; Benchmarks/README.md).
        if pref != nil {
            var stamp = 0
            var sharedSet: SharedSet?
            if let recalled = recall(pref, tracking: tracking, keepingError: keepingError, memo, stamp: &stamp, missed: &sharedSet) { return recalled }
            if let sharedSet, let found = known(sharedSet, key) {
                sharedSet.feed.access(tracking)
                if let pref, let answer = found, sharedSet.readStamp.load() == stamp {
                    state.withLock { _ in (pref.rememberedStamp, pref[keyPath: memo]) = (stamp, answer) }
                }
                return found
            }
        }
        return readPublished(tracking: tracking, keepingError: keepingError, { known($0, key) })
            ?? read(tracking: tracking, keepingError: keepingError) { try slow(key, $0) } ?? nil
    }

    /// `pref`'s remembered answer when the read can be served at once and the shared set's
    /// ``SharedSet/readStamp`` is the one it was worked out at: one lock and one atomic load, no
    /// look-up of the key, no lock of the shared set. Else `nil`; when the read can be served
    /// at once, `stamp` is the set's stamp then (never 0) and `missed` the set.
    @inline(__always)
    private func recall<Answer>(
        _ pref: PrefKey?, tracking: KeyPath<PrefsKeySpace, Int>, keepingError: Bool, _ memo: ReferenceWritableKeyPath<PrefKey, Answer?>,
        stamp: inout Int, missed: inout SharedSet?
    ) -> Answer?? {
        let generation = currentGeneration()
        return state.withLock { state -> Answer?? in
            stamp = state.quickStamp(generation: generation, keepingError: keepingError)
            guard stamp != 0 else { return .none }
            guard pref?.rememberedStamp == stamp, let answer = pref?[keyPath: memo] else {
                missed = state.lease?.sharedSet
                return .none
            }
            // A stamp is never 0 without a lease. `access` records the read for this thread's
            // `withObservationTracking`, if any, and calls no one.
            state.lease!.sharedSet.feed.access(tracking)
            return answer
        }
    }

    /// The common path of a read: `body`'s answer from the published views, or `nil` when the
    /// read must take ``read(tracking:keepingError:_:)``'s way (a batch is running, the set is not
    /// resolved or loaded or is damaged, or ``lastError`` is set and the read clears it).
    /// Nothing to report: ``lastError`` is already `nil`, or stays as it is.
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

    /// Runs a read; on success clears ``lastError`` (as RVS_PersistentPrefs does) unless
    /// `keepingError` (a ``Pref`` read), on failure reports the error there and returns `nil`.
    /// Inside `withObservationTracking`, the read registers `tracking` (a key, or the whole set).
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

    /// Runs an operation and reports its outcome in ``lastError``: the error it threw, else the
    /// damage its store reports (see ``acknowledgeDamage()``), else `nil`.
    ///
    /// An error recorded while `body` ran by a step that does not fail it (a migration on first
    /// use, which leaves the set readable) is kept. The error is also given to the typed `set`
    /// running on this thread, if any (see ``WriteOutcome``), which throws it.
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

    /// One value: inside a batch or update the batch's, else the set's; a locked key reads its
    /// mandatory value, and a key the user's set lacks its system layers' value.
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

import Foundation

// The machinery behind the base class's public API (`PersistentPrefs.swift`): how an instance
// starts, how a change is submitted (collected by a batch, staged by a coalescing set, or
// written), what `problems` works out, and the process-wide switches the engine reads.

extension PersistentPrefs {
    /// Bumped by every change of ``groupID``; instances re-resolve their set when it moves.
    static let groupGeneration = SharedInt()

    /// Whether the sets used in this scope watch their stores for other programs' changes
    /// without being observed (`true`, the default): a set starts its watch when it is first
    /// used, so its values stay current however it is used. A program that reads and writes once
    /// and exits (`prefs-harness get` and `set`) runs with it bound to `false`: its sets are then
    /// read as loaded or last written, and no watcher thread is started for them. Observing a
    /// set starts its watch either way.
    @TaskLocal package static var watchesSets = true

    /// Names the instance's set, loads it (with the defaults file) and merges `initial` over it;
    /// reports what went wrong in ``lastError``.
    func start(key: String?, merging initial: [String: Any]) {
        let name = key ?? String(describing: type(of: self))
        state.withLock { $0.key = name }
        reportingErrors {
            _ = try loadedFileDefaults()
            let sharedSet = try resolvedSet()
            _ = try sharedSet.values()
            if !initial.isEmpty {
                let accepted = try vetted(initial)
                try sharedSet.write(.merge(accepted), schema: schemaPlan)
            }
            if let conflict = declarationConflicts.first { throw conflict }
        }
    }

    /// Writes the change `make` returns, or inside a ``batch(_:)`` adds it to the batch.
    ///
    /// `make` vets the change; what it throws is rethrown, and inside a batch also spoils the
    /// batch (all or nothing), naming the refused keys.
    func submit(_ make: () throws -> PrefsChange) throws {
        let change: PrefsChange
        do {
            change = try make()
        } catch {
            let refusal = SharedSet.mapped(error)
            state.withLock { $0.pending?.refuse(refusal) }
            throw refusal
        }
        let collected = state.withLock { state -> Bool in
            guard state.pending != nil else { return false }
            state.pending!.collect(change)
            return true
        }
        guard !collected else { return }
        let sharedSet = try resolvedSet()
        if let interval = stagingInterval, change.isStageable {
            let owner = ObjectIdentifier(type(of: self))
            let plan = sharedSet.stagingPlanOwner == owner ? nil : detachedSchemaPlan(for: sharedSet)
            if try sharedSet.stage(change, plan: plan, owner: owner, interval: interval) { return }
        }
        try sharedSet.write(change, schema: schemaPlan)
    }

    /// ``coalescingInterval`` when it makes this class's setters coalesce (a positive, finite
    /// interval), else `nil`.
    var stagingInterval: TimeInterval? {
        guard let interval = Self.coalescingInterval, interval > 0, interval.isFinite else { return nil }
        return interval
    }

    /// The work of ``problems``, which leaves ``lastError`` as it was.
    func currentProblems() -> [PrefsError] {
        let saved = lastError
        defer { lastError = saved }
        var found: [PrefsError] = []
        let stored: [String: Any]
        let effective: [String: Any]
        let sharedSet: SharedSet
        do {
            sharedSet = try resolvedSet()
            stored = try sharedSet.values()
            effective = try sharedSet.effectiveValues()
        } catch {
            return [SharedSet.mapped(error)] + declarationConflicts
        }
        if let notice = sharedSet.damageNotice() { found.append(notice) }
        if let failure = sharedSet.stagingFailure, !found.contains(failure) { found.append(failure) }
        if let degraded = sharedSet.watchProblem() { found.append(degraded) }
        let layers = try? sharedSet.layers()
        found += layers?.problems ?? []
        var checked = Set<String>()
        for pref in declaredPrefs() where checked.insert(pref.key).inserted {
            if let value = effective[pref.key], let problem = pref.readingProblem(value) { found.append(problem) }
        }
        for (key, validator) in validators.sorted(by: { $0.key < $1.key }) {
            if let value = effective[key], let reason = validator.problem(with: value) {
                found.append(.invalidValue(key: key, reason: reason))
            }
        }
        found += declarationConflicts
        if let version = try? sharedSet.schemaVersion() {
            do {
                _ = try schemaPlan.report(on: stored, from: version, root: key, locks: layers)
            } catch {
                // A refused background write may have listed the same refusal already.
                let refusal = SharedSet.mapped(error)
                if !found.contains(refusal) { found.append(refusal) }
            }
        }
        return found
    }
}

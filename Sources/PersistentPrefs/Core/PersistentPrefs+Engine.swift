import Foundation

// How an instance starts, how a change is submitted (collected, staged or written), and what `problems` works out.

extension PersistentPrefs {
    /// Bumped by every change of ``groupID``; instances re-resolve their set when it moves.
    static let groupGeneration = SharedInt()

    /// Whether sets used in this scope watch their stores from first use (`true`, the default); a program that reads or
    /// writes once and exits binds it to `false` (no watcher thread). Observing a set starts its watch either way.
    @TaskLocal package static var watchesSets = true

    /// Names the instance's set, loads it (and the defaults file) and merges `initial` over it; reports in ``lastError``.
    func start(key: String?, merging initial: [String: Any]) {
        let name = key ?? String(describing: type(of: self))
        state.withLock { $0.key = name }
        reportingErrors {
            _ = try loadedFileDefaults()
            let sharedSet = try resolvedSet()
            _ = try sharedSet.values()
            if !initial.isEmpty {
                let accepted = try vetted(initial)
                try sharedSet.write(.change(.merge(accepted)), schema: schemaPlan)
            }
            if let conflict = declarationConflicts.first { throw conflict }
        }
    }

    /// Writes the change `make` vets and returns, or adds it to the running ``batch(_:)`` (a throw also spoils the batch).
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
        // Setters coalesce under a positive, finite interval.
        if let interval = Self.coalescingInterval, interval > 0, interval.isFinite, change.isStageable {
            let owner = ObjectIdentifier(type(of: self))
            let plan = sharedSet.cell.withLock({ $0.staging.planOwner }) == owner ? nil : detachedSchemaPlan(for: sharedSet)
            if try sharedSet.stage(change, plan: plan, owner: owner, interval: interval) { return }
        }
        try sharedSet.write(.change(change), schema: schemaPlan)
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
        if let failure = sharedSet.cell.withLock({ $0.staging.failure }), !found.contains(failure) { found.append(failure) }
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

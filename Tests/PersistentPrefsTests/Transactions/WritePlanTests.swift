import Foundation
import Testing

@testable import PersistentPrefs

/// `SetPlan.apply(to:layers:)`, the one function that makes the set a write stores of the set as
/// stored, on its own: no store, file, lock or clock. Every kind of change, staged changes, locked
/// keys, migrations, other programs' keys, and refusals, which are outcomes, never thrown.
@Suite("Write plans")
struct WritePlanTests {
    typealias Outcome = SetPlan.Outcome
    static let versionKey = PersistentPrefs.schemaVersionKey

    struct StepFailure: Error {}
    struct BodyRefusal: Error, Equatable {
        let reason: String
    }

    /// An unversioned writer's schema.
    static var unversioned: SchemaPlan { SchemaPlan(version: 0, writesNewer: false, migration: nil) }

    /// A writer at version 2 whose steps rename "Old" to "New" (1) and double "Count" (2).
    static func versioned(writesNewer: Bool = false, failingStep: Bool = false) -> SchemaPlan {
        SchemaPlan(version: 2, writesNewer: writesNewer, migration: {
            SchemaPlan.Migration(
                steps: [
                    .renameKey("Old", to: "New"),
                    PrefsMigration("double the count") { set in
                        if failingStep { throw StepFailure() }
                        if let count = set["Count"] as? Int { set["Count"] = count * 2 }
                    },
                ], vetting: .anyKey)
        })
    }

    static func plan(
        staged: PendingChanges? = nil, _ edit: SetPlan.Edit?, schema: SchemaPlan = unversioned, onlyMigrate: Bool = false
    ) -> SetPlan {
        SetPlan(root: "Main", staged: staged, edit: edit, schema: schema, onlyMigrate: onlyMigrate)
    }

    /// Layers that lock `keys`, with `values` as the locking layer's own.
    static func locking(_ keys: Set<String>, values: [String: Any] = [:]) -> LayerStack {
        LayerStack(layers: [LayerStack.Layer(source: "/etc/xdg/test.plist", kind: .site, values: values, locked: keys, locksAll: false)], problems: [])
    }

    /// The set and keys of a `write` outcome; a failed expectation otherwise.
    static func written(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) -> (set: [String: Any], changed: Set<String>)? {
        guard case .write(let set, let changed, _) = outcome else {
            Issue.record("expected a write, got \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return (set, changed)
    }

    /// The refusal of a `refused` outcome; a failed expectation otherwise.
    static func refusal(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) -> (any Error)? {
        guard case .refused(let error) = outcome else {
            Issue.record("expected a refusal, got \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return error
    }

    static func same(_ lhs: [String: Any], _ rhs: [String: Any]) -> Bool {
        PlistValue.changedKeys(lhs, rhs).isEmpty
    }

    // MARK: - Every kind of change

    @Test("each kind of change makes its set and names only the keys whose value changed")
    func eachKindOfChange() throws {
        let stored: [String: Any] = ["A": 1, "B": "two", "C": true]
        let cases: [(SetPlan.Edit, [String: Any], Set<String>)] = [
            (.change(.set(key: "A", value: 5)), ["A": 5, "B": "two", "C": true], ["A"]),
            (.change(.set(key: "A", value: 1)), stored, []),
            (.change(.set(key: "B", value: nil)), ["A": 1, "C": true], ["B"]),
            (.change(.merge(["A": 1, "D": 4.5])), ["A": 1, "B": "two", "C": true, "D": 4.5], ["D"]),
            (.change(.fillMissing(["A": 9, "E": "e"])), ["A": 1, "B": "two", "C": true, "E": "e"], ["E"]),
            (.change(.replace(["A": 1, "Z": 26])), ["A": 1, "Z": 26], ["B", "C", "Z"]),
            (.change(.transform { set in set.filter { $0.key != "C" } }), ["A": 1, "B": "two"], ["C"]),
        ]
        for (edit, expected, changed) in cases {
            let result = try #require(Self.written(Self.plan(edit).apply(to: stored, layers: .empty)))
            #expect(Self.same(result.set, expected), "\(edit): \(result.set)")
            #expect(result.changed == changed, "\(edit)")
        }
    }

    @Test("a batch's edits and defaults apply in one plan; one that replaced the set is a replacement")
    func batches() throws {
        var pending = PendingChanges(base: nil)
        pending.collect(.set(key: "A", value: 2))
        pending.collect(.set(key: "B", value: nil))
        pending.collect(.fillMissing(["A": 7, "F": "filled", "C": false]))
        let stored: [String: Any] = ["A": 1, "B": "two", "C": true]
        let edit = try #require(pending.edit)
        let result = try #require(Self.written(Self.plan(edit).apply(to: stored, layers: .empty)))
        #expect(Self.same(result.set, ["A": 2, "C": true, "F": "filled"]))
        #expect(result.changed == ["A", "B", "F"])

        var replacing = PendingChanges(base: nil)
        replacing.collect(.replace(["Only": 1]))
        let replacement = try #require(replacing.edit)
        #expect(replacement.replaces)
        let replaced = try #require(Self.written(Self.plan(replacement).apply(to: stored, layers: .empty)))
        #expect(Self.same(replaced.set, ["Only": 1]))
        #expect(PendingChanges(base: nil).edit == nil, "a batch that changed nothing writes nothing")
    }

    @Test("staged changes go first, then the change; a replacement leaves nothing of them")
    func stagedChanges() throws {
        var staged = PendingChanges(base: nil)
        staged.collect(.set(key: "A", value: 10))
        staged.collect(.set(key: "B", value: "two"))  // as stored: not a change
        let stored: [String: Any] = ["A": 1, "B": "two"]
        let result = try #require(Self.written(Self.plan(staged: staged, .change(.set(key: "C", value: 3))).apply(to: stored, layers: .empty)))
        #expect(Self.same(result.set, ["A": 10, "B": "two", "C": 3]))
        #expect(result.changed == ["A", "C"])

        let later = try #require(Self.written(Self.plan(staged: staged, .change(.set(key: "A", value: 1))).apply(to: stored, layers: .empty)))
        #expect(Self.same(later.set, stored), "the later change wins")
        #expect(later.changed.isEmpty, "a staged change undone by the change changes nothing")

        let onlyStaged = try #require(Self.written(Self.plan(staged: staged, nil).apply(to: stored, layers: .empty)))
        #expect(onlyStaged.changed == ["A"])

        let replaced = try #require(Self.written(Self.plan(staged: staged, .change(.replace(["R": 1]))).apply(to: stored, layers: .empty)))
        #expect(Self.same(replaced.set, ["R": 1]))
        #expect(Self.plan(staged: nil, nil).isEmpty)
        #expect(!Self.plan(staged: staged, nil).isEmpty)
    }

    // MARK: - Locked keys

    @Test("a change of a locked key is refused naming it; a staged change of one leaves its stored value")
    func lockedKeys() throws {
        let layers = Self.locking(["L"], values: ["L": "site"])
        let stored: [String: Any] = ["L": "mine", "A": 1]
        let refused = Self.refusal(Self.plan(.change(.set(key: "L", value: "new"))).apply(to: stored, layers: layers))
        #expect(refused as? PersistentPrefs.PrefsError == .keyLocked(key: "L"))
        let removed = Self.refusal(Self.plan(.change(.replace(["A": 1]))).apply(to: stored, layers: layers))
        #expect(removed as? PersistentPrefs.PrefsError == .keyLocked(key: "L"), "a replacement dropping a locked key changes it")

        // Locked after it was staged: the lock wins, the rest of the staged changes are written.
        var staged = PendingChanges(base: nil)
        staged.collect(.set(key: "L", value: "staged"))
        staged.collect(.set(key: "A", value: 2))
        let result = try #require(Self.written(Self.plan(staged: staged, nil).apply(to: stored, layers: layers)))
        #expect(Self.same(result.set, ["L": "mine", "A": 2]))
        #expect(result.changed == ["A"])

        // The same change with no lock in force is written.
        let unlocked = try #require(Self.written(Self.plan(.change(.set(key: "L", value: "new"))).apply(to: stored, layers: .empty)))
        #expect(unlocked.changed == ["L"])
    }

    // MARK: - Other programs' keys

    @Test("keys the change does not name are kept exactly, whatever their values")
    func otherProgramsKeys() throws {
        let date = Date(timeIntervalSince1970: 1_234_567_890.123_456)
        let nested: [String: Any] = ["deep": [1, 2.5, "three"], "data": Data([0, 1, 2])]
        let stored: [String: Any] = ["Other Date": date, "Other Set": nested, "Other Big": Int64.max, "Other Zero": -0.0, "Mine": 1]
        for edit in [SetPlan.Edit.change(.set(key: "Mine", value: 2)), .change(.merge(["Mine": 3])), .change(.fillMissing(["New": true]))] {
            let result = try #require(Self.written(Self.plan(edit).apply(to: stored, layers: .empty)))
            for key in stored.keys where key != "Mine" {
                #expect(PlistValue.same(result.set[key], stored[key]), "\(key) kept by \(edit)")
                #expect(!result.changed.contains(key))
            }
            #expect((result.set["Other Zero"] as? Double)?.sign == .minus)
        }
    }

    // MARK: - Migrations and the schema version

    @Test("an older set is migrated first and stamped; its keys changed are found against the set as stored")
    func migration() throws {
        let stored: [String: Any] = [Self.versionKey: 0, "Old": "value", "Count": 3, "Kept": true]
        let outcome = Self.plan(.change(.set(key: "Kept", value: false)), schema: Self.versioned()).apply(to: stored, layers: .empty)
        guard case .write(let set, let changed, let report?) = outcome else {
            Issue.record("expected a migrating write, got \(outcome)")
            return
        }
        #expect(Self.same(set, [Self.versionKey: 2, "New": "value", "Count": 6, "Kept": false]))
        #expect(changed == ["Old", "New", "Count", "Kept"])
        #expect(report.fromVersion == 0 && report.toVersion == 2)
        #expect(report.steps.count == 2)
    }

    @Test("a plan that only migrates ends as current when there is nothing to migrate")
    func onlyMigrate() throws {
        let current: [String: Any] = [Self.versionKey: 2, "New": "value"]
        guard case .current = Self.plan(nil, schema: Self.versioned(), onlyMigrate: true).apply(to: current, layers: .empty) else {
            Issue.record("a migrated set needs nothing")
            return
        }
        guard case .current = Self.plan(nil, schema: Self.versioned(), onlyMigrate: true).apply(to: [:], layers: .empty) else {
            Issue.record("an empty set needs nothing")
            return
        }
        let old: [String: Any] = ["Old": "value"]
        let migrated = try #require(Self.written(Self.plan(nil, schema: Self.versioned(), onlyMigrate: true).apply(to: old, layers: .empty)))
        #expect(Self.same(migrated.set, [Self.versionKey: 2, "New": "value"]))

        var staged = PendingChanges(base: nil)
        staged.collect(.set(key: "A", value: 1))
        #expect(Self.plan(staged: staged, nil, schema: Self.versioned(), onlyMigrate: true).staged == nil, "a migration alone leaves staged changes")
    }

    @Test("a newer set is refused unless the writer writes newer versions; a failing step refuses the write")
    func newerAndFailing() throws {
        let newer: [String: Any] = [Self.versionKey: 3, "A": 1]
        let refused = Self.refusal(Self.plan(.change(.set(key: "A", value: 2)), schema: Self.versioned()).apply(to: newer, layers: .empty))
        #expect(refused as? PersistentPrefs.PrefsError == .newerSchemaVersion(root: "Main", stored: 3, supported: 2))
        let replacement = Self.refusal(Self.plan(.change(.replace(["A": 2])), schema: Self.versioned()).apply(to: newer, layers: .empty))
        #expect(replacement as? PersistentPrefs.PrefsError == .newerSchemaVersion(root: "Main", stored: 3, supported: 2))

        let onlyMigrating = Self.refusal(Self.plan(nil, schema: Self.versioned(), onlyMigrate: true).apply(to: newer, layers: .empty))
        #expect(onlyMigrating as? PersistentPrefs.PrefsError == .newerSchemaVersion(root: "Main", stored: 3, supported: 2))

        let allowed = try #require(
            Self.written(Self.plan(.change(.set(key: "A", value: 2)), schema: Self.versioned(writesNewer: true)).apply(to: newer, layers: .empty)))
        #expect(allowed.set[Self.versionKey] as? Int == 3, "the newer version stays stamped")

        let failing = Self.refusal(
            Self.plan(.change(.set(key: "A", value: 2)), schema: Self.versioned(failingStep: true)).apply(to: ["Count": 1], layers: .empty))
        guard case .migrationFailed(let root, let step, _, _)? = failing as? PersistentPrefs.PrefsError else {
            Issue.record("expected migrationFailed, got \(String(describing: failing))")
            return
        }
        #expect(root == "Main" && step == 2)
    }

    @Test("the schema version is stamped on a set that is not empty, never given by a change, never a changed key")
    func schemaStamp() throws {
        let stamped = try #require(Self.written(Self.plan(.change(.set(key: "A", value: 1)), schema: Self.versioned()).apply(to: [:], layers: .empty)))
        #expect(stamped.set[Self.versionKey] as? Int == 2)
        #expect(stamped.changed == ["A"])

        let given = try #require(Self.written(Self.plan(.change(.merge(["A": 1, Self.versionKey: 99]))).apply(to: [:], layers: .empty)))
        #expect(given.set[Self.versionKey] == nil, "an unversioned writer stamps nothing, and a value given for the key is ignored")
        #expect(given.changed == ["A"])

        let emptied = try #require(
            Self.written(Self.plan(.change(.set(key: "A", value: nil)), schema: Self.versioned()).apply(to: [Self.versionKey: 2, "A": 1], layers: .empty)))
        #expect(emptied.set.isEmpty, "an empty set is removed, not stamped")
        #expect(emptied.changed == ["A"])
    }

    // MARK: - Refusals

    @Test("what an update body throws comes back as the refusal, unchanged")
    func bodyRefusal() throws {
        let edit = SetPlan.Edit.change(.transform { _ in throw BodyRefusal(reason: "no") })
        let refused = Self.refusal(Self.plan(edit).apply(to: ["A": 1], layers: .empty))
        #expect(refused as? BodyRefusal == BodyRefusal(reason: "no"))
    }

    @Test("a root holding something other than a set refuses a change but takes a replacement")
    func notASet() throws {
        let refused = Self.refusal(Self.plan(.change(.set(key: "A", value: 1))).apply(to: nil, layers: .empty))
        #expect(refused as? PersistentPrefs.PrefsError == .invalidStoredValue(key: "Main"))
        let replaced = try #require(Self.written(Self.plan(.change(.replace(["A": 1]))).apply(to: nil, layers: .empty)))
        #expect(Self.same(replaced.set, ["A": 1]))
        #expect(replaced.changed == ["A"])
    }

    @Test("the same plan applied to the same set twice comes to the same outcome")
    func pure() throws {
        var staged = PendingChanges(base: nil)
        staged.collect(.set(key: "A", value: 2))
        let plan = Self.plan(staged: staged, .change(.merge(["B": 3])), schema: Self.versioned())
        let stored: [String: Any] = ["Old": "x", "Count": 2]
        let first = try #require(Self.written(plan.apply(to: stored, layers: .empty)))
        let second = try #require(Self.written(plan.apply(to: stored, layers: .empty)))
        #expect(Self.same(first.set, second.set))
        #expect(first.changed == second.changed)
    }

    // MARK: - A plain change, as a store applies it

    @Test("a plain change as a store's plan: refused on a locked key or a root that is no set, written otherwise")
    func plainChange() throws {
        let plan = WritePlan(PrefsChange.set(key: "L", value: 1), root: "Main")
        guard case .refused(let locked) = plan.apply(["L": 0], Self.locking(["L"])) else {
            Issue.record("a locked key is refused")
            return
        }
        #expect(locked as? PersistentPrefs.PrefsError == .keyLocked(key: "L"))
        guard case .refused(let notASet) = plan.apply(nil, .empty) else {
            Issue.record("a root that is no set is refused")
            return
        }
        #expect(notASet as? PersistentPrefs.PrefsError == .invalidStoredValue(key: "Main"))
        let written = try #require(plan.apply(["L": 0], .empty).written)
        #expect(written.changed == ["L"])
        #expect(WritePlan(PrefsChange.replace(["A": 1]), root: "Main").apply(nil, .empty).written != nil)
    }
}

import Foundation

/// One step of a set's schema migrations, listed in ``PersistentPrefs/migrations``: the step at position `n` takes a
/// set from version `n` to `n + 1`, so ``PersistentPrefs/schemaVersion`` must equal the number of steps.
///
/// ```swift
/// override class var schemaVersion: Int { 2 }
/// override class var migrations: [PrefsMigration] {
///     [
///         .renameKey("Font Size", to: "Editor Font Size"),                 // 0 → 1
///         .transform("Dark Mode") { ($0 as? Bool) == true ? "dark" : "light" },  // 1 → 2
///     ]
/// }
/// ```
///
/// Steps get the set in its stored form, run on a copy under the store's lock, and may run again: keep them free of
/// side effects other than the set. See <doc:EvolvingAPreferenceSet>.
public struct PrefsMigration: Sendable, CustomStringConvertible {
    /// What the step does, for error messages and the harness's `migrate --dry-run`.
    public let description: String
    let body: @Sendable (inout [String: Any]) throws -> Void

    /// A step that changes the set with `body`, described by `description`.
    ///
    /// - Parameters:
    ///   - description: What the step does, for error messages.
    ///   - body: Changes the set; throws to refuse the migration (nothing is then written).
    public init(_ description: String, _ body: @escaping @Sendable (inout [String: Any]) throws -> Void) {
        self.description = description
        self.body = body
    }

    /// Moves the value stored under `from` to `to`, replacing any value there; nothing happens when `from` holds nothing.
    public static func renameKey(_ from: String, to: String) -> PrefsMigration {
        PrefsMigration("rename \"\(from)\" to \"\(to)\"") { set in
            guard let value = set.removeValue(forKey: from) else { return }
            set[to] = value
        }
    }

    /// Removes the value stored under `key`, if any.
    public static func removeKey(_ key: String) -> PrefsMigration {
        PrefsMigration("remove \"\(key)\"") { set in set[key] = nil }
    }

    /// Replaces the value stored under `key` with what `body` makes of it (`nil` removes it; throwing refuses the
    /// migration). Not called when `key` holds nothing.
    public static func transform(_ key: String, _ body: @escaping @Sendable (Any) throws -> Any?) -> PrefsMigration {
        PrefsMigration("transform \"\(key)\"") { set in
            guard let value = set[key] else { return }
            set[key] = try body(value)
        }
    }

    /// A step that changes the set as a whole with `body`, which throws to refuse the migration.
    public static func custom(_ body: @escaping @Sendable (inout [String: Any]) throws -> Void) -> PrefsMigration {
        PrefsMigration("custom step", body)
    }
}

/// What a migration did, or would do (``PersistentPrefs/migrate()``, ``PersistentPrefs/migrationPreview()``).
public struct PrefsMigrationReport {
    /// The schema version the set was stored at.
    public let fromVersion: Int
    /// The schema version the steps take it to (`fromVersion` when no step runs).
    public let toVersion: Int
    /// The steps that ran (or would run), in order, each described as "version N: …".
    public let steps: [String]
    /// The set before the steps (without the reserved version key).
    public let before: [String: Any]
    /// The set after the steps (without the reserved version key).
    public let after: [String: Any]
}

import Foundation

/// One step of a set's schema migrations: it takes the set from one version to the next.
///
/// A subclass lists its steps in ``PersistentPrefs/migrations``; the step at position `n`
/// (counting from 0) takes a set stored at version `n` to version `n + 1`, so the version each
/// step produces is its position plus one, and ``PersistentPrefs/schemaVersion`` must equal the
/// number of steps.
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
/// Steps get the set in its stored form (`NSNumber`, `String`, `Date`, `Data`, arrays and
/// dictionaries of those) and may read every stored key, including keys that ``PersistentPrefs/keys``
/// no longer lists. They run on a copy, under the store's lock (one that spans processes with the
/// library's own files, <doc:ApplePlatforms>), and their result is written in one store write; keep them free of side effects other than the set (a step runs
/// again if a program that does not use this library rewrites the file at that moment).
public struct PrefsMigration: Sendable, CustomStringConvertible {
    /// What the step does, for error messages and the harness's `migrate --dry-run`.
    public let description: String
    let body: @Sendable (inout [String: Any]) throws -> Void

    /// A step that changes the set with `body`, described by `description`.
    ///
    /// ```swift
    /// PrefsMigration("split Window into Width and Height") { set in
    ///     guard let window = set.removeValue(forKey: "Window") as? [String: Any] else { return }
    ///     set["Width"] = window["w"]
    ///     set["Height"] = window["h"]
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - description: What the step does.
    ///   - body: Changes the set; throws to refuse the migration (nothing is then written).
    public init(_ description: String, _ body: @escaping @Sendable (inout [String: Any]) throws -> Void) {
        self.description = description
        self.body = body
    }

    /// Moves the value stored under `from` to `to`. Nothing happens when `from` holds nothing;
    /// otherwise its value replaces any value under `to`.
    ///
    /// - Parameters:
    ///   - from: The old key.
    ///   - to: The new key.
    /// - Returns: The step.
    public static func renameKey(_ from: String, to: String) -> PrefsMigration {
        PrefsMigration("rename \"\(from)\" to \"\(to)\"") { set in
            guard let value = set.removeValue(forKey: from) else { return }
            set[to] = value
        }
    }

    /// Removes the value stored under `key`, if any.
    ///
    /// - Parameter key: The key to remove.
    /// - Returns: The step.
    public static func removeKey(_ key: String) -> PrefsMigration {
        PrefsMigration("remove \"\(key)\"") { set in set[key] = nil }
    }

    /// Replaces the value stored under `key` with what `body` makes of it; `nil` removes it.
    /// Not called when `key` holds nothing.
    ///
    /// ```swift
    /// .transform("Dark Mode") { ($0 as? Bool) == true ? "dark" : "light" }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key whose value changes.
    ///   - body: The new value for the stored one; throws to refuse the migration.
    /// - Returns: The step.
    public static func transform(_ key: String, _ body: @escaping @Sendable (Any) throws -> Any?) -> PrefsMigration {
        PrefsMigration("transform \"\(key)\"") { set in
            guard let value = set[key] else { return }
            set[key] = try body(value)
        }
    }

    /// A step that changes the set as a whole with `body`.
    ///
    /// - Parameter body: Changes the set; throws to refuse the migration.
    /// - Returns: The step.
    public static func custom(_ body: @escaping @Sendable (inout [String: Any]) throws -> Void) -> PrefsMigration {
        PrefsMigration("custom step", body)
    }
}

/// What a migration did, or would do: see ``PersistentPrefs/migrate()`` and
/// ``PersistentPrefs/migrationPreview()``.
public struct PrefsMigrationReport {
    /// The schema version the set was stored at.
    public let fromVersion: Int
    /// The schema version the steps take it to: the subclass's ``PersistentPrefs/schemaVersion``
    /// (or `fromVersion`, when no step runs).
    public let toVersion: Int
    /// The steps that ran (or would run), in order, each described as "version N: …".
    public let steps: [String]
    /// The set before the steps (without the reserved version key).
    public let before: [String: Any]
    /// The set after the steps (without the reserved version key).
    public let after: [String: Any]
}

import Foundation
import PersistentPrefs

/// The sample preference set: the RVS_PersistentPrefs "common preferences" test set.
///
/// Five values with typed ``Pref`` accessors (whose keys are the set's keys), written with
/// their defaults the first time an empty root key is used. The terminal harness, the tests
/// and the benchmark all use it.
///
/// ```swift
/// let prefs = SamplePrefs(key: "Window 1")
/// prefs.int += 1
/// print(prefs.string, prefs.array, prefs.dictionary, prefs.date)
/// prefs.reset()                 // back to the defaults
/// ```
public final class SamplePrefs: PersistentPrefs {
    /// The keys of the set (the keys of its ``Pref`` properties), with the type each holds.
    public enum Key: String, CaseIterable, Sendable {
        /// `Int`, default 12345.
        case int = "Integer Value"
        /// `String`, default "Any String".
        case string = "String Value"
        /// `[String]`, default One…Five.
        case array = "Array Value"
        /// `[String: String]`, default One: "1" … Five: "5".
        case dictionary = "Dictionary Value"
        /// `Date`, default: the moment the defaults are written.
        case date = "Date Value"
    }

    // MARK: - Initialisers

    /// Opens the set under the root key "SamplePrefs", writing the defaults if it is empty.
    public override init() {
        super.init()
        writeDefaultsIfEmpty()
    }

    /// Opens the set under `key` (default "SamplePrefs"), merges `values`, and writes the
    /// defaults if the set is still empty.
    ///
    /// - Parameters:
    ///   - key: The root key; `nil` uses "SamplePrefs".
    ///   - values: Values to merge into the stored set; `nil` merges nothing.
    public override init(key: String? = nil, values: [String: Any]? = [:]) {
        super.init(key: key, values: values)
        writeDefaultsIfEmpty()
    }

    /// Opens the set under `key` in `store`, merges `values`, and writes the defaults if the
    /// set is still empty.
    ///
    /// - Parameters:
    ///   - key: The root key; `nil` uses "SamplePrefs".
    ///   - values: Values to merge into the stored set; `nil` merges nothing.
    ///   - store: Where the set lives.
    public override init(key: String? = nil, values: [String: Any]? = [:], store: any PrefsStore) {
        super.init(key: key, values: values, store: store)
        writeDefaultsIfEmpty()
    }

    private func writeDefaultsIfEmpty() {
        // Only when the set was read successfully and holds nothing: an unreadable store
        // keeps its error in lastError and is not overwritten.
        guard lastError == nil, values.isEmpty else { return }
        // Not `values = …`: another process may be setting a key of this set right now.
        do {
            try addMissingValues(declaredDefaults)
        } catch {
            lastError = error as? PrefsError ?? .unknownError(error: error)
        }
    }

    /// The sample's defaults in their stored form (the date is now), worked out without touching
    /// any store: what a read shows for a key that is not stored.
    public static var sampleDefaults: [String: Any] {
        SamplePrefs(key: "SampleDefaults", store: InMemoryStore()).declaredDefaults
    }

    // MARK: - Schema

    /// Version 1. Its one step is there to show a migration: a set that stores the integer under
    /// "Int Value" (an older name, as in a hand-written old set) gets it renamed to
    /// "Integer Value". A version 0 set without that key is only stamped with version 1.
    override public class var schemaVersion: Int { 1 }

    /// The step from version 0 to 1.
    override public class var migrations: [PrefsMigration] {
        [.renameKey("Int Value", to: Key.int.rawValue)]
    }

    // MARK: - Typed accessors

    /// The "Integer Value".
    @Pref("Integer Value", summary: "An integer") public var int = 12345

    /// The "String Value".
    @Pref("String Value", summary: "A string") public var string = "Any String"

    /// The "Array Value".
    @Pref("Array Value", summary: "A list of strings") public var array = ["One", "Two", "Three", "Four", "Five"]

    /// The "Dictionary Value".
    @Pref("Dictionary Value", summary: "Strings by name") public var dictionary = ["One": "1", "Two": "2", "Three": "3", "Four": "4", "Five": "5"]

    /// The "Date Value"; the default is the moment the instance was made.
    @Pref("Date Value", summary: "A moment; the default is when the set was first used") public var date = Date()

    // MARK: - Reset

    /// Replaces the whole set with the defaults (the date becomes now); keys an administrator
    /// locked (see ``PersistentPrefs/PersistentPrefs/isLocked(_:)``) are left as they are.
    public func reset() {
        var defaults = declaredDefaults
        defaults[Key.date.rawValue] = Date()
        // Keys an administrator locked keep the system's values (and whatever is stored for them).
        for key in Key.allCases.map(\.rawValue) where isLocked(key) { defaults[key] = values[key] }
        values = defaults
    }
}

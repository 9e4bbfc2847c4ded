import Foundation
import PersistentPrefs

/// The sample preference set: the RVS_PersistentPrefs "common preferences" test set.
///
/// Five values with typed accessors, written with their defaults the first time an empty
/// root key is used. The terminal harness, the tests and the benchmark all use it.
///
/// ```swift
/// let prefs = SamplePrefs(key: "Window 1")
/// prefs.int += 1
/// print(prefs.string, prefs.array, prefs.dictionary, prefs.date)
/// prefs.reset()                 // back to the defaults
/// ```
public final class SamplePrefs: PersistentPrefs {
    /// The keys of the set, with the type each one holds.
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

    /// The default values, with `Date Value` set to now.
    public static var defaultValues: [String: Any] {
        [
            Key.int.rawValue: 12345,
            Key.string.rawValue: "Any String",
            Key.array.rawValue: ["One", "Two", "Three", "Four", "Five"],
            Key.dictionary.rawValue: ["One": "1", "Two": "2", "Three": "3", "Four": "4", "Five": "5"],
            Key.date.rawValue: Date(),
        ]
    }

    private static let allKeys = Key.allCases.map(\.rawValue)

    /// The five keys of the sample set.
    public override var keys: [String] { Self.allKeys }

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
    ///   - values: Values to merge into the stored set.
    public override init(key: String? = nil, values: [String: Any] = [:]) {
        super.init(key: key, values: values)
        writeDefaultsIfEmpty()
    }

    /// Opens the set under `key` in `store`, merges `values`, and writes the defaults if the
    /// set is still empty.
    ///
    /// - Parameters:
    ///   - key: The root key; `nil` uses "SamplePrefs".
    ///   - values: Values to merge into the stored set.
    ///   - store: Where the set lives.
    public override init(key: String? = nil, values: [String: Any] = [:], store: any PrefsStore) {
        super.init(key: key, values: values, store: store)
        writeDefaultsIfEmpty()
    }

    private func writeDefaultsIfEmpty() {
        // Only when the set was read successfully and holds nothing: an unreadable store
        // keeps its error in lastError and is not overwritten.
        guard lastError == nil, values.isEmpty else { return }
        values = Self.defaultValues
    }

    // MARK: - Typed accessors

    /// The "Integer Value"; 0 when it holds something else.
    public var int: Int {
        get { value(forKey: Key.int.rawValue, as: Int.self) ?? 0 }
        set { self[Key.int.rawValue] = newValue }
    }

    /// The "String Value"; "" when it holds something else.
    public var string: String {
        get { value(forKey: Key.string.rawValue, as: String.self) ?? "" }
        set { self[Key.string.rawValue] = newValue }
    }

    /// The "Array Value"; [] when it holds something else.
    public var array: [String] {
        get { value(forKey: Key.array.rawValue, as: [String].self) ?? [] }
        set { self[Key.array.rawValue] = newValue }
    }

    /// The "Dictionary Value"; [:] when it holds something else.
    public var dictionary: [String: String] {
        get { value(forKey: Key.dictionary.rawValue, as: [String: String].self) ?? [:] }
        set { self[Key.dictionary.rawValue] = newValue }
    }

    /// The "Date Value"; the distant past when it holds something else.
    public var date: Date {
        get { value(forKey: Key.date.rawValue, as: Date.self) ?? .distantPast }
        set { self[Key.date.rawValue] = newValue }
    }

    // MARK: - Reset

    /// Replaces the whole set with the defaults (the date becomes now).
    public func reset() {
        values = Self.defaultValues
    }
}

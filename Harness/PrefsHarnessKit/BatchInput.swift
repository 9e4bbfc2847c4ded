import Foundation
import PersistentPrefs

/// The input of `prefs-harness batch`: `NAME VALUE` lines, each parsed as `set NAME VALUE` is
/// for the set's key types (see ``HarnessSet``).
enum BatchInput {
    /// One parsed line.
    struct Change {
        let key: PrefsSchema.Key
        /// `nil`: the key is removed (an optional key's `null`).
        let value: Any?
    }

    /// Reads every line of `console`'s input and parses it for `set`'s keys.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` naming the first line that does not parse (with
    ///   its number), or saying that there was nothing to apply.
    static func read(from console: Console, set: HarnessSet) throws -> [Change] {
        var changes: [Change] = []
        var number = 0
        while let line = console.readLine() {
            number += 1
            if let change = try parse(line, number: number, set: set) { changes.append(change) }
        }
        guard !changes.isEmpty else {
            let example = set.isSample ? "int 42" : set.keys.first.map { "\($0.name) VALUE" } ?? "NAME VALUE"
            throw HarnessError.refused("no changes on stdin; give one 'NAME VALUE' line per change (for example: \(example))")
        }
        return changes
    }

    /// Parses one line; `nil` for a blank line or a comment.
    ///
    /// The line is read as `set`'s arguments are (see ``HarnessSet/keyAndValue(_:command:)``):
    /// the key is a full name (`Integer Value 42`, `"Integer Value" 42`) or, for the sample's set,
    /// an alias (`int 42`); the words after it, joined by one space, are the value.
    static func parse(_ line: String, number: Int, set: HarnessSet) throws -> Change? {
        let text = line.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
        do {
            let (key, value) = try set.keyAndValue(try Tokenizer.words(text))
            return Change(key: key, value: try set.parse(value, for: key))
        } catch let error as HarnessError {
            throw HarnessError.refused("line \(number): \(error.message); nothing was written")
        }
    }
}

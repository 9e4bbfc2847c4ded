import Foundation

/// The input of `prefs-harness batch`: `NAME VALUE` lines, each parsed as `set NAME VALUE` is.
enum BatchInput {
    /// One parsed line.
    struct Change {
        let key: SampleKey
        let value: Any
    }

    /// Reads every line of `console`'s input and parses it.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` naming the first line that does not parse (with
    ///   its number), or saying that there was nothing to apply.
    static func read(from console: Console) throws -> [Change] {
        var changes: [Change] = []
        var number = 0
        while let line = console.readLine() {
            number += 1
            if let change = try parse(line, number: number) { changes.append(change) }
        }
        guard !changes.isEmpty else {
            throw HarnessError.refused("no changes on stdin; give one 'NAME VALUE' line per change (for example: int 42)")
        }
        return changes
    }

    /// Parses one line; `nil` for a blank line or a comment.
    ///
    /// The key is a full name (`Integer Value 42`) or an alias (`int 42`); the rest of the line,
    /// trimmed, is the value.
    static func parse(_ line: String, number: Int) throws -> Change? {
        let text = line.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
        let (name, rest) = split(text)
        do {
            let key = try SampleKey.named(name)
            guard !rest.isEmpty else { throw HarnessError.usage("\(key.name) has no value") }
            return Change(key: key, value: try ValueParser.parse(rest, for: key))
        } catch let error as HarnessError {
            throw HarnessError.refused("line \(number): \(error.message); nothing was written")
        }
    }

    /// The key name at the start of `text` — a full key name with spaces if one matches, else
    /// the first word — and the rest of the line.
    private static func split(_ text: String) -> (String, String) {
        let lowered = text.lowercased()
        for key in SampleKey.allCases {
            let name = key.name.lowercased()
            if lowered == name { return (key.name, "") }
            if lowered.hasPrefix(name + " ") || lowered.hasPrefix(name + "\t") {
                return (key.name, String(text.dropFirst(name.count)).trimmingCharacters(in: .whitespaces))
            }
        }
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, "") }
        return (String(text[..<space]), String(text[space...]).trimmingCharacters(in: .whitespaces))
    }
}

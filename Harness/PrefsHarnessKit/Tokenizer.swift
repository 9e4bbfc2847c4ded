import Foundation

/// Splits an interactive command line into words, the way a shell would for simple input:
/// spaces separate words; single quotes keep everything literally; double quotes keep
/// spaces and honour `\"` and `\\`; a backslash outside quotes escapes the next character.
public enum Tokenizer {
    /// The words of `line`.
    ///
    /// - Parameter line: One line typed at the prompt.
    /// - Returns: The words, quotes removed.
    /// - Throws: ``HarnessError/usage(_:)`` for an unterminated quote or a trailing backslash.
    public static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        // Unicode scalars, not characters: a quote followed by a combining mark is one character,
        // and the quote must still open a quoted word.
        var iterator = line.unicodeScalars.makeIterator()
        while let character = iterator.next() {
            switch character {
            case " ", "\t":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "'", "\"":
                inWord = true
                try readQuoted(closedBy: character, from: &iterator, into: &current)
            case "\\":
                guard let escaped = iterator.next() else { throw HarnessError.usage("a backslash ends the line") }
                inWord = true
                current.unicodeScalars.append(escaped)
            default:
                inWord = true
                current.unicodeScalars.append(character)
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// The first `count` words of `line`, and the rest of it as typed (leading spaces removed).
    ///
    /// - Throws: ``HarnessError/usage(_:)`` as ``words(_:)`` does, for the leading words.
    public static func split(_ line: String, leading count: Int) throws -> (words: [String], rest: String) {
        var words: [String] = []
        let scalars = line.unicodeScalars
        var index = scalars.startIndex
        while words.count < count {
            while index < scalars.endIndex, scalars[index] == " " || scalars[index] == "\t" { index = scalars.index(after: index) }
            guard index < scalars.endIndex else { break }
            var end = index
            var quote: Unicode.Scalar?
            while end < scalars.endIndex {
                let character = scalars[end]
                if let open = quote {
                    if character == open {
                        quote = nil
                    } else if open == "\"" && character == "\\" {  // `\"` inside double quotes, as `words` reads it
                        end = scalars.index(after: end)
                        guard end < scalars.endIndex else { break }
                    }
                } else if character == "'" || character == "\"" {
                    quote = character
                } else if character == " " || character == "\t" {
                    break
                } else if character == "\\" {
                    end = scalars.index(after: end)
                    guard end < scalars.endIndex else { break }
                }
                end = scalars.index(after: end)
            }
            words += try Self.words(String(scalars[index..<end]))
            index = end
        }
        return (words, String(scalars[index...]).trimmingCharacters(in: .whitespaces))
    }

    /// Reads up to the closing quote. Inside double quotes, `\"` and `\\` are escapes and any
    /// other backslash is kept; inside single quotes everything is literal.
    private static func readQuoted(
        closedBy quote: Unicode.Scalar, from iterator: inout String.UnicodeScalarView.Iterator, into word: inout String
    ) throws {
        while let next = iterator.next() {
            if next == quote { return }
            if quote == "\"" && next == "\\", let escaped = iterator.next() {
                if escaped != "\"" && escaped != "\\" { word.unicodeScalars.append("\\") }
                word.unicodeScalars.append(escaped)
                continue
            }
            word.unicodeScalars.append(next)
        }
        throw HarnessError.usage("unterminated \(quote) quote")
    }
}

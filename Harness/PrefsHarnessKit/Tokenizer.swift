import Foundation

/// Splits a line typed at the prompt, piped in, or given to `batch` into words, the way a shell
/// splits a command line: spaces separate words; single quotes keep everything literally;
/// double quotes keep spaces and honour `\"` and `\\`; a backslash outside quotes escapes the
/// next character. A quoted key or value is one word, there as on the command line.
public enum Tokenizer {
    /// The words of `line`.
    ///
    /// - Parameter line: One line typed at the prompt.
    /// - Returns: The words, quotes removed.
    /// - Throws: ``HarnessError/usage(_:)`` for an unterminated quote or a trailing backslash.
    public static func words(_ line: String) throws -> [String] {
        var cursor = Cursor(line.unicodeScalars)
        return try cursor.words()
    }

    /// `word` as a shell (and ``words(_:)``) reads it back as one word: as it is when it holds
    /// only letters, digits and `-_./:=@%+,`, else in single quotes.
    public static func quoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_./:=@%+,".unicodeScalars.contains($0)) }
        return plain ? word : "'" + replacingQuotes(in: word, with: "'\\''") + "'"
    }

    /// `text` with each `'` replaced by `replacement`, scalar by scalar: a quote followed by a
    /// combining mark is one character, which a search for the character "'" would miss.
    static func replacingQuotes(in text: String, with replacement: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar == "'" { result += replacement } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// The reader of words. It reads Unicode scalars, not characters: a quote followed by a
    /// combining mark is one character, and the quote must still open a quoted word.
    private struct Cursor {
        /// The line.
        let scalars: String.UnicodeScalarView
        /// Where reading goes on: after the last scalar read.
        private var index: String.UnicodeScalarView.Index

        /// A cursor at the start of `scalars`.
        init(_ scalars: String.UnicodeScalarView) {
            self.scalars = scalars
            index = scalars.startIndex
        }

        /// The scalar at the cursor, moving past it; `nil` at the end of the line.
        private mutating func next() -> Unicode.Scalar? {
            guard index < scalars.endIndex else { return nil }
            defer { index = scalars.index(after: index) }
            return scalars[index]
        }

        /// Reads the words of the line.
        mutating func words() throws -> [String] {
            var words: [String] = []
            var current = ""
            var inWord = false
            while let character = next() {
                switch character {
                case " ", "\t":
                    if inWord {
                        words.append(current)
                        current = ""
                        inWord = false
                    }
                case "'", "\"":
                    inWord = true
                    try readQuoted(closedBy: character, into: &current)
                case "\\":
                    guard let escaped = next() else { throw HarnessError.usage("a backslash ends the line") }
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

        /// Reads up to the closing quote. Inside double quotes, `\"` and `\\` are escapes and any
        /// other backslash is kept; inside single quotes everything is literal.
        private mutating func readQuoted(closedBy quote: Unicode.Scalar, into word: inout String) throws {
            while let scalar = next() {
                if scalar == quote { return }
                if quote == "\"" && scalar == "\\", let escaped = next() {
                    if escaped != "\"" && escaped != "\\" { word.unicodeScalars.append("\\") }
                    word.unicodeScalars.append(escaped)
                    continue
                }
                word.unicodeScalars.append(scalar)
            }
            throw HarnessError.usage("unterminated \(quote) quote")
        }
    }
}

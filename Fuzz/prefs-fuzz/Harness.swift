#if FUZZING
    import Foundation
    @testable import PersistentPrefs
    @testable import PrefsHarnessKit

    /// Whether `value` holds a `Data` anywhere.
    func holdsData(_ value: Any) -> Bool {
        switch value {
        case is Data: return true
        case let array as [Any]: return array.contains(where: holdsData)
        case let dictionary as [String: Any]: return dictionary.values.contains(where: holdsData)
        default: return false
        }
    }

    extension FuzzTarget {
        /// The first byte picks the parser; the rest is the text typed at it.
        static func harness(_ data: Data) {
            guard let selector = data.first else { return }
            let text = String(decoding: data.dropFirst(), as: UTF8.self)
            switch selector % 5 {
            case 0:
                // Words quoted back as the harness documents quoting read as the same words.
                guard let words = try? Tokenizer.words(text) else { return }
                let line = words.map { word in
                    // Scalar by scalar: a quote followed by a combining mark is one character.
                    "'" + word.unicodeScalars.map { $0 == "'" ? #"'\''"# : String($0) }.joined() + "'"
                }.joined(separator: " ")
                require((try? Tokenizer.words(line)) == words, "\(text.debugDescription) gives \(words), quoted back as \(line.debugDescription) it reads otherwise")
            case 1:
                // Each word, quoted as the harness quotes the commands it names (``Tokenizer/quoted(_:)``),
                // reads back as itself.
                guard let words = try? Tokenizer.words(text) else { return }
                let line = words.map(Tokenizer.quoted).joined(separator: " ")
                require((try? Tokenizer.words(line)) == words, "\(words) quoted as \(line.debugDescription) reads otherwise")
            case 2:
                for key in SampleKey.allCases {
                    guard let value = try? ValueParser.parse(text, for: key, now: Date(timeIntervalSinceReferenceDate: 0)) else { continue }
                    require(PlistValue.normalized(value) != nil, "\(text.debugDescription) parsed for \(key) as \(value), which a set cannot store")
                }
            case 3:
                // What the harness prints reads back as itself (but data, which it shows as
                // `defaults read` does: `{length = 2, bytes = 0x0a0b}`, for people, not parsers).
                guard let value = try? PlistText.parse(text), !holdsData(value) else { return }
                // (Inside a container: at the top, `defaults read DOMAIN KEY` shows a string bare.)
                let shown = PlistText.describe(value, topLevel: false)
                guard let again = try? PlistText.parse(shown) else {
                    fatalError("\(text.debugDescription) is shown as \(shown.debugDescription), which does not parse")
                }
                require(PlistText.describe(again, topLevel: false) == shown, "\(text.debugDescription) is shown as \(shown.debugDescription), which reads otherwise")
            default:
                // `defaults write DOMAIN …`: the words after the domain, NUL-separated.
                let words = text.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
                guard let change = try? WriteChange.parse(words) else { return }
                var contents: [String: Any] = ["k": NSNumber(value: 1), "a": ["x"], "d": ["y": "z"]]
                guard (try? change.apply(to: &contents, domain: "fuzz")) != nil else { return }
                require(PlistValue.normalized(contents) != nil, "defaults write \(words) made a domain no file can hold: \(contents)")
            }
        }
    }
#endif

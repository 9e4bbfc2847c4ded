#if FUZZING
    import Foundation
    @testable import PersistentPrefs

    extension FuzzTarget {
        static func xml(_ data: Data) {
            guard case .success(let ours) = PlistXML.read(data) else { return }
            requireRoundTrip(ours, from: data)
            // Foundation reads the same, where it reads the document at all (and reads it right).
            guard !holdsLeadingBOM(ours), let parsed = try? PropertyListSerialization.propertyList(from: data, format: nil),
                let theirs = PlistValue.stringKeyedDictionary(parsed)
            else { return }
            require(same(ours, theirs), "the XML reader and Foundation read \(shown(data)) otherwise, \(difference(ours, theirs))")
        }

        static func binary(_ data: Data) {
            guard let ours = libraryReading(data) else { return }
            requireRoundTrip(ours, from: data)
        }

        static func schema(_ data: Data) {
            guard let schema = try? PrefsSchema(jsonData: data) else { return }
            let written = schema.jsonData
            let again: PrefsSchema
            do {
                again = try PrefsSchema(jsonData: written)
            } catch {
                fatalError("a schema read from \(shown(data)) was written as \(shown(written)), which reads as \(error)")
            }
            require(again.jsonData == written, "a schema read from \(shown(data)) reads otherwise once written: \(shown(written))")
        }
    }
#endif

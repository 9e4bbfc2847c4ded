#if FUZZING
    import Foundation
    @testable import PersistentPrefs

    /// Whether two JSON documents hold the same values, reals to within 8 units in the last place:
    /// Foundation's `JSONSerialization` on Linux misreads some reals by a few units
    /// (`1.1111111111101114e+120` reads as `1.1111111111101121e+120`; `JSONDecoder` reads it
    /// exactly), and the schema reader reads through it (see Fuzz/README.md).
    func sameJSON(_ lhs: Data, _ rhs: Data) -> Bool {
        func close(_ a: Any, _ b: Any) -> Bool {
            switch (a, b) {
            case let (a as [String: Any], b as [String: Any]):
                return a.count == b.count && a.allSatisfy { key, value in b[key].map { close(value, $0) } ?? false }
            case let (a as [Any], b as [Any]):
                return a.count == b.count && zip(a, b).allSatisfy { close($0, $1) }
            case let (a as String, b as String):
                return a == b
            case let (a as NSNumber, b as NSNumber):
                let kinds = (String(cString: a.objCType), String(cString: b.objCType))
                guard kinds.0 == kinds.1 else { return false }
                guard kinds.0 == "d" else { return a == b }
                return a.doubleValue == b.doubleValue || abs(a.doubleValue - b.doubleValue) <= 8 * a.doubleValue.ulp
            case (is NSNull, is NSNull):
                return true
            default:
                return false
            }
        }
        guard let a = try? JSONSerialization.jsonObject(with: lhs), let b = try? JSONSerialization.jsonObject(with: rhs) else {
            return false
        }
        return close(a, b)
    }

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
            require(
                sameJSON(written, again.jsonData),
                "a schema read from \(shown(data)) reads otherwise once written: \(shown(written)) against \(shown(again.jsonData))")
        }
    }
#endif

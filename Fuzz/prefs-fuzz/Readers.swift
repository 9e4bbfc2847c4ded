#if FUZZING
    import Foundation
    @testable import PersistentPrefs

    /// Whether two JSON values read from the same text are the same: same shapes, strings and
    /// number kinds (or a decimal of the same value), reals to within 8 units in the last place of `exact`'s (Foundation's
    /// `JSONSerialization` on Linux misreads some reals by a few units: `1.1111111111101114e+120`
    /// reads as `1.1111111111101121e+120`).
    func sameJSON(_ exact: Any, _ other: Any) -> Bool {
        func close(_ x: Double, _ y: Double) -> Bool { x.bitPattern == y.bitPattern || abs(x - y) <= 8 * x.ulp }
        switch (exact, other) {
        case let (a as [String: Any], b as [String: Any]):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { sameJSON(value, $0) } ?? false }
        case let (a as [Any], b as [Any]):
            return a.count == b.count && zip(a, b).allSatisfy { sameJSON($0, $1) }
        case let (a as String, b as String):
            return a == b
        case let (a as NSNumber, b as NSDecimalNumber):
            // Foundation on Linux gives some 19-digit negative integers as decimals.
            guard let kind = NumberKind(a), kind != .boolean else { return false }
            return kind == .real ? close(a.doubleValue, b.doubleValue) : a.stringValue == b.stringValue
        case let (a as NSNumber, b as NSNumber):
            guard let kind = NumberKind(a), kind == NumberKind(b) else { return false }
            guard kind == .real else { return a == b }
            return close(a.doubleValue, b.doubleValue)
        case (is NSNull, is NSNull):
            return true
        default:
            return false
        }
    }

    extension FuzzTarget {
        static func xml(_ data: Data) {
            // What a store makes of the file: a document the reader declines goes to Foundation's
            // reader too, which decides whether it is damage.
            let stored = PlistFile.parse(data)
            guard case .success(let ours) = PlistXML.read(data) else {
                if case .success = stored { fatalError("PlistFile.parse read \(shown(data)), which the XML reader declines") }
                return
            }
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
            // Where both the JSON reader and Foundation's read the text, they read the same. The
            // reader may decline what Foundation takes: it reads RFC 8259 UTF-8 strictly, where
            // Foundation also takes UTF-16 and UTF-32 and a trailing comma.
            if case .success(let ours) = Result(catching: { try JSONText.value(of: data) }),
                let theirs = try? JSONSerialization.jsonObject(with: data)
            {
                require(sameJSON(ours, theirs), "\(shown(data)) reads as \(ours) here, as \(theirs) in Foundation")
            }
            // A schema the library reads, it writes so that it reads back as the same schema.
            guard let schema = try? PrefsSchema(jsonData: data) else { return }
            let written = schema.jsonData
            let again: PrefsSchema
            do {
                again = try PrefsSchema(jsonData: written)
            } catch {
                fatalError("a schema read from \(shown(data)) was written as \(shown(written)), which reads as \(error)")
            }
            require(
                again.jsonData == written,
                "a schema read from \(shown(data)) reads otherwise once written: \(shown(written)) against \(shown(again.jsonData))")
        }
    }
#endif

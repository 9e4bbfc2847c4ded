#if FUZZING
    import Foundation
    @testable import PersistentPrefs
    @testable import PrefsHarnessKit

    #if canImport(Glibc)
        import Glibc
    #endif

    /// One reader of outside bytes, and what must hold for every input it is given.
    ///
    /// A broken property stops the run with `fatalError` naming it: libFuzzer keeps the input
    /// (`crash-…`) and `Fuzz/run` prints it as base64.
    enum FuzzTarget: String, CaseIterable {
        /// The XML reader: what it reads, the library's writer writes back and the reader reads
        /// the same; where Foundation reads the document too, it reads the same values.
        case xml
        /// A suite file as the library reads it (the binary check, then Foundation's decoder, or
        /// the XML reader): what it reads survives the library's writer, XML and binary.
        case binary
        /// The schema JSON reader: a schema it reads is written and read back the same.
        case schema
        /// A lock file (the record and the suite's ledger journal), read by a writer holding
        /// the lock and by a reader that takes none; a journal read under the lock reads the same again.
        case lockfile
        /// A site-defaults layer file, as `LayerStack` reads it: a locked key is never repaired
        /// away, and a change of it is refused.
        case layer
        /// The harness's tokenizer, value parser, plist text and `defaults write` arguments.
        case harness
        /// Values set through the public API: stored ones read back equal from disk; refused
        /// ones leave `lastError` set and the file byte for byte as it was.
        case api
        /// A device file in a sync folder (``DeviceFile``): a log it reads is written and read back the same.
        case devicefile

        nonisolated(unsafe) static var selected = FuzzTarget.xml

        func run(_ data: Data) {
            switch self {
            case .xml: Self.xml(data)
            case .binary: Self.binary(data)
            case .schema: Self.schema(data)
            case .lockfile: Self.lockfile(data)
            case .layer: Self.layer(data)
            case .harness: Self.harness(data)
            case .api: Self.api(data)
            case .devicefile: Self.devicefile(data)
            }
        }
    }

    // MARK: - Properties shared by the targets

    /// Stops the run when `condition` fails (libFuzzer keeps the input).
    func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fatalError("property broken: \(message())") }
    }

    /// A private folder for the targets that read files, removed at exit by `Fuzz/run`'s temporary
    /// folder (it is made inside `TMPDIR`).
    let scratch: URL = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let url = URL(fileURLWithPath: base).appendingPathComponent("prefs-fuzz-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Identity of shape and value: the same dynamic type at every level (a `[String: Any]` stands
    /// for Foundation's `[AnyHashable: Any]`), `NSNumber`s of the same kind and bits, dates of the
    /// same bits. `asXML`: `rhs` was read from XML `lhs` was written to, which has one kind of
    /// real and of integer (a `Float` comes back as the `Double` of the same value, an unsigned
    /// integer up to `Int64.max` as a signed one); dates are exact even so (XML is written only
    /// when every date is a whole second).
    func same(_ lhs: Any, _ rhs: Any, asXML: Bool = false) -> Bool {
        let dictionaries: [Any.Type] = [[String: Any].self, [AnyHashable: Any].self]
        let bothDictionaries = dictionaries.contains { $0 == type(of: lhs) } && dictionaries.contains { $0 == type(of: rhs) }
        guard bothDictionaries || type(of: lhs) == type(of: rhs) else { return false }
        switch (lhs, rhs) {
        case let (a as String, b as String): return a == b
        // A Swift `Bool` only: on Linux every `NSNumber` of 0 or 1 casts to `Bool`, whatever its kind.
        case let (a as Bool, b as Bool) where type(of: lhs) == Bool.self: return a == b
        case let (a as NSNumber, b as NSNumber):
            let kinds = (String(cString: a.objCType), String(cString: b.objCType))
            if asXML && kinds == ("f", "d") { return a.doubleValue.bitPattern == b.doubleValue.bitPattern }
            if asXML && kinds == ("Q", "q") { return a.uint64Value <= UInt64(Int64.max) && a.int64Value == b.int64Value }
            guard kinds.0 == kinds.1 else { return false }
            if kinds.0 == "d" || kinds.0 == "f" { return a.doubleValue.bitPattern == b.doubleValue.bitPattern }
            return a.int64Value == b.int64Value && a.uint64Value == b.uint64Value
        case let (a as Date, b as Date):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case let (a as Data, b as Data): return a == b
        case let (a as [Any], b as [Any]): return a.count == b.count && zip(a, b).allSatisfy { same($0, $1, asXML: asXML) }
        case let (a as [AnyHashable: Any], b as [AnyHashable: Any]):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0, asXML: asXML) } ?? false }
        default: return false
        }
    }

    /// Where `lhs` and `rhs` first differ (see ``same(_:_:asXML:)``), with both values spelled exactly.
    func difference(_ lhs: Any, _ rhs: Any, asXML: Bool = false, at path: String = "") -> String {
        func spelled(_ value: Any) -> String {
            switch value {
            case let date as Date: return "Date(\(date.timeIntervalSinceReferenceDate))"
            case let number as NSNumber where !(value is Bool): return "NSNumber(\(String(cString: number.objCType)) \(number))"
            default: return "\(type(of: value)) \(value)"
            }
        }
        switch (lhs, rhs) {
        case let (a as [Any], b as [Any]) where a.count == b.count:
            for (index, pair) in zip(a, b).enumerated() where !same(pair.0, pair.1, asXML: asXML) {
                return difference(pair.0, pair.1, asXML: asXML, at: path + "[\(index)]")
            }
        case let (a as [AnyHashable: Any], b as [AnyHashable: Any]) where Set(a.keys) == Set(b.keys):
            for (key, value) in a where !same(value, b[key]!, asXML: asXML) {
                return difference(value, b[key]!, asXML: asXML, at: path + "[\(String(describing: key).debugDescription)]")
            }
        default: break
        }
        return "at \(path.isEmpty ? "the top" : path): \(spelled(lhs)) against \(spelled(rhs))"
    }

    /// Whether a key or string anywhere in `value` starts with U+FEFF, which Foundation's XML
    /// reader on Linux drops (the library writes such a set as a binary property list).
    func holdsLeadingBOM(_ value: Any) -> Bool {
        switch value {
        case let string as String: return string.hasPrefix("\u{FEFF}")
        case let array as [Any]: return array.contains(where: holdsLeadingBOM)
        case let dictionary as [String: Any]: return dictionary.contains { holdsLeadingBOM($0.key) || holdsLeadingBOM($0.value) }
        default: return false
        }
    }

    /// A short description of bytes for a failure message.
    func shown(_ data: Data) -> String {
        String(decoding: data.prefix(300), as: UTF8.self).debugDescription
    }

    /// What the library reads a file's bytes as (`nil`: declined or damaged).
    func libraryReading(_ data: Data) -> [String: Any]? {
        if case .success(let dictionary) = PlistFile.parse(data) { return dictionary }
        return nil
    }

    /// Writes `dictionary` (read from `source`) with the library's writer, XML (binary where XML
    /// cannot hold a character) and binary, and requires each to read back the same. A value the
    /// writer refuses is named by the refusal, never written otherwise.
    func requireRoundTrip(_ dictionary: [String: Any], from source: Data) {
        let url = scratch.appendingPathComponent("round-trip.plist")
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let written: Data
            do {
                written = try PlistFile.encoded(dictionary, format: format, for: url)
            } catch PersistentPrefs.PrefsError.valuesNotPlistCompatible(let keys) where format == .xml {
                // XML refuses only a date CoreFoundation cannot read back, naming its keys alone.
                require(
                    !keys.isEmpty && keys.allSatisfy { dictionary[$0] != nil && PlistXML.document([$0: dictionary[$0]!]) == nil },
                    "the XML writer refused \(keys), not each a value it cannot write")
                continue
            } catch PersistentPrefs.PrefsError.ioError(_, let reason) where reason.contains("over the limit") {
                continue  // more than a file may grow to
            } catch {
                fatalError("the \(format == .xml ? "XML" : "binary") writer refused what the library read from \(shown(source)): \(error)")
            }
            guard let again = libraryReading(written) else {
                fatalError("the library's \(format == .xml ? "XML" : "binary") writer wrote what its reader declines, from \(shown(source)): \(shown(written))")
            }
            let isXML = !written.starts(with: Array("bplist".utf8))
            require(same(dictionary, again, asXML: isXML), "\(format == .xml ? "XML" : "binary") round trip changed a value \(difference(dictionary, again, asXML: isXML))")
        }
    }
#endif

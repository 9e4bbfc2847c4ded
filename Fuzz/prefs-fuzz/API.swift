#if FUZZING
    import Foundation
    @testable import PersistentPrefs

    /// A set of five keys, as an app declares one.
    final class FuzzPrefs: PersistentPrefs, @unchecked Sendable {
        override var keys: [String] { ["a", "b", "c", "d", "e"] }
    }

    /// Values made from fuzz bytes: every kind a property list holds, nested, plus a few no
    /// property list can hold.
    struct ValueMaker {
        var bytes: Data.Iterator

        mutating func byte() -> UInt8 { bytes.next() ?? 0 }

        mutating func integer() -> Int64 {
            (0..<8).reduce(Int64(0)) { value, _ in value << 8 | Int64(byte()) }
        }

        mutating func string() -> String {
            let count = Int(byte() % 8)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<count {
                let raw = UInt32(byte()) << 8 | UInt32(byte())
                // Now and then a character XML cannot hold, or one outside the BMP.
                let value = raw % 7 == 0 ? raw % 0x20 : raw % 11 == 0 ? 0x1F600 + raw % 64 : raw
                scalars.append(Unicode.Scalar(value) ?? "?")
            }
            return String(scalars)
        }

        mutating func value(depth: Int = 0) -> Any {
            switch byte() % (depth > 3 ? 8 : 10) {
            case 0: return string()
            case 1: return NSNumber(value: integer())
            case 2: return NSNumber(value: Double(bitPattern: UInt64(bitPattern: integer())))
            case 3: return NSNumber(value: byte() & 1 == 1)
            // Dates from about 12,700 years before 2001 to as many after: some outside what a set stores.
            case 4: return Date(timeIntervalSinceReferenceDate: Double(integer() % 400_000_000_000_000) / 1000)
            case 5: return Data((0..<Int(byte() % 6)).map { _ in byte() })
            case 6: return NSNumber(value: UInt64(bitPattern: integer()))
            case 7: return byte() % 4 == 0 ? NSObject() : string()  // not storable
            case 8: return (0..<Int(byte() % 4)).map { _ in value(depth: depth + 1) }
            default:
                var dictionary: [String: Any] = [:]
                for _ in 0..<Int(byte() % 4) { dictionary[string()] = value(depth: depth + 1) }
                return dictionary
            }
        }
    }

    extension FuzzTarget {
        /// One file per set, always a binary property list.
        static let fileStore = PlistFileStore(directory: scratch.appendingPathComponent("api", isDirectory: true))
        /// A suite file under the scratch folder's `config` (main.swift points `XDG_CONFIG_HOME`
        /// there): XML, or binary when XML cannot keep a value exactly.
        static let suiteStore = UserDefaultsStore(suiteName: "prefs-fuzz")!

        /// The first byte picks the store, the rest make the values.
        static func api(_ data: Data) {
            var maker = ValueMaker(bytes: data.makeIterator())
            let inSuite = maker.byte() & 1 == 1
            let store: any PrefsStore = inSuite ? suiteStore : fileStore
            let file = inSuite ? suiteStore.handle.file! : try! fileStore.fileURL(forRoot: "Fuzz")
            /// The set as the file holds it.
            func stored(in bytes: Data) -> [String: Any]? {
                guard let top = libraryReading(bytes) else { return nil }
                return inSuite ? (top["Fuzz"] as? [String: Any]) ?? [:] : top
            }
            let prefs = FuzzPrefs(key: "Fuzz", store: store)
            let before = FileManager.default.contents(atPath: file.path)
            var values: [String: Any] = [:]
            for _ in 0..<Int(maker.byte() % 4) + 1 {
                let known = ["a", "b", "c", "d", "e"]
                let key = maker.byte() % 16 == 0 ? maker.string() : known[Int(maker.byte()) % known.count]
                values[key] = maker.value()
            }
            prefs.values = values
            let after = FileManager.default.contents(atPath: file.path)
            if prefs.lastError != nil {
                require(after == before, "a refused write (\(prefs.lastError!)) changed the file")
                return
            }
            guard let after, let read = stored(in: after) else { fatalError("a write left no file the library reads") }
            guard let expected = PlistValue.normalized(values) else { fatalError("values no set can hold were stored: \(values)") }
            require(PlistValue.same(read, expected), "values set as \(values) read back from disk as \(read)")
            let again: any PrefsStore = inSuite ? UserDefaultsStore(suiteName: "prefs-fuzz")! : PlistFileStore(directory: fileStore.directory)
            let reloaded = FuzzPrefs(key: "Fuzz", store: again).values
            require(PlistValue.same(reloaded, expected), "values set as \(values) read back by a new instance as \(reloaded)")
        }
    }
#endif

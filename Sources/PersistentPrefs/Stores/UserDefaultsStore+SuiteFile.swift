import Foundation

// The Linux road of ``UserDefaultsStore``: the library reads and replaces the suite's plist file
// itself, beside programs that use plain `UserDefaults` on the same suite.
//
// Plain `UserDefaults` on Linux saves a suite by reading the file, applying its own changed
// keys and rewriting the file in place, all without a lock. Two consequences shape a write:
// - A write must not replace a file that changed after it was read (a plain save that landed
//   in between would be lost): the replacement is abandoned and the change applied again.
// - A plain save that read the file just before the library replaced it writes its stale copy
//   over the library's. So once a write by someone else has been seen on a suite (the file
//   differs from what the library last wrote, as kept in the lock file), writes to it for the
//   next ``foreignWindow`` seconds wait a few milliseconds after the replacement and check the
//   file: if it was rewritten without the library's change, the change is applied again.
extension UserDefaultsStore {
    /// After a write by someone else is seen, how long writes keep checking that theirs stuck.
    static let foreignWindow: TimeInterval = 10
    /// How long a write waits, in steps, for a plain save in flight to land before checking.
    static let settleSteps: [TimeInterval] = [0.002, 0.004, 0.008, 0.016]
    /// How often a write is tried before it reports that another program keeps undoing it.
    static let maximumAttempts = 40

    /// Replaces the object under `key` in the suite file with what `change` makes of the
    /// current one (`nil` removes it), durably, under the suite's exclusive lock.
    ///
    /// `change` may run more than once (on a newer file each time), so it must depend on its
    /// argument only. `whileLocked` runs after a successful write, still under the lock.
    static func update(
        suiteFile file: URL, key: String, _ change: (Any?) throws -> Any?, whileLocked: () -> Void
    ) throws {
        try FileLock.withLock(for: file, exclusive: true) { lock in
            var record = lock.record
            defer { lock.store(record) }
            for _ in 1...maximumAttempts {
                let (read, signature) = try PlistFile.readSigned(file)
                // A file the library did not leave this way (or did not create) was written by someone else.
                if signature != nil, record.written != signature { record.foreignWriteSeen = Date().timeIntervalSince1970 }
                var suite = read ?? [:]
                let foreign = Date().timeIntervalSince1970 - record.foreignWriteSeen < foreignWindow
                if foreign { restoreUndoneWrite(file, in: &suite) }
                let before = suite[key]
                suite[key] = try change(before)
                let data: Data
                do {
                    data = try PlistFile.encoded(suite, format: .xml, for: file)
                } catch PersistentPrefs.PrefsError.ioError(_, let reason) {
                    throw PersistentPrefs.PrefsError.ioError(path: file.path, reason: "writing the key \"\(key)\": \(reason)")
                }
                // Abandoned when someone rewrote the file since it was read: start over from theirs.
                guard let written = try PlistFile.write(data, to: file, if: { FileSignature.of(file.path) == signature }) else {
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    continue
                }
                record.written = written
                guard foreign else { return whileLocked() }
                lastWrites.withLock { $0[file.path] = LastWrite(key: key, before: xml(before), after: xml(suite[key])) }
                switch try settle(file, written: written, key: key, ours: data) {
                case .intact:
                    return whileLocked()
                case .kept(let signature):
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    record.written = signature
                    return whileLocked()
                case .undone:
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    continue
                }
            }
            throw PersistentPrefs.PrefsError.ioError(
                path: file.path,
                reason: "another program rewrote the suite \(maximumAttempts) times while the key \"\(key)\" was written; nothing was changed")
        }
    }

    /// This process's last write to a suite file while others were writing it: the key, and
    /// its value before and after, as XML.
    private struct LastWrite {
        let key: String
        let before: Data?
        let after: Data?
    }

    private static let lastWrites = Locked<[String: LastWrite]>([:])

    /// Puts back this process's last write to `file` when a plain save that read the file
    /// before it wrote its stale copy over it afterwards, past the settling time: the key then
    /// holds exactly its value from before that write. (Plain code that deliberately writes a
    /// set's old value back, byte for byte, is taken for such a save.)
    private static func restoreUndoneWrite(_ file: URL, in suite: inout [String: Any]) {
        guard let last = lastWrites.withLock({ $0[file.path] }), last.before != last.after,
            xml(suite[last.key]) == last.before
        else { return }
        if let after = last.after,
            let value = (try? PropertyListSerialization.propertyList(from: after, format: nil))
                .flatMap(PlistValue.stringKeyedDictionary)?["v"]
        {
            suite[last.key] = value
        } else {
            suite[last.key] = nil
        }
    }

    /// A stored value as XML (dictionary keys sorted), for comparisons; `nil` for no value.
    private static func xml(_ value: Any?) -> Data? {
        value.flatMap { try? PropertyListSerialization.data(fromPropertyList: ["v": $0], format: .xml, options: 0) }
    }

    private enum Settled {
        /// Nobody touched the file.
        case intact
        /// Someone rewrote it, keeping the change (the file's signature is now this).
        case kept(FileSignature?)
        /// Someone rewrote it from an older copy: the change is gone.
        case undone
    }

    /// Waits for a plain save that may have read the file before the replacement, then tells
    /// whether the value under `key` is still the one written (`ours` is the data written).
    private static func settle(_ file: URL, written: FileSignature, key: String, ours: Data) throws -> Settled {
        for step in settleSteps {
            Thread.sleep(forTimeInterval: step)
            guard FileSignature.of(file.path) == written else {
                let (current, signature) = try PlistFile.readSigned(file)
                let mine = (try? PropertyListSerialization.propertyList(from: ours, format: nil)).flatMap(PlistValue.stringKeyedDictionary)
                return sameStoredValue(current?[key], mine?[key]) ? .kept(signature) : .undone
            }
        }
        return .intact
    }

    /// Whether two values parsed from XML property lists are the same (compared as XML, which
    /// sorts dictionary keys).
    private static func sameStoredValue(_ a: Any?, _ b: Any?) -> Bool {
        xml(a) == xml(b)
    }
}

import Foundation

// The Linux road of ``UserDefaultsStore``: the library reads and replaces the suite's plist file itself, beside
// programs whose plain `UserDefaults` rewrites the file in place without a lock. Its writes stick beside them:
// a write is applied again when the file changed after it was read; after a foreign write was seen, writes for
// `foreignWindow` seconds check the file a few milliseconds after replacing it and apply the change again if a
// plain save undid it; and later reverts are put right through the ``SuiteLedger`` kept in the lock file.
extension UserDefaultsStore {
    /// After a write by someone else is seen, how long writes keep checking that theirs stuck.
    static let foreignWindow: TimeInterval = 10
    /// How long a write waits, in steps, for a plain save in flight to land before checking.
    static let settleSteps: [TimeInterval] = [0.002, 0.004, 0.008]
    /// How long a write keeps trying before it reports that another program keeps rewriting the suite under it.
    static let attemptBudget: TimeInterval = 10

    /// What a change of one top-level key of a suite comes to, under the suite's lock.
    enum KeyEdit {
        /// Store this object under the key (`nil` removes it).
        case set(Any?)
        /// Write nothing: the suite stays as it is.
        case leave
    }

    /// What a change of a whole suite comes to, under the suite's lock.
    enum SuiteEdit {
        /// Write the suite as changed; `changed` names the keys changed (`nil`: found by comparing before and after).
        case write(changed: Set<String>?)
        /// Write nothing: the suite stays as it is.
        case leave
    }

    /// Changes the suite's top-level keys with `change`, durably, in one atomic replacement under the suite's
    /// exclusive lock; every key changed is recorded in the ledger and checked after a plain save. `change` may run
    /// more than once (on a newer file each time), so it must depend on its argument only; ``SuiteEdit/leave``
    /// writes nothing and returns `nil`. `whileLocked` runs after a successful write, still under the lock.
    ///
    /// - Parameters:
    ///   - what: What is written, for error messages ("the key \"x\"").
    ///   - label: The root key (or suite) written, named by the refusal of a nested write (``FileLock/withLock(for:label:_:)``).
    ///   - keys: The keys `change` may change when known (recorded and checked, changed or not); `nil`: the keys it
    ///     reports, else those that differ before and after.
    ///   - layers: The suite's system layers: the ledger's repairs never change a key they lock
    ///     (``LayerReader/sparingLocked(_:from:)``); `change` checks its own changes against them.
    ///   - movingAside: Whether a damaged file is moved aside (a suite's file), or left and the write refused.
    ///   - reading: Called before each run of `change` with the ``PlistFile/digest(_:)`` of the file it runs on when
    ///     the library left it so (`nil` otherwise), so the last call names the file the write changed.
    /// - Returns: The digest of the file as written, or `nil` when someone else rewrote it meanwhile (keeping the change).
    @discardableResult
    static func update(
        suiteFile file: URL, describing what: String, label: String, changing keys: Set<String>? = nil, layers: LayerReader,
        movingAside: Bool = true, _ change: (inout [String: Any]) throws -> SuiteEdit, reading: (UInt64?) -> Void = { _ in },
        whileLocked: () -> Void = {}
    ) throws -> UInt64? {
        let path = file.path  // worked out once: a URL's path is worked out afresh on each use
        return try FileLock.withLock(atPath: path, label: label) { lock in
            let head = lock.head(notes: SuiteLedger.headNotes)
            var record = head.record
            defer { lock.store(record) }
            // A suite moved aside as damaged starts a new history: nothing from before is put back.
            let original = SuiteLedger.load(lock, head: head, forgettingAll: DamageNote.exists(forFileAt: path))
            var ledger = original
            var succeeded = false
            // A write that fails leaves the ledger as it found it, so nothing it recorded is put back later.
            defer { if !succeeded { original.restore(lock) } }
            let started = Date()
            var pause: TimeInterval = 0.0005
            for attempt in 0... {
                if attempt > 0 {
                    guard Date().timeIntervalSince(started) < attemptBudget else { break }
                    Thread.sleep(forTimeInterval: Double.random(in: 0...pause))
                    pause = min(pause * 2, 0.02)
                }
                let (read, signature, readDigest) = try PlistFile.readSigned(atPath: path, movingAside: movingAside, reusingWritten: true)
                // A file the library did not leave this way (or did not create) was written by someone else.
                let foreign = signature != nil && (record.written != signature || record.writtenDigest != readDigest)
                if foreign { record.foreignWriteSeen = Date().timeIntervalSince1970 }
                var suite = read ?? [:]
                // A file just as the library left it cannot hold a stale save's reverts.
                if foreign || signature == nil {
                    let found = suite
                    ledger.reconcile(&suite)
                    layers.sparingLocked(&suite, from: found)
                }
                let before = suite
                reading(foreign || signature == nil ? nil : readDigest)
                guard case .write(let reported) = try change(&suite) else { return nil }
                let changed = (keys ?? reported ?? PlistValue.changedKeys(before, suite)).sorted()
                let data: Data
                let ranges: [String: Range<Int>]
                do {
                    (data, ranges) = try PlistFile.encodedRanging(suite, for: file)
                } catch PersistentPrefs.PrefsError.ioError(_, let reason) {
                    throw PersistentPrefs.PrefsError.ioError(path: path, reason: "writing \(what): \(reason)")
                }
                // Kept on every suite (the first plain save can undo a write); recorded with the new digest before the
                // file is replaced, so a lock-free reader sees the suite as this write leaves it (SuiteLedger.repaired).
                for key in changed {
                    ledger.record(
                        key, before: before[key], after: suite[key], afterXML: ranges[key].map { PlistXML.wrapped(data[$0]) },
                        beforeIsLatest: !foreign && signature != nil)
                }
                ledger.save(to: lock)
                let writtenDigest = PlistFile.digest(data)
                record.writtenDigest = writtenDigest
                lock.store(record)
                // Abandoned when someone rewrote the file since it was read: start over from theirs.
                guard let written = try PlistFile.write(data, atPath: path, if: { FileSignature.of(path) == signature }) else {
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    ledger = original
                    continue
                }
                record.written = written
                PlistFile.remember(data, as: suite, forFileAt: path)
                var settled = Settled.intact
                if Date().timeIntervalSince1970 - record.foreignWriteSeen < foreignWindow {
                    settled = try settle(
                        file, written: written, ours: changed.map { ($0, ledger.entries[$0]?.latest) }, movingAside: movingAside)
                }
                var digest: UInt64? = writtenDigest
                switch settled {
                case .intact:
                    break
                case .kept(let signature):
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    record.written = signature
                    record.writtenDigest = 0
                    digest = nil
                case .undone:
                    record.foreignWriteSeen = Date().timeIntervalSince1970
                    // The next try records afresh; until then the journal keeps this try's steps, which readers saw.
                    ledger = original
                    continue
                }
                succeeded = true
                // A file as the library left it, changed in `changed` alone (no reconciled reverts).
                if let digest, let readDigest, !foreign { PlistFile.OwnWrites.remember(path, from: readDigest, to: digest, keys: changed) }
                DamageNote.clear(forFileAt: path)  // the suite is whole again
                whileLocked()
                return digest
            }
            throw PersistentPrefs.PrefsError.ioError(
                path: path,
                reason: "another program kept rewriting the suite for \(Int(attemptBudget)) s while \(what) was written")
        }
    }

    /// The object under `key` in the suite file as the library's next write will leave it (see ``SuiteLedger``), and the
    /// file's ``PlistFile/digest(_:)``. Takes no lock (a stuck writer never delays it) and writes nothing.
    static func versionedObject(suiteFile file: URL, key: String, layers: LayerReader) throws -> (value: Any?, digest: UInt64?) {
        let (suite, _, digest) = try PlistFile.readSigned(file)
        guard let suite else { return (nil, digest) }
        var repaired = SuiteLedger.repaired(suite, of: file, digest: digest)
        layers.sparingLocked(&repaired, from: suite)  // as the next write repairs it
        return (repaired[key], digest)
    }

    private enum Settled {
        /// Nobody touched the file.
        case intact
        /// Someone rewrote it, keeping the change (the file's signature is now this).
        case kept(FileSignature?)
        /// Someone rewrote it from an older copy: the change is gone.
        case undone
    }

    /// Waits for a plain save that may have read the file before the replacement, then tells whether each written
    /// key still holds `ours`, its value as the ledger keeps it (XML, compared as ``SuiteLedger`` does).
    private static func settle(
        _ file: URL, written: FileSignature, ours: [(key: String, value: Data?)], movingAside: Bool
    ) throws -> Settled {
        for step in settleSteps {
            Thread.sleep(forTimeInterval: step)
            guard FileSignature.of(file.path) == written else {
                let (current, signature, _) = try PlistFile.readSigned(file, movingAside: movingAside)
                return ours.allSatisfy { SuiteLedger.xml(current?[$0.key]) == $0.value } ? .kept(signature) : .undone
            }
        }
        return .intact
    }
}

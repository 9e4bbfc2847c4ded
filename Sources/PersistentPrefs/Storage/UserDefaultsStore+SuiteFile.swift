import Foundation

// The Linux road of ``UserDefaultsStore``: the library reads and replaces the suite's plist file
// itself, beside programs that use plain `UserDefaults` on the same suite.
//
// Plain `UserDefaults` on Linux saves a suite by reading the file, applying its own changed
// keys and rewriting the file in place, all without a lock. Three things make the library's
// writes stick beside it:
// - A write is abandoned and applied again when the file changed after it was read, so a plain
//   save that landed in between is kept.
// - Once a write by someone else has been seen on a suite (the file differs from what the
//   library last wrote, as kept in the lock file), writes to it for the next `foreignWindow`
//   seconds wait a few milliseconds after replacing the file and check it: if a plain save that
//   read the old file rewrote it without the library's change, the change is applied again.
// - The lock file keeps a ``SuiteLedger`` of the library's recent writes (a journal: each write
//   appends its own steps): a save that reverts a key later still is recognised at the library's
//   next write to the suite, and put right.
//   Reads never write, but they show the suite as that write will leave it, so a value never
//   goes back for a reader once the write that set it has returned.
extension UserDefaultsStore {
    /// After a write by someone else is seen, how long writes keep checking that theirs stuck.
    static let foreignWindow: TimeInterval = 10
    /// How long a write waits, in steps, for a plain save in flight to land before checking.
    static let settleSteps: [TimeInterval] = [0.002, 0.004, 0.008]
    /// How long a write keeps trying before it reports that another program keeps rewriting the
    /// suite under it (between tries it waits a little longer each time, up to 20 ms).
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
        /// Write the suite as changed; `changed` names the keys changed (`nil`: found by comparing
        /// the suite before and after).
        case write(changed: Set<String>?)
        /// Write nothing: the suite stays as it is.
        case leave
    }

    /// Replaces the object under `key` in the suite file with what `change` makes of the
    /// current one, durably, under the suite's exclusive lock; ``KeyEdit/leave`` writes nothing.
    ///
    /// `change` may run more than once (on a newer file each time), so it must depend on its
    /// argument only. `whileLocked` runs after a successful write, still under the lock.
    ///
    /// - Returns: The ``PlistFile/digest(_:)`` of the file as written, or `nil` when someone
    ///   else rewrote it meanwhile (keeping the change).
    @discardableResult
    static func update(
        suiteFile file: URL, key: String, layers: LayerReader, _ change: (Any?) throws -> KeyEdit, reading: (UInt64?) -> Void = { _ in },
        whileLocked: () -> Void = {}
    ) throws -> UInt64? {
        try update(
            suiteFile: file, describing: "the key \"\(key)\"", label: key, changing: [key], layers: layers,
            { suite in
                guard case .set(let object) = try change(suite[key]) else { return .leave }
                suite[key] = object
                return .write(changed: nil)
            }, reading: reading, whileLocked: whileLocked)
    }

    /// ``update(suiteFile:key:_:whileLocked:)`` for any number of keys: `change` changes the
    /// whole suite (its top-level keys), and every key it changes is written, recorded in the
    /// ledger and checked after a plain save, in one atomic replacement.
    ///
    /// - Parameters:
    ///   - what: What is written, for error messages ("the key \"x\"").
    ///   - label: The root key (or suite) written, named by the refusal of a nested write (see
    ///     ``FileLock/withLock(for:label:_:)``).
    ///   - keys: The keys `change` may change, when known (a one-key write): they are recorded
    ///     in the ledger and checked, changed or not. `nil`: the keys `change` names, the same
    ///     way (it compared the suite itself), or when it names none the keys it changed,
    ///     worked out by comparing the suite before and after. When it comes to
    ///     ``SuiteEdit/leave`` nothing is written, and `nil` returned.
    ///   - layers: The suite's system layers: what the ledger puts back after a stale save never
    ///     changes a key they lock (``LayerReader/sparingLocked(_:from:)``). `change` checks its
    ///     own changes against them.
    ///   - movingAside: Whether a damaged file is moved aside (a suite's file), or left where it
    ///     is and the write refused (a file named by path).
    ///   - reading: Called before each run of `change` with the ``PlistFile/digest(_:)`` of the
    ///     file it runs on, when that file is as the library left it (`nil` otherwise: someone else
    ///     wrote it, or there is none), so the last call names the file the write changed.
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
                // Kept on every suite: the first plain save beside the library can already undo a
                // write, before any other writer has been seen. Recorded, with the digest of the
                // new file, before the file is replaced: a reader (which takes no lock) that finds
                // the new file takes it as the library left it, and one that finds any other file
                // is shown it as this write leaves it (see ``SuiteLedger/repaired(_:of:digest:)``).
                for key in changed {
                    ledger.record(
                        key, before: before[key], after: suite[key], afterXML: ranges[key].map { PlistXML.wrapped(data[$0]) },
                        beforeIsLatest: !foreign && signature != nil)
                }
                ledger.save(to: lock)
                let writtenDigest = PlistFile.digest(data)
                record.writtenDigest = writtenDigest
                lock.store(record)
                // Abandoned when someone rewrote the file since it was read: start over from theirs
                // (the next try's steps replace these, as after a stale save below).
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
                    // The next try works from the ledger as it was and records afresh, its steps
                    // replacing these; until then the journal keeps this try's, so readers (who
                    // saw its values already) are shown them, not the values the stale save put back.
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

    /// The object under `key` in the suite file, as the library's next write will leave it.
    ///
    /// Takes no lock, so a stopped or stuck writer never delays it, and writes nothing: a value a
    /// stale plain save put back (see ``SuiteLedger``) is read as the library's latest value,
    /// which the library's next write to the suite puts back in the file.
    static func object(suiteFile file: URL, key: String, layers: LayerReader) throws -> Any? {
        try versionedObject(suiteFile: file, key: key, layers: layers).value
    }

    /// ``object(suiteFile:key:layers:)``, with the ``PlistFile/digest(_:)`` of the file it was
    /// read from.
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

    /// Waits for a plain save that may have read the file before the replacement, then tells
    /// whether each written key still holds `ours`, the value written as the ledger keeps it
    /// (XML, compared the same way ``SuiteLedger`` compares values).
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

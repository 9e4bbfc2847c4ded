#if FUZZING
    import Foundation
    @testable import PersistentPrefs

    #if canImport(Glibc)
        import Glibc
    #endif

    extension FuzzTarget {
        /// A suite whose lock file holds the input.
        static let suite = scratch.appendingPathComponent("Suite.plist")
        nonisolated(unsafe) static let suiteValues: [String: Any] = ["a": NSNumber(value: 1), "b": "text"]

        static func lockfile(_ data: Data) {
            if !FileManager.default.fileExists(atPath: suite.path) {
                guard let bytes = try? PlistFile.encoded(suiteValues, format: .xml, for: suite) else { fatalError("cannot write the suite file") }
                _ = FileManager.default.createFile(atPath: suite.path, contents: bytes)
            }
            guard FileManager.default.createFile(atPath: suite.path + ".lock", contents: data) else { fatalError("cannot write the lock file") }
            SuiteLedger.forgetViews()
            // A reader, without the lock, shows the suite as a writer, with it, repairs it.
            let stale: [String: Any] = ["a": NSNumber(value: 1), "b": "text", "c": NSNumber(value: 2)]
            let shown = SuiteLedger.repaired(stale, of: suite, digest: 1)
            _ = FileLock.peek(for: suite) { $0.head(notes: 0).record }
            func repairedUnderLock() -> (suite: [String: Any], entries: [String: SuiteLedger.Entry])? {
                try? FileLock.withLock(for: suite, label: "Suite") { lock in
                    // The record as a writer finds it: the reader's comparison above used it too.
                    guard lock.head(notes: 0).record.writtenDigest != 1 else { return nil }
                    var ledger = SuiteLedger.load(lock)
                    var repaired = stale
                    ledger.reconcile(&repaired)
                    return (repaired, ledger.entries)
                } ?? nil
            }
            // A load may rewrite the journal, keeping the `capacity` keys written last within the
            // horizon; below that many, nothing a repair uses is dropped.
            guard let first = repairedUnderLock(), first.entries.count < SuiteLedger.capacity else { return }
            require(
                PlistValue.same(shown, first.suite),
                "a reader without the lock shows \(shown), a writer with it repairs the suite to \(first.suite)")
            // The journal as the load left it (rewritten or not) repairs the same way again.
            SuiteLedger.forgetViews()
            guard let second = repairedUnderLock() else { fatalError("a journal could not be read under the lock again") }
            require(PlistValue.same(first.suite, second.suite), "a journal repairs otherwise once it is read again")
        }

        nonisolated(unsafe) static var layerRuns = 0

        static func layer(_ data: Data) {
            layerRuns += 1
            let folder = scratch.appendingPathComponent("site", isDirectory: true)
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let url = folder.appendingPathComponent("Suite.plist")
            guard FileManager.default.createFile(atPath: url.path, contents: data) else { fatalError("cannot write the layer file") }
            // Each input is a new version of the file to the reader, however fast they come.
            var times = [timespec(tv_sec: layerRuns, tv_nsec: 0), timespec(tv_sec: layerRuns, tv_nsec: 0)]
            utimensat(AT_FDCWD, url.path, &times, 0)
            let reader = LayerReader(files: [LayerFile(url: url, kind: .site, holdsRoots: true)])
            let top = reader.stack(root: nil)
            guard let file = libraryReading(data) else {
                require(top.layers.isEmpty, "a layer file the library cannot read gives a layer")
                return
            }
            // The user's suite as found, and as a stale save's repair would change every key of it.
            var found: [String: Any] = [:]
            var changed: [String: Any] = [:]
            for (key, value) in file where key != LayerStack.lockKey {
                if let set = PlistValue.stringKeyedDictionary(value) {
                    let keys = set.keys.filter { $0 != LayerStack.lockKey } + ["fuzz.extra"]
                    found[key] = Dictionary(keys.map { ($0, NSNumber(value: 1) as Any) }, uniquingKeysWith: { a, _ in a })
                    changed[key] = Dictionary(keys.map { ($0, NSNumber(value: 2) as Any) }, uniquingKeysWith: { a, _ in a })
                } else {
                    found[key] = NSNumber(value: 1)
                    changed[key] = NSNumber(value: 2)
                }
            }
            var repaired = changed
            reader.sparingLocked(&repaired, from: found)
            var locksSome = false
            for (key, value) in found {
                if top.isLocked(key) {
                    locksSome = true
                    require(PlistValue.same(repaired[key], value), "a repair changed the locked key \(key) of \(shown(data))")
                    continue
                }
                guard let old = value as? [String: Any] else { continue }
                let set = reader.stack(root: key)
                let new = repaired[key] as? [String: Any]
                for (inner, innerValue) in old where set.isLocked(inner) {
                    locksSome = true
                    require(PlistValue.same(new?[inner], innerValue), "a repair changed the locked key \(inner) of \(key) in \(shown(data))")
                }
            }
            do {
                try reader.checkSuiteChange(from: found, to: changed)
                require(!locksSome, "a change of a locked key was let through, for \(shown(data))")
            } catch PersistentPrefs.PrefsError.keyLocked {
                require(locksSome, "a change of no locked key was refused, for \(shown(data))")
            } catch {
                fatalError("checkSuiteChange threw \(error)")
            }
        }
    }
#endif

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
            // Half the inputs meet this process's view of the journal (read after it), half a new process's.
            if (data.first ?? 0) & 1 == 0 { SuiteLedger.forgetViews() }
            _ = FileLock.peek(for: suite) { $0.record }
            _ = SuiteLedger.repaired(suiteValues, of: suite, digest: 1)
            func entriesUnderLock() -> [String: SuiteLedger.Entry]? {
                try? FileLock.withLock(for: suite, label: "Suite") { lock in
                    _ = lock.record
                    var ledger = SuiteLedger.load(lock)
                    var repaired = suiteValues
                    ledger.reconcile(&repaired)
                    return ledger.entries
                }
            }
            // A load may rewrite the journal, keeping the entries a repair still uses: those
            // within the horizon, the `capacity` most recently written.
            let now = Date().timeIntervalSince1970
            func inUse(_ entries: [String: SuiteLedger.Entry]?) -> [String: SuiteLedger.Entry]? {
                entries?.filter { now - $0.value.written < SuiteLedger.horizon }
            }
            guard let first = inUse(entriesUnderLock()) else { fatalError("a journal could not be read under the lock") }
            SuiteLedger.forgetViews()
            guard let second = inUse(entriesUnderLock()) else { fatalError("a journal could not be read under the lock") }
            if first.count <= SuiteLedger.capacity {
                require(first == second, "a journal read under the lock reads otherwise the second time: \(first) against \(second)")
            } else {
                require(second.allSatisfy { first[$0.key] == $0.value }, "a journal's rewrite changed an entry")
            }
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

import Foundation
import Testing

@testable import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// No note in a lock file crashes a write, and no writer joins another: damaged
/// ledger headers, a lock file replaced while it is held, the watcher thread's end, and the
/// stale-temporary sweep. Every test that waits runs under a deadline, so a hang fails instead of
/// stalling the run.
@Suite("Locks: no lock file crashes a write, no writer joins another")
struct LockSafetyTests {
    // MARK: - The ledger's header

    /// The bytes of a ledger journal's header: its magic, a generation and the length after its last rewrite.
    static func ledgerHeader(rewritten: Int64) -> Data {
        var bytes: [UInt8] = []
        for value in [Int64(0x3152_4744_454C_5050), 7, rewritten] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return Data(bytes)
    }

    @Test("a ledger header whose recorded length is out of range is ignored: every write lands", .linuxSuiteFiles,
          arguments: [Int64.max, Int64.max / 4 + 1, Int64.min, -1, 1 << 40])
    func damagedLedgerHeader(rewritten: Int64) throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let file = URL(fileURLWithPath: suite.path)
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 1)), root: "A")
        try FileLock.withLock(for: file, label: "test") { lock in lock.storeNotes(Self.ledgerHeader(rewritten: rewritten)) }
        // Once as a process that keeps a view of the journal, once as a fresh process.
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 2)), root: "A")
        try FileLock.withLock(for: file, label: "test") { lock in lock.storeNotes(Self.ledgerHeader(rewritten: rewritten)) }
        SuiteLedger.forgetViews()
        _ = try suite.store.apply(.set(key: "Int", value: NSNumber(value: 3)), root: "A")
        let stored = try suite.store.load(root: "A")
        #expect(stored?["Int"] as? Int == 3)
        let entries = try FileLock.withLock(for: file, label: "test") { lock -> [String: SuiteLedger.Entry] in
            SuiteLedger.load(lock).entries
        }
        #expect(entries["A"] != nil, "the damaged journal was replaced by one that records the write")
    }

    // MARK: - The lock file

    #if os(Linux)
        /// How many of this process's descriptors are open on the file at `path` (by device and inode).
        static func descriptors(on path: String) -> Int {
            var target = stat()
            guard lstat(path, &target) == 0 else { return 0 }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.filter { name in
                var info = stat()
                return stat("/proc/self/fd/" + name, &info) == 0 && info.st_dev == target.st_dev && info.st_ino == target.st_ino
            }.count
        }

        @Test("a writer that waited on a lock file replaced meanwhile locks the new one, never joining its holder",
              waitLimit)
        func replacedLockFile() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let file = URL(fileURLWithPath: directory.path + "/prefs.plist")
            let lockPath = file.path + ".lock"
            let inside = Locked(0)
            let overlapped = Locked(false)
            func enter() {
                inside.withLock { inside in
                    inside += 1
                    if inside > 1 { overlapped.withLock { $0 = true } }
                }
            }
            func leave() { inside.withLock { $0 -= 1 } }
            let thirdInside = DispatchSemaphore(value: 0)
            var second: Background<Bool>?
            var third: Background<Bool>?
            // The first holder's lock no longer excludes anyone once its file is replaced; what
            // must hold is that the second and third writers never hold the lock at once.
            try FileLock.withLock(for: file, label: "first") { (_: FileLock.Held) in
                // The second writer opens the lock file and waits for it.
                second = Background { () -> Bool in
                    do {
                        try FileLock.withLock(for: file, label: "second") { (_: FileLock.Held) in
                            enter()
                            leave()
                        }
                        return true
                    } catch {
                        return false
                    }
                }
                while Self.descriptors(on: lockPath) < 2 { usleep(1000) }
                // Someone replaces the lock file while it is held; a third writer locks the new one.
                let fresh = directory.path + "/fresh"
                close(open(fresh, O_RDWR | O_CREAT, 0o600))
                rename(fresh, lockPath)
                third = Background { () -> Bool in
                    do {
                        try FileLock.withLock(for: file, label: "third") { (_: FileLock.Held) in
                            enter()
                            defer { leave() }
                            thirdInside.signal()
                            // Held until the second writer waits on the new lock file too, or got in beside it.
                            while Self.descriptors(on: lockPath) < 2, !overlapped.withLock({ $0 }) { usleep(1000) }
                        }
                        return true
                    } catch {
                        return false
                    }
                }
                _ = thirdInside.wait(timeout: .now() + 10)
            }
            #expect(third?.value(within: 20) == true)
            #expect(second?.value(within: 20) == true)
            #expect(!overlapped.withLock { $0 }, "two writers held the lock at once")
        }

        // MARK: - The watcher thread

        @Test("after the watcher thread ends on a failed poll, stop() writes into no descriptor", waitLimit)
        func watcherThreadEnd() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let backend = try InotifyBackend(report: { _ in })
            backend.add(directory.path)
            backend.failNextPoll()
            _ = FileManager.default.createFile(atPath: directory.path + "/event", contents: Data())
            try #require(backend.threadEnded.wait(timeout: .now() + 20) == .success, "the thread did not end")
            #expect(backend.failures(retrying: false)[directory.path] != nil, "the folder is reported unwatched, so it is polled")
            // A file of someone else's now has the wake channel's descriptor number, as the next open would.
            let number = backend.wakeDescriptor
            var opened: [Int32] = []
            defer { for descriptor in opened { close(descriptor) } }
            for index in 0..<256 where !opened.contains(number) {
                let descriptor = open(directory.path + "/victim\(index)", O_RDWR | O_CREAT, 0o600)
                guard descriptor >= 0 else { break }
                opened.append(descriptor)
            }
            try #require(opened.contains(number), "another thread holds descriptor \(number)")
            backend.add(directory.path + "/later")
            backend.stop()
            var info = stat()
            #expect(fstat(number, &info) == 0 && info.st_size == 0, "stop() wrote \(info.st_size) bytes into another file")
        }

        @Test("the watcher's wake channel is close-on-exec")
        func wakeChannelCloseOnExec() throws {
            let backend = try InotifyBackend(report: { _ in })
            defer { backend.stop() }
            #expect(fcntl(backend.wakeDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        }
    #endif

    // MARK: - Stale temporaries

    @Test("the first write of a file removes only its own stale temporaries, never those of a file whose name extends it")
    func staleTemporarySweep() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Another file's temporaries (`prefs.old`'s, `prefs.x`'s), and a name with no writer id.
        let others = [".prefs.old.3f2a9c.tmp", ".prefs.old.4B1E5D2C-9A7F-4C39-8E21-0D6F1A2B3C4D.tmp", ".prefs.x.y.tmp", ".prefs..tmp"]
        // This file's, as the library names them (and earlier versions did, with a UUID).
        let stale = [".prefs.3f2a9c.tmp", ".prefs.0.tmp", ".prefs.ffffffffffffffff.tmp", ".prefs.4B1E5D2C-9A7F-4C39-8E21-0D6F1A2B3C4D.tmp"]
        for name in others + stale { _ = FileManager.default.createFile(atPath: directory.path + "/" + name, contents: Data("x".utf8)) }
        try AtomicFile.write(Data("new".utf8), to: URL(fileURLWithPath: directory.path + "/prefs"))
        for name in others {
            #expect(FileManager.default.fileExists(atPath: directory.path + "/" + name), "\(name) was removed")
        }
        for name in stale {
            #expect(!FileManager.default.fileExists(atPath: directory.path + "/" + name), "\(name) was left")
        }
    }
}

/// Runs `body` on a thread of its own at once; ``value(within:)`` waits for what it returned.
final class Background<Value>: @unchecked Sendable {  // `result` is written before `finished` is set and `done` signalled, read after
    private let body: () -> Value
    private var result: Value?
    private let done = DispatchSemaphore(value: 0)
    private let finished = Locked(false)

    init(_ body: @escaping () -> Value) {
        self.body = body
        Thread { [self] in run() }.start()
    }

    private func run() {
        result = body()
        finished.withLock { $0 = true }
        done.signal()
    }

    /// What `body` returned, waiting at most `seconds`; `nil` when it has not returned by then.
    func value(within seconds: TimeInterval) -> Value? {
        if finished.withLock({ $0 }) { return result }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return result
    }
}

import Foundation

/// The writers' lock of a file: an advisory lock (`flock`) on a sidecar file, `<file>.lock`, shared by every process
/// using this library on the file; each holder opens it itself, so threads exclude each other too. Only writers take
/// it (files are replaced atomically, or rewritten in a way ``PlistFile`` reads through), so no writer blocks a read.
///
/// A writer waits at most ``timeout``, then gets ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)``;
/// a thread asking again for a lock it holds gets ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` at once.
/// The lock is always on the file the path names (`lockedFile`), so its holder may remove it (``Held/removeFile()``).
/// The lock file is never a link and always this user's own, mode 0600 (`openLockFile`): its notes hold written values.
/// It also keeps unsynced hints for writers (a lost or damaged one is ignored): a ``Record`` and, from ``notesOffset``,
/// notes (``Held/notes(in:)``, the ``SuiteLedger``'s journal).
enum FileLock {
    /// What writers keep in the lock file.
    struct Record {
        /// The file as the library's last write left it.
        var written: FileSignature?
        /// When a change by a writer outside the library was last seen (seconds since 1970).
        var foreignWriteSeen: TimeInterval = 0
        /// The ``PlistFile/digest(_:)`` of the library's last write (0: unknown), changed by any rewrite, unlike the signature.
        var writtenDigest: UInt64 = 0
    }

    /// Where the notes block starts in the lock file.
    static let notesOffset: Int64 = 64
    /// Where the holder's process id is kept (after the record's six fields, before ``Record/writtenDigest``).
    private static let holderOffset: off_t = 48

    /// How long a writer waits for the lock before giving up (``PersistentPrefs/lockTimeout``).
    static let timeout = Locked<TimeInterval>(5)

    /// A lock being held, with access to the lock file's ``Record`` and notes.
    struct Held {
        fileprivate let descriptor: Int32
        fileprivate let path: String
        /// The lock file's device and inode, to tell it from one made again at the same path.
        let identity: FileIdentity
        /// The process id kept in the holder's place: this process's for a writer, 0 for ``FileLock/peek(for:_:)``.
        fileprivate let holder: Int64

        /// What a holder reads first, in one read: the record and the start of the notes block.
        struct Head {
            /// The record (empty when there is none yet, or the file ends inside it).
            let record: Record
            /// How long the notes block is (0 when there is none).
            let notesLength: Int
            /// The bytes after the notes block's length, as many as asked for and there (stale past a shortened block).
            let notesStart: Data
        }

        /// The record, the notes block's length and its first `count` bytes, in one read.
        func head(notes count: Int) -> Head {
            let recordSize = Int(notesOffset)
            var bytes = [UInt8](repeating: 0, count: recordSize + 4 + count)
            let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            guard read >= recordSize else { return Head(record: Record(), notesLength: 0, notesStart: Data()) }
            // The record's six fields, the holder, the digest: 8 bytes each, in this machine's order.
            let fields = bytes.withUnsafeBytes { raw in (0..<8).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self) } }
            let record = Record(
                written: FileSignature(fields: Array(fields.prefix(5))),
                foreignWriteSeen: TimeInterval(bitPattern: UInt64(bitPattern: fields[5])),
                writtenDigest: UInt64(bitPattern: fields[7]))
            guard read >= recordSize + 4 else { return Head(record: record, notesLength: 0, notesStart: Data()) }
            let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: recordSize, as: UInt32.self)) }
            return Head(record: record, notesLength: length < Self.notesLimit ? length : 0, notesStart: Data(bytes[(recordSize + 4)..<read]))
        }

        /// Replaces the record, with the holder's process id beside it, in one write (a failure just loses the hint).
        func store(_ record: Record) {
            var fields = record.written?.fields ?? [0, 0, 0, 0, 0]
            fields.append(Int64(bitPattern: record.foreignWriteSeen.bitPattern))
            fields.append(holder)
            fields.append(Int64(bitPattern: record.writtenDigest))
            _ = fields.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }

        /// Replaces the notes block and cuts the lock file after it (a failure just loses the hint). A lock file
        /// cut short inside its record gets an empty one first, so the gap the notes leave never reads as a record.
        func storeNotes(_ data: Data) {
            guard data.count < Self.notesLimit else { return }
            if fileSize < Int(notesOffset) { store(Record()) }
            var block = withUnsafeBytes(of: UInt32(data.count)) { Data($0) }
            block.append(data)
            let written = block.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(notesOffset)) }
            if written == block.count { _ = ftruncate(descriptor, off_t(notesOffset) + off_t(block.count)) }
        }

        /// How many bytes the lock file holds (its record and notes).
        var fileSize: Int {
            var info = stat()
            return fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
        }

        /// Removes the lock file, for a writer that removed the file it locks: call it last in the body of
        /// ``FileLock/withLock(for:label:_:)`` (a waiter then finds the path no longer names it and locks a new one).
        /// Nothing is removed when the path names another file; a failure leaves the lock file, which is harmless.
        func removeFile() {
            guard FileLock.isNamed(identity, by: path) else { return }
            unlink(path)
        }

        /// The largest notes block kept.
        static let notesLimit = 1 << 26

        /// The bytes `range` of the notes block (within ``Head/notesLength``), or `nil` when they cannot all be read.
        func notes(in range: Range<Int>) -> Data? {
            guard range.lowerBound >= 0, range.upperBound < Self.notesLimit else { return nil }
            guard !range.isEmpty else { return Data() }
            var data = Data(count: range.count)
            let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, range.count, off_t(notesOffset + 4) + off_t(range.lowerBound)) }
            return read == range.count ? data : nil
        }

        /// Writes `data` after the first `length` bytes of the notes block, then ends the block after it (so a
        /// writer stopped in between leaves the block as it was).
        func appendNotes(_ data: Data, at length: Int) {
            guard length + data.count < Self.notesLimit else { return }
            let written = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(notesOffset + 4) + off_t(length)) }
            if written == data.count { setNotesLength(length + data.count) }
        }

        /// Cuts the notes block to its first `length` bytes (or lengthens it back).
        func setNotesLength(_ length: Int) {
            var value = UInt32(clamping: length)
            _ = pwrite(descriptor, &value, 4, off_t(notesOffset))
        }
    }

    struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// Runs `body` holding the lock for `file` (waiting at most ``timeout``); a nested write gets an error naming `label`.
    /// - Throws: ``PersistentPrefs/PrefsError/lockTimeout(path:holderPID:waited:)``,
    ///   ``PersistentPrefs/PrefsError/transactionInProgress(root:)`` when this thread holds the lock already,
    ///   ``PersistentPrefs/PrefsError/ioError(path:reason:)`` for a lock file that cannot be used; or what `body` throws.
    static func withLock<Result>(for file: URL, label: String, _ body: (Held) throws -> Result) throws -> Result {
        try withLock(atPath: file.path, label: label, body)
    }

    /// ``withLock(for:label:_:)`` for the file at `path`.
    static func withLock<Result>(atPath path: String, label: String, _ body: (Held) throws -> Result) throws -> Result {
        let lockPath = scope(ofFile: path)
        try WriteScope.check(lockPath)
        do {
            try AtomicFile.createFolder(ofPath: path)
        } catch {
            throw error.prefsError
        }
        // Scoped around the lock, so work put off until this thread's writes end runs with it released (``WriteScope``).
        return try WriteScope.holding(lockPath, label: label) {
            let (descriptor, identity) = try lockedFile(lockPath, file: path, waiting: true)
            defer { close(descriptor) }
            let pid = Int64(getpid())
            return try holding(descriptor, pid: pid, lockPath: lockPath) {
                try body(Held(descriptor: descriptor, path: lockPath, identity: identity, holder: pid))
            }
        }
    }

    /// What ``WriteScope`` knows the lock of the file at `path` by: its lock file's path.
    static func scope(ofFile path: String) -> String {
        path + ".lock"
    }

    /// ``withLock(for:label:_:)`` without the record.
    static func withLock<Result>(for file: URL, label: String, _ body: () throws -> Result) throws -> Result {
        try withLock(for: file, label: label) { (_: Held) in try body() }
    }

    /// Runs `body` holding the lock for `file` if it can be had at once (or this thread holds it already);
    /// `nil`, without running `body`, when another writer holds it. For a reader's repair, which must not wait.
    static func withLockIfFree<Result>(for file: URL, _ body: () throws -> Result) throws -> Result? {
        let path = file.path
        let lockPath = scope(ofFile: path)
        if WriteScope.label(holding: lockPath) != nil { return try body() }
        return try WriteScope.holding(lockPath, label: file.lastPathComponent) { () throws -> Result? in
            let descriptor: Int32
            do {
                descriptor = try lockedFile(lockPath, file: path, waiting: false).descriptor
            } catch is Busy {
                return nil
            }
            defer { close(descriptor) }
            return try holding(descriptor, pid: Int64(getpid()), lockPath: lockPath, body)
        }
    }

    /// Runs `body` with the lock file's record and notes as they are now, without the lock (only ``Held``'s readers
    /// may be used; a note being rewritten may read damaged); `nil` without a lock file the writers would use.
    static func peek<Result>(for file: URL, _ body: (Held) -> Result) -> Result? {
        let descriptor = open(file.path + ".lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_nlink == 1 else { return nil }
        return body(Held(descriptor: descriptor, path: file.path + ".lock", identity: FileIdentity(info), holder: 0))
    }

    // MARK: - Private

    /// Opens the lock file at `lockPath` and locks it (waiting at most ``timeout`` when `waiting`, else throwing
    /// ``Busy``); the only road to the lock. One removed or replaced while this writer waited is let go and the one
    /// at the path locked instead, so two writers that waited on different files never hold the lock at once.
    private static func lockedFile(_ lockPath: String, file: String, waiting: Bool) throws -> (descriptor: Int32, identity: FileIdentity) {
        while true {
            guard let (descriptor, identity) = try openLockFile(lockPath) else { continue }  // removed as it was opened
            do {
                if waiting {
                    try acquire(descriptor, lockPath: lockPath, file: file)
                } else if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                    guard errno == EWOULDBLOCK || errno == EINTR else { throw AtomicFile.posixFailure("flock", lockPath).prefsError }
                    throw Busy()
                }
            } catch {
                close(descriptor)
                throw error
            }
            if isNamed(identity, by: lockPath) { return (descriptor, identity) }
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
    }

    /// Another writer holds the lock (``withLockIfFree(for:_:)`` does not wait).
    private struct Busy: Error {}

    /// Whether `path` (no link followed) names the file with `identity`, an open file's device and inode.
    fileprivate static func isNamed(_ identity: FileIdentity, by path: String) -> Bool {
        var named = stat()
        return lstat(path, &named) == 0 && FileIdentity(named) == identity
    }

    /// Runs `body` with the lock taken on `descriptor`, `pid` noted as its holder; releases it after.
    private static func holding<Result>(
        _ descriptor: Int32, pid: Int64, lockPath: String, _ body: () throws -> Result
    ) rethrows -> Result {
        var pid = pid
        _ = pwrite(descriptor, &pid, 8, holderOffset)
        defer {
            var none: Int64 = 0
            _ = pwrite(descriptor, &none, 8, holderOffset)
            flock(descriptor, LOCK_UN)
        }
        return try body()
    }

    /// Opens (creating it, mode 0600) the lock file, refusing one that is a link, not a regular file, another
    /// user's, or has other names; `nil` when it was removed before it could be looked at (open it again).
    private static func openLockFile(_ lockPath: String) throws -> (Int32, FileIdentity)? {
        // O_NONBLOCK: a FIFO planted as the lock file must not block the open (refused below).
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP {
                throw PersistentPrefs.PrefsError.ioError(
                    path: lockPath,
                    reason: "the lock file is a symbolic link, which the library never follows; remove it (nothing was written)")
            }
            throw AtomicFile.posixFailure("open", lockPath).prefsError
        }
        // One `fstat` decides both "removed meanwhile" and the refusals: a remover may unlink it at any moment.
        var info = stat()
        var problem: String?
        if fstat(descriptor, &info) != 0 {
            problem = "fstat failed: \(String(cString: strerror(errno)))"
        } else if info.st_nlink == 0 {
            close(descriptor)
            return nil
        } else if info.st_mode & S_IFMT != S_IFREG {
            problem = "the lock file is \(SharedFolders.describe(info.st_mode & S_IFMT)), not a regular file; remove it (nothing was written)"
        } else if info.st_uid != geteuid() {
            problem = "the lock file belongs to user \(info.st_uid), not to this user (\(geteuid())); a lock file someone else made could be read or held by them, so it is not used and nothing was written (remove it if it should not be there)"
        } else if info.st_nlink != 1 {
            problem = "the lock file has \(info.st_nlink) names (hard links); it is not used, so nothing was written (remove it)"
        } else if info.st_mode & 0o077 != 0, fchmod(descriptor, 0o600) != 0 {
            problem = "the lock file is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))) and could not be made private; nothing was written"
        }
        if let problem {
            close(descriptor)
            throw PersistentPrefs.PrefsError.ioError(path: lockPath, reason: problem)
        }
        return (descriptor, FileIdentity(info))
    }

    /// Takes the exclusive lock on `descriptor`, waiting at most ``timeout``.
    private static func acquire(_ descriptor: Int32, lockPath: String, file: String) throws {
        var started: TimeInterval?
        var pause: TimeInterval = 0.0001
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw AtomicFile.posixFailure("flock", lockPath).prefsError }
            let now = ProcessInfo.processInfo.systemUptime
            if started == nil { started = now }
            let waited = now - started!
            let limit = timeout.withLock { $0 }
            guard waited < limit else {
                throw PersistentPrefs.PrefsError.lockTimeout(path: file, holderPID: holder(of: descriptor), waited: waited)
            }
            // Short sleeps, so a lock handed over is taken within a couple of milliseconds.
            Thread.sleep(forTimeInterval: min(Double.random(in: pause / 2...pause), limit - waited))
            pause = min(pause * 2, 0.002)
        }
    }

    /// The lock's holder where it can be known: on Linux from `/proc/locks`, else the process id a writer notes.
    private static func holder(of descriptor: Int32) -> Int32? {
        #if os(Linux)
            var info = stat()
            if fstat(descriptor, &info) == 0, let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) {
                let device = UInt64(info.st_dev)
                let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
                let minor = (device & 0xff) | ((device >> 12) & ~0xff)
                let id = "\(String(major, radix: 16).leftPadded(to: 2)):\(String(minor, radix: 16).leftPadded(to: 2)):\(info.st_ino)"
                for line in table.split(separator: "\n") {
                    let fields = line.split(separator: " ")
                    // "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; waiters have "->" after the number.
                    guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == id, let pid = Int32(fields[4]) else { continue }
                    return pid > 0 ? pid : nil
                }
            }
        #endif
        var pid: Int64 = 0
        guard pread(descriptor, &pid, 8, holderOffset) == 8, pid > 0, pid <= Int64(Int32.max) else { return nil }
        return Int32(pid)
    }
}

extension FileLock.FileIdentity {
    /// The device and inode `info` names (`dev_t` is signed on Apple platforms: its bits are kept).
    init(_ info: stat) {
        self.init(device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino))
    }
}

extension String {
    /// The string with zeros in front, to `length` characters.
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An advisory lock (`flock`) on a sidecar file, `<file>.lock`, shared by every process that
/// uses this library on the same file. Each holder opens the lock file itself, so threads of
/// one process exclude each other as well.
///
/// The lock file also keeps what writers note for each other: a small record (``Held/record``:
/// the signature of the file as the library's last write left it, and when a write by someone
/// else — a program using plain `UserDefaults` — was last seen), and after it, from
/// ``notesOffset``, a block of notes (``Held/notes``, the ``SuiteLedger``). Neither is synced:
/// they are hints, and a lost or damaged one is ignored.
///
/// Readers need no write access: where the lock file cannot be created or opened for writing
/// (a read-only mount, an immutable lock file), a reader takes the lock through a read-only
/// descriptor, or reads without it when there is no lock file to open, since then no writer can
/// hold it either.
enum FileLock {
    /// What writers keep in the lock file.
    struct Record {
        /// The file as the library's last write left it.
        var written: FileSignature?
        /// When a change by a writer outside the library was last seen (seconds since 1970).
        var foreignWriteSeen: TimeInterval = 0
    }

    /// Where the notes block starts in the lock file.
    static let notesOffset: Int64 = 64

    /// A lock being held, with access to the lock file's ``Record`` and notes.
    struct Held {
        fileprivate let descriptor: Int32?
        /// Whether this is an exclusive lock, so the record and notes may be written.
        fileprivate let exclusive: Bool

        /// The record in the lock file (empty when there is none yet).
        var record: Record {
            guard let descriptor else { return Record() }
            var fields = [Int64](repeating: 0, count: 6)
            let size = fields.count * MemoryLayout<Int64>.size
            let read = fields.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, size, 0) }
            guard read == size else { return Record() }
            return Record(
                written: FileSignature(fields: Array(fields.prefix(5))),
                foreignWriteSeen: TimeInterval(bitPattern: UInt64(bitPattern: fields[5])))
        }

        /// Replaces the record (writers only; a failure just loses the hint).
        func store(_ record: Record) {
            guard let descriptor, exclusive else { return }
            var fields = record.written?.fields ?? [0, 0, 0, 0, 0]
            fields.append(Int64(bitPattern: record.foreignWriteSeen.bitPattern))
            _ = fields.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }

        /// The notes block, or `nil` when there is none.
        var notes: Data? {
            guard let descriptor else { return nil }
            var length: UInt32 = 0
            guard pread(descriptor, &length, 4, off_t(notesOffset)) == 4, length > 0, length < 1 << 26 else { return nil }
            var data = Data(count: Int(length))
            let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Int(length), off_t(notesOffset + 4)) }
            return read == Int(length) ? data : nil
        }

        /// Replaces the notes block (writers only; a failure just loses the hint).
        func storeNotes(_ data: Data) {
            guard let descriptor, exclusive, data.count < 1 << 26 else { return }
            var block = withUnsafeBytes(of: UInt32(data.count)) { Data($0) }
            block.append(data)
            _ = block.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(notesOffset)) }
        }
    }

    /// Runs `body` holding the lock for `file`: exclusive for writers, shared for readers.
    static func withLock<Result>(for file: URL, exclusive: Bool, _ body: () throws -> Result) throws -> Result {
        try withLock(for: file, exclusive: exclusive) { (_: Held) in try body() }
    }

    /// Runs `body` holding the lock for `file`, with access to the lock file's record.
    static func withLock<Result>(for file: URL, exclusive: Bool, _ body: (Held) throws -> Result) throws -> Result {
        let lockPath = file.path + ".lock"
        let directory = file.deletingLastPathComponent()
        let descriptor: Int32
        if exclusive {
            do {
                try AtomicFile.createDirectory(directory)
            } catch {
                throw error.prefsError
            }
            descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw AtomicFile.posixFailure("open", lockPath).prefsError }
        } else {
            // Nothing to lock against where there is no folder, or no lock file can exist; and a
            // reader of a file that does not exist (with no lock file either) creates nothing: a
            // writer replaces files atomically, so the reader sees no file or a whole one.
            guard FileManager.default.fileExists(atPath: directory.path),
                FileManager.default.fileExists(atPath: file.path) || FileManager.default.fileExists(atPath: lockPath)
            else { return try body(Held(descriptor: nil, exclusive: false)) }
            var opened = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if opened < 0 { opened = open(lockPath, O_RDONLY | O_CLOEXEC) }
            guard opened >= 0 else {
                guard errno == ENOENT || errno == EACCES || errno == EROFS || errno == EPERM else {
                    throw AtomicFile.posixFailure("open", lockPath).prefsError
                }
                return try body(Held(descriptor: nil, exclusive: false))
            }
            descriptor = opened
        }
        defer { close(descriptor) }
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw AtomicFile.posixFailure("flock", lockPath).prefsError }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body(Held(descriptor: descriptor, exclusive: exclusive))
    }
}

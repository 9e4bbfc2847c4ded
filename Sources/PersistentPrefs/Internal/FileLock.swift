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
enum FileLock {
    /// Runs `body` holding the lock for `file`: exclusive for writers, shared for readers.
    static func withLock<Result>(for file: URL, exclusive: Bool, _ body: () throws -> Result) throws -> Result {
        let lockPath = file.path + ".lock"
        do {
            try AtomicFile.createDirectory(file.deletingLastPathComponent())
        } catch {
            throw error.prefsError
        }
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AtomicFile.posixFailure("open", lockPath).prefsError }
        defer { close(descriptor) }
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw AtomicFile.posixFailure("flock", lockPath).prefsError }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

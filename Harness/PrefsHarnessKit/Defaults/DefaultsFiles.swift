import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files `defaults export` writes and `defaults import` reads, named on the command line.
///
/// What is at the path is the user's: a regular file (or none) is replaced atomically, but a
/// FIFO, a device, a symbolic link or a socket is written in place, never replaced by a regular
/// file, as macOS does (so `defaults export app /dev/stdout` works, and `/dev/full` reports that
/// it is full). A FIFO nobody reads and a link to nothing are refused rather than waited for or
/// created.
enum DefaultsFiles {
    /// The most `defaults import` reads from a file (a device such as `/dev/zero` never ends).
    static let readLimit = 64 << 20

    /// Writes `data` to `path` as described above.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` naming the path and the reason; nothing is replaced.
    static func export(_ data: Data, to path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG else {
            return try refusing { try data.write(to: URL(fileURLWithPath: path), options: .atomic) }
        }
        var target = stat()
        guard stat(path, &target) == 0 else {
            throw HarnessError.refused("\(path) is a symbolic link to nothing (\(String(cString: strerror(errno)))); nothing was exported")
        }
        let kind = target.st_mode & S_IFMT
        guard kind != S_IFDIR else { throw HarnessError.refused("\(path) is a directory; nothing was exported") }
        // Non-blocking: a FIFO with no reader is refused (ENXIO) instead of blocking the open.
        let descriptor = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | (kind == S_IFREG ? O_TRUNC : 0))
        guard descriptor >= 0 else {
            let reason = errno == ENXIO ? "no process is reading it" : String(cString: strerror(errno))
            throw HarnessError.refused("cannot write to \(path): \(reason); nothing was exported")
        }
        defer { close(descriptor) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure != 0 {
            throw HarnessError.refused("cannot write to \(path): \(String(cString: strerror(failure)))")
        }
    }

    /// The bytes of the file at `path`, at most ``readLimit`` of them; a FIFO is read until its
    /// writer closes it.
    ///
    /// - Throws: ``HarnessError/refused(_:)`` naming the path and the reason.
    static func read(_ path: String) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw HarnessError.refused("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw HarnessError.refused("cannot read \(path): it is a directory")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glue.read(descriptor, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw HarnessError.refused("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
            guard data.count <= readLimit else {
                throw HarnessError.refused("\(path) holds more than \(readLimit >> 20) MB; nothing was imported")
            }
        }
    }

    /// The C library's `read(2)` (a plain `read` inside ``DefaultsFiles`` names ``read(_:)``).
    private enum Glue {
        static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
            #if canImport(Darwin)
                return Darwin.read(descriptor, buffer, count)
            #elseif canImport(Glibc)
                return Glibc.read(descriptor, buffer, count)
            #else
                return Musl.read(descriptor, buffer, count)
            #endif
        }
    }
}

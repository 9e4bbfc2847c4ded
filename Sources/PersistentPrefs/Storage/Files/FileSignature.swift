import Foundation

/// One version of a file: device, inode, size and modification time (to the nanosecond): a rename or rewrite changes it.
struct FileSignature: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let seconds: Int64
    let nanoseconds: Int64

    /// The signature of the file at `path`, or `nil` when there is none (symbolic links followed).
    static func of(_ path: String) -> FileSignature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileSignature(info)
    }

    static func of(descriptor: Int32) -> FileSignature? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileSignature(info)
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
            seconds = Int64(info.st_mtimespec.tv_sec)
            nanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
            seconds = Int64(info.st_mtim.tv_sec)
            nanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
    }

    /// The signature as 5 integers, to keep in a lock file.
    var fields: [Int64] {
        [Int64(bitPattern: device), Int64(bitPattern: inode), size, seconds, nanoseconds]
    }

    init?(fields: [Int64]) {
        guard fields.count == 5 else { return nil }
        device = UInt64(bitPattern: fields[0])
        inode = UInt64(bitPattern: fields[1])
        size = fields[2]
        seconds = fields[3]
        nanoseconds = fields[4]
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Atomic, durable file replacement: write a temporary file beside the target, `fsync` it, `rename` it over the target,
/// `fsync` the directory (`F_FULLFSYNC` on Apple platforms). A crash leaves the old file or the new one, never a mix,
/// and a write that returned survives a crash.
enum AtomicFile {
    /// Why a file operation failed: the path and a sentence.
    struct Failure: Error {
        let path: String
        let reason: String

        var prefsError: PersistentPrefs.PrefsError { .ioError(path: path, reason: reason) }
    }

    /// Replaces `url` with `data` (file mode 0600), creating its directory (mode 0700) if needed; returns the new file's
    /// signature, or `nil` when `stillCurrent`, called once the new contents are durable, returns `false` (the old file
    /// stays). A symbolic link at `url` is written through unless ``SharedFolders`` refuses it, as it refuses anything
    /// not a regular file. Callers hold the file's exclusive lock (the sweep of stale temporaries relies on it).
    @discardableResult
    static func write(_ data: Data, to url: URL, if stillCurrent: () -> Bool = { true }) throws(Failure) -> FileSignature? {
        try write(data, atPath: url.path, if: stillCurrent)
    }

    /// ``write(_:to:if:)`` for the file at `path` (a URL's path is worked out afresh on each use).
    @discardableResult
    static func write(_ data: Data, atPath path: String, if stillCurrent: () -> Bool = { true }) throws(Failure) -> FileSignature? {
        try createFolder(ofPath: path)
        let target = try SharedFolders.writableTarget(path)
        if target != path { try createFolder(ofPath: target) }  // a link's target may be elsewhere
        removeStaleTemporaries(of: target)
        let (directory, name) = FolderPath.split(target)
        // A random id without `UUID` (which opens /dev/urandom), never with a dot (see removeStaleTemporaries).
        let unique = String(UInt64.random(in: .min ... .max), radix: 16)
        let temporary = (directory == "/" ? "" : directory) + "/.\(name).\(unique).tmp"
        do {
            let signature = try writeDurably(data, to: temporary)
            guard stillCurrent() else {
                unlink(temporary)
                return nil
            }
            try check(rename(temporary, target), "rename", target)
            try syncDirectory(directory)
            return signature
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// The file a symbolic link at `path` points to (followed to the end), or `path` itself.
    static func resolvingLink(_ path: String) -> String {
        guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { return path }
        let resolved = destination.hasPrefix("/") ? destination : FolderPath.split(path).folder + "/" + destination
        return (resolved as NSString).resolvingSymlinksInPath
    }

    /// The files whose stale temporaries were already looked for in this process.
    private static let swept = Locked<Set<String>>([])

    /// Removes `.<name>.<id>.tmp` files beside `path` left by writers that were killed; once per file and
    /// process (the caller holds the file's exclusive lock, so no live writer has one). `<id>` never has a
    /// dot, so another file's temporary (`.prefs.old.<id>.tmp` beside `prefs`) is never taken for one.
    private static func removeStaleTemporaries(of path: String) {
        guard swept.withLock({ $0.insert(path).inserted }) else { return }
        let (directory, name) = FolderPath.split(path)
        let prefix = Array(".\(name).".utf8)
        let suffix = Array(".tmp".utf8)
        // `readdir`, not `FileManager`: this runs in a program's first write, where `FileManager`'s listing makes
        // the Swift runtime scan its conformance records (Benchmarks/README, one-time work).
        guard let stream = opendir(directory) else { return }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            // Compared as bytes: `String` equality takes canonically equivalent names as equal. Read in place, up to
            // the NUL: the record may be shorter than `d_name`'s declared size.
            let bytes = withUnsafePointer(to: &entry.pointee.d_name) { name in
                name.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: name.pointee)) {
                    Array(UnsafeRawBufferPointer(start: $0, count: strlen($0)))
                }
            }
            guard bytes.count > prefix.count + suffix.count, bytes.starts(with: prefix), bytes.suffix(suffix.count).elementsEqual(suffix),
                !bytes[prefix.count..<(bytes.count - suffix.count)].contains(UInt8(ascii: "."))
            else { continue }
            unlink((Array(directory.utf8) + [UInt8(ascii: "/")] + bytes + [0]).map { CChar(bitPattern: $0) })
        }
    }

    /// The bytes of a file and the signature of the version they were read from.
    struct Contents {
        let data: Data
        let signature: FileSignature
    }

    /// The bytes of the regular file at `path` and the signature of the version read, or `nil` without a file. A FIFO
    /// or device is refused, never blocks; a file rewritten while read is read again; links are followed if `following`;
    /// a file over `limit` bytes is refused, naming its size.
    static func readRegular(_ path: String, following: Bool = true, limit: Int) throws(Failure) -> Contents? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (following ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            if errno == ELOOP, !following { throw Failure(path: path, reason: "it is a symbolic link; it was left as it is") }
            throw posixFailure("open", path)
        }
        defer { close(descriptor) }
        for _ in 0..<100 {
            var info = stat()
            try check(fstat(descriptor, &info), "fstat", path)
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw Failure(path: path, reason: "it is \(SharedFolders.describe(info.st_mode & S_IFMT)), not a regular file; it was left as it is")
            }
            guard info.st_size <= limit else {
                throw Failure(path: path, reason: "the file is \(info.st_size >> 20) MB, over the limit of \(limit >> 20) MB")
            }
            // One byte more than the size: a read stopping short at `fstat`'s size saw the end (the signature catches changes).
            var data = Data(count: Int(info.st_size) + 1)
            var total = 0
            var failure: Int32 = 0
            while failure == 0 {
                if total == data.count { data.count += 4096 }  // it grew: read on to its end
                let asked = data.count - total
                let count = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + total, asked, off_t(total)) }
                if count < 0 {
                    if errno != EINTR { failure = errno }
                } else if count == 0 {
                    break
                } else {
                    total += count
                    if total > limit { failure = EFBIG }
                    if count < asked, total == Int(info.st_size) { break }
                }
            }
            if failure != 0 {
                errno = failure
                throw posixFailure("read", path)
            }
            data.count = total
            let before = FileSignature(info)
            if FileSignature.of(descriptor: descriptor) == before { return Contents(data: data, signature: before) }
        }
        throw Failure(path: path, reason: "it changed on every one of 100 reads")
    }

    /// Removes `url` durably; `false` when there was no such file. With `throughLink`, a symbolic link at `url`
    /// stands for its target, which is removed instead (refused in a shared folder, see ``SharedFolders``).
    @discardableResult
    static func remove(_ url: URL, throughLink: Bool = false) throws(Failure) -> Bool {
        let path = throughLink ? try SharedFolders.writableTarget(url.path) : url.path
        if unlink(path) != 0 {
            guard errno == ENOENT else { throw posixFailure("unlink", path) }
            return false
        }
        try syncDirectory(FolderPath.split(path).folder)
        return true
    }

    /// ``createDirectory(_:)`` for the folder of `path`: one `lstat` when it is a folder already (not a link).
    static func createFolder(ofPath path: String) throws(Failure) {
        let folder = FolderPath.split(path).folder
        if SharedFolders.kind(folder) == S_IFDIR { return }
        try createDirectory(URL(fileURLWithPath: folder, isDirectory: true))
    }

    /// Creates `directory` (and parents, mode 0700) unless it exists; refuses a link planted in a shared folder.
    static func createDirectory(_ directory: URL) throws(Failure) {
        try SharedFolders.checkFolder(directory)
        // `stat` follows links, as `FileManager.fileExists(atPath:isDirectory:)` does.
        var info = stat()
        if stat(directory.path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw Failure(path: directory.path, reason: "it exists and is not a directory") }
            return
        }
        // The first folder that exists, so every folder created below it is synced into its parent.
        var existing = directory.deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: existing.path), existing.path != "/" {
            existing = existing.deletingLastPathComponent()
        }
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(path: directory.path, reason: (error as NSError).localizedDescription)
        }
        var created = directory
        while created.path.count > existing.path.count {
            try syncDirectory(created.deletingLastPathComponent().path)
            created = created.deletingLastPathComponent()
        }
    }

    /// Flushes a directory's entries (a rename or unlink in it) to disk.
    static func syncDirectory(_ path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw posixFailure("open", path) }
        defer { close(descriptor) }
        try check(flushToStorage(descriptor), "fsync", path)
    }

    private static func writeDurably(_ data: Data, to path: String) throws(Failure) -> FileSignature? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw posixFailure("open", path) }
        defer { close(descriptor) }
        var failure: Failure?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = posixFailure("write", path)
                    return
                }
                offset += written
            }
        }
        if let failure { throw failure }
        try check(flushToStorage(descriptor), "fsync", path)
        return FileSignature.of(descriptor: descriptor)
    }

    /// Makes what was written through `descriptor` survive a power loss: `fsync`, or on Apple platforms `F_FULLFSYNC`
    /// (their `fsync` leaves the drive's cache full), `fsync` only on a volume that does not take it; any other failure
    /// is reported, never covered by an `fsync`.
    private static func flushToStorage(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return 0 }
            guard [ENOTSUP, EOPNOTSUPP, EINVAL, ENOTTY].contains(errno) else { return -1 }
        #endif
        return fsync(descriptor)
    }

    /// The C library's `write(2)` (a plain `write` here would name ``write(_:to:)``).
    private static func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
            return Darwin.write(descriptor, bytes, count)
        #elseif canImport(Glibc)
            return Glibc.write(descriptor, bytes, count)
        #else
            return Musl.write(descriptor, bytes, count)
        #endif
    }

    private static func check(_ result: Int32, _ call: String, _ path: String) throws(Failure) {
        if result != 0 { throw posixFailure(call, path) }
    }

    static func posixFailure(_ call: String, _ path: String) -> Failure {
        Failure(path: path, reason: "\(call) failed: \(String(cString: strerror(errno)))")
    }
}

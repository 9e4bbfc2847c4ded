import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The library's watcher lent to the package's other targets (the sync product watches its folders).
package enum FolderWatching {
    /// Calls `onChange` whenever a file in `folder` may have been created, replaced, rewritten or removed, or the
    /// folder itself created or removed (it need not exist yet), until the returned closure is called. Where the
    /// operating system cannot watch, the folder is looked at twice a second instead (see ``problem(for:)``).
    package static func watch(_ folder: URL, _ onChange: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        ChangeWatcher.shared.watching(wholeFolder(folder), onChange)
    }

    /// Why changes in a watched `folder` are found by looking at it, not reported, or `nil`.
    package static func problem(for folder: URL) -> String? {
        ChangeWatcher.shared.degradation(for: wholeFolder(folder))
    }

    /// The name of the file system holding `path` when it reports only this machine's changes of its files (a network
    /// file system, FUSE): a watch there is accepted and silent about other machines. `nil` for a local file system,
    /// or when it cannot be told.
    package static func remoteFileSystem(at path: String) -> String? {
        #if canImport(Darwin)
            var info = statfs()
            guard statfs(path, &info) == 0 else { return nil }
            let name = withUnsafeBytes(of: info.f_fstypename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return ["nfs", "smbfs", "afpfs", "webdav", "cifs", "macfuse", "osxfuse", "fuse"].contains { name.hasPrefix($0) } ? name : nil
        #else
            guard let table = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/mountinfo")).readToEnd() else { return nil }
            let type = fileSystemType(of: URL(fileURLWithPath: path).resolvingSymlinksInPath().path, in: String(decoding: table, as: UTF8.self))
            return type.flatMap { isRemote(type: $0) ? $0 : nil }
        #endif
    }

    #if !canImport(Darwin)
        /// Whether a file system of `type` (as `mountinfo` names it) may change without this machine's kernel seeing it:
        /// network file systems, FUSE, and the shared folders of virtual machines and WSL.
        package static func isRemote(type: String) -> Bool {
            let remote = [
                "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs", "glusterfs", "lustre", "davfs", "fuseblk", "virtiofs", "vboxsf",
                "drvfs",
            ]
            return remote.contains(type) || type.hasPrefix("fuse")
        }

        /// The type of the file system holding the absolute, resolved `path` in `table` (a `/proc/<pid>/mountinfo`):
        /// the one mounted on the longest mount point above it.
        package static func fileSystemType(of path: String, in table: String) -> String? {
            var best: (point: String, type: String)?
            for line in table.split(separator: "\n") {
                let halves = line.components(separatedBy: " - ")
                let fields = halves[0].split(separator: " ")
                guard halves.count == 2, fields.count >= 5, let type = halves[1].split(separator: " ").first else { continue }
                let point = unescaped(String(fields[4]))
                let holds = point == "/" || path == point || path.hasPrefix(point + "/")
                if holds, point.count >= (best?.point.count ?? -1) { best = (point, String(type)) }
            }
            return best?.type
        }

        /// A mount point as `mountinfo` writes it, with `\ooo` octal escapes (a space is `\040`).
        private static func unescaped(_ field: String) -> String {
            var bytes: [UInt8] = []
            var rest = Substring(field).utf8[...]
            while let byte = rest.first {
                let digits = rest.dropFirst().prefix(3)
                if byte == UInt8(ascii: "\\"), digits.count == 3, let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 8) {
                    bytes.append(value)
                    rest = rest.dropFirst(4)
                } else {
                    bytes.append(byte)
                    rest = rest.dropFirst()
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    #endif

    /// `folder` as the watcher takes a whole folder: its path with a trailing `/`.
    private static func wholeFolder(_ folder: URL) -> URL {
        let path = folder.standardizedFileURL.path
        return URL(fileURLWithPath: path.hasSuffix("/") ? path : path + "/")
    }
}

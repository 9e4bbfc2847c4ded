import Foundation

/// Which files the library may write where other users can plant links. A folder is *shared* when someone other than
/// this user can add or replace entries in it (group- or world-writable, or another user's): the library never follows
/// a link it finds there, it refuses to write instead. In a private folder a link can only be the user's own, and writes
/// go through it. Whatever the folder, only regular files are written: anything else is refused, never replaced.
enum SharedFolders {
    /// Whether users other than this one can add or replace entries in `directory` (`false` when it does not exist).
    static func isShared(_ directory: String) -> Bool {
        var info = stat()
        guard stat(directory, &info) == 0 else { return false }
        return info.st_mode & (S_IWGRP | S_IWOTH) != 0 || info.st_uid != geteuid()
    }

    /// The file type of `path` itself (a link is not followed), or `nil` when there is none.
    static func kind(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }

    /// A few words for a file type, for messages.
    static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        case S_IFDIR: return "a directory"
        default: return "not a regular file"
        }
    }

    /// The file a write of `path` replaces: `path` when it is a regular file or absent, the link's end for a link in a
    /// private folder; throws ``AtomicFile/Failure`` for a link in a shared folder, or anything else not a regular file.
    static func writableTarget(_ path: String) throws(AtomicFile.Failure) -> String {
        guard let kind = kind(path) else { return path }
        if kind == S_IFREG { return path }
        guard kind == S_IFLNK else {
            throw AtomicFile.Failure(path: path, reason: "it is \(describe(kind)), not a regular file; nothing was written")
        }
        let folder = FolderPath.split(path).folder
        if isShared(folder) {
            throw AtomicFile.Failure(
                path: path,
                reason: "it is a symbolic link in \(folder), a folder other users can write; the library does not write through links there, so nothing was written (remove the link, or keep the file in a private folder)")
        }
        let target = AtomicFile.resolvingLink(path)
        if let targetKind = Self.kind(target), targetKind != S_IFREG {
            throw AtomicFile.Failure(
                path: path, reason: "it is a symbolic link to \(target), which is \(describe(targetKind)); nothing was written")
        }
        return target
    }

    /// Refuses a folder to create files in that is a symbolic link planted in a shared folder.
    static func checkFolder(_ directory: URL) throws(AtomicFile.Failure) {
        guard kind(directory.path) == S_IFLNK else { return }
        let parent = directory.deletingLastPathComponent().path
        if isShared(parent) {
            throw AtomicFile.Failure(
                path: directory.path,
                reason: "the folder is a symbolic link in \(parent), a folder other users can write; the library does not create files through links there")
        }
    }
}

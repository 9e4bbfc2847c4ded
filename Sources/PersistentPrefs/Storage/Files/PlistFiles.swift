import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The library's property-list files as the package's other targets use them (the sync product's device files): read
/// without following a link, parsed by the library's own readers, written atomically and durably.
package enum PlistFiles {
    /// What reading one file found.
    package enum Reading {
        /// There is no file at the path.
        case absent
        /// The file's dictionary, its values in the library's kept shapes (numbers as `NSNumber`).
        case dictionary([String: Any])
        /// The file was read and holds no property-list dictionary: a sentence saying why.
        case damaged(String)
        /// The file was not read: a sentence saying why (a link, not a regular file, another user's, too large, an
        /// error of the file system, which may pass).
        case refused(String)
    }

    /// Reads the dictionary in the regular file at `path`, this user's own, never following a symbolic link.
    package static func read(atPath path: String) -> Reading {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .absent : .refused("it cannot be read: \(String(cString: strerror(errno)))")
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG else { return .refused("it is \(SharedFolders.describe(kind)), not a regular file") }
        guard info.st_uid == geteuid() else { return .refused("it belongs to user \(info.st_uid), not to this user") }
        let contents: AtomicFile.Contents?
        do {
            contents = try AtomicFile.readRegular(path, following: false, limit: PlistFile.maximumReadSize)
        } catch {
            return .refused(error.reason)
        }
        guard let contents else { return .absent }
        switch PlistFile.parse(contents.data) {
        case .failure(let failure):
            return .damaged(failure.reason)
        case .success(let dictionary):
            guard case .success(let values) = PlistValue.normalizedSet(dictionary, for: .loading) else {
                return .damaged("it holds values a property list cannot")
            }
            return .dictionary(values)
        }
    }

    /// Replaces the file at `path` with `dictionary` as a property list every reader reads alike (XML where it can
    /// be), atomically and durably; a symbolic link at `path` is refused, never written through. The caller keeps
    /// every other writer of the file out meanwhile (stale temporaries beside it are removed).
    ///
    /// - Throws: ``PersistentPrefs/PrefsError/ioError(path:reason:)`` naming the path and why.
    package static func write(_ dictionary: [String: Any], atPath path: String) throws(PersistentPrefs.PrefsError) {
        if let kind = SharedFolders.kind(path), kind != S_IFREG {
            throw .ioError(path: path, reason: "it is \(SharedFolders.describe(kind)), not a regular file; nothing was written")
        }
        let data: Data
        do {
            data = try PlistWriting.portableData(dictionary)
        } catch {
            throw .ioError(path: path, reason: "the property list could not be encoded: \(error)")
        }
        do {
            try AtomicFile.write(data, atPath: path)
        } catch {
            throw error.prefsError
        }
    }

    /// Removes the file at `path` (a link itself, never its target); `false` when there was none.
    package static func remove(atPath path: String) throws(PersistentPrefs.PrefsError) -> Bool {
        do {
            return try AtomicFile.remove(URL(fileURLWithPath: path))
        } catch {
            throw error.prefsError
        }
    }
}

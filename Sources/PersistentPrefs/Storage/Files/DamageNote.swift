import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A note beside a store file, `<file>.damaged`, saying that a damaged version of the file was
/// moved aside and why.
///
/// Moving a damaged suite aside makes every set in it read as empty; the note makes every
/// reader of the file (every root key, every style, every process) report the damage in its
/// `lastError`, not just the one whose read found it, until the file is written again by the
/// library or the app acknowledges the damage (``PersistentPrefs/acknowledgeDamage()``).
///
/// The note describes a file that is gone: it holds only while nothing is at the file's path.
/// A file put there since (a backup restored by hand, a plain `UserDefaults` save) is read as
/// any file is, and believed when it reads; a damaged one is found damaged by that read. A note
/// that no longer holds is removed by the library's next write of the file, as every write
/// removes it, so the notes of every release are read alike.
enum DamageNote {
    /// The note of a store file.
    static func url(for file: URL) -> URL {
        URL(fileURLWithPath: path(for: file), isDirectory: false)  // no look at the disk
    }

    /// The path of the note of a store file (every write looks for it twice: no URL made).
    static func path(for file: URL) -> String {
        path(forFileAt: file.path)
    }

    /// The path of the note of the store file at `path`.
    static func path(forFileAt path: String) -> String {
        path + ".damaged"
    }

    /// Writes the note of `file`, which was moved aside: the sentence that says why and where to.
    static func write(for file: URL, reason: String) {
        _ = try? AtomicFile.write(Data(reason.utf8), to: url(for: file))
    }

    /// The error every reader of `file` reports while its note is there, or `nil`.
    static func notice(for file: URL) -> PersistentPrefs.PrefsError? {
        notice(forFileAt: file.path)
    }

    /// ``notice(for:)`` for the store file at `filePath`.
    static func notice(forFileAt filePath: String) -> PersistentPrefs.PrefsError? {
        let path = path(forFileAt: filePath)
        // Cheap in the usual case, where there is no note. The note is the library's own file:
        // never read through a link, a FIFO or a device.
        guard access(path, F_OK) == 0, SharedFolders.kind(filePath) == nil,
            let note = (try? AtomicFile.readRegular(path, following: false, limit: 1 << 16)) ?? nil
        else { return nil }
        let reason = String(decoding: note.data.prefix(2000), as: UTF8.self)
        return .corruptStore(
            path: filePath,
            reason: "\(reason); the sets it held read as empty until they are written again or the damage is acknowledged")
    }

    /// Whether a note is there, holding or not: the file was found damaged since the library
    /// last wrote it, so what the library remembers of the file's history no longer applies.
    static func exists(forFileAt filePath: String) -> Bool {
        access(path(forFileAt: filePath), F_OK) == 0
    }

    /// Removes the note (the file was written again, or the damage acknowledged); anything else
    /// found there (a FIFO, a device, a folder someone planted) is left alone.
    static func clear(for file: URL) {
        clear(forFileAt: file.path)
    }

    /// ``clear(for:)`` for the store file at `filePath`.
    static func clear(forFileAt filePath: String) {
        let path = path(forFileAt: filePath)
        guard let kind = SharedFolders.kind(path), kind == S_IFREG || kind == S_IFLNK else { return }
        unlink(path)
    }
}

import Foundation

/// A note beside a store file, `<file>.damaged`, saying that a damaged version of the file was moved aside and why, so
/// every reader of the file (every root key, style and process) reports the damage in its `lastError` until the library
/// writes the file again or the app acknowledges it (``PersistentPrefs/acknowledgeDamage()``). The note holds only while
/// nothing is at the file's path: a file put there since (a restored backup, a plain save) is read as any file is.
enum DamageNote {
    /// The path of the note of the store file at `path`.
    static func path(forFileAt path: String) -> String {
        path + ".damaged"
    }

    /// Writes the note of `file`, which was moved aside: the sentence that says why and where to.
    static func write(for file: URL, reason: String) {
        let note = URL(fileURLWithPath: path(forFileAt: file.path), isDirectory: false)  // no look at the disk
        _ = try? AtomicFile.write(Data(reason.utf8), to: note)
    }

    /// The error every reader of `file` reports while its note is there, or `nil`.
    static func notice(for file: URL) -> PersistentPrefs.PrefsError? {
        let filePath = file.path
        let path = path(forFileAt: filePath)
        // Cheap when there is no note; never read through a link, a FIFO or a device (it is the library's own file).
        guard access(path, F_OK) == 0, SharedFolders.kind(filePath) == nil,
            let note = (try? AtomicFile.readRegular(path, following: false, limit: 1 << 16)) ?? nil
        else { return nil }
        let reason = String(decoding: note.data.prefix(2000), as: UTF8.self)
        return .corruptStore(
            path: filePath,
            reason: "\(reason); the sets it held read as empty until they are written again or the damage is acknowledged")
    }

    /// Whether a note is there, holding or not: the file was found damaged since the last library write (its history is void).
    static func exists(forFileAt filePath: String) -> Bool {
        access(path(forFileAt: filePath), F_OK) == 0
    }

    /// Removes the note (the file was written again, or the damage acknowledged); anything but a file or link is left alone.
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

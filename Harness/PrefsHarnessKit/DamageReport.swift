import Foundation
import PersistentPrefs

/// How the harness says that a file is damaged, and what resolves it.
///
/// The library moves a file that no property-list reader reads aside (keeping the copy) and
/// reports ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)``, naming the
/// copy, to every reader until a file is in its place again. A read that meets it is refused
/// (exit 1: what it would show is not the user's set); a write says so on stderr and goes on,
/// starting the set afresh as the library does.
///
/// A property list that other readers read but the library cannot keep exactly stays in its
/// place, and the library refuses every write of it: every command that meets it is refused,
/// writes included. Every message names the `acknowledge` command for the file, which ends the
/// report and moves such a file aside on the user's word (the library's
/// ``PersistentPrefs/PersistentPrefs/acknowledgeDamage()``).
enum DamageReport {
    /// The command that acknowledges damage of the files the running command uses
    /// (`prefs-harness --suite MyApp acknowledge`), or `nil` where there is none (a file named
    /// by path, which the library never moves).
    @TaskLocal static var acknowledgement: String?

    /// The command line that acknowledges damage of a file of `store`: `prefs-harness`, the
    /// options that name the store and, when given, the root key, then `acknowledge`, each word
    /// quoted for a shell where it needs to be.
    static func command(store: StoreChoice, root: String?) -> String {
        var words = ["prefs-harness"]
        switch store {
        case .suite(let name): words += ["--suite", name]
        case .directory(let path): words += ["--store-dir", path]
        case .standard: break
        }
        if let root { words += ["--key", root] }
        return (words + ["acknowledge"]).map(Tokenizer.quoted).joined(separator: " ")
    }

    /// The damage `error` reports, or `nil` when it reports something else (or nothing).
    static func notice(in error: PersistentPrefs.PrefsError?) -> PersistentPrefs.PrefsError? {
        guard case .corruptStore? = error else { return nil }
        return error
    }

    /// Whether the file `notice` names is still in its place (a property list the library leaves
    /// as it is, so every write of it is refused), rather than moved aside.
    static func isLeftInPlace(_ notice: PersistentPrefs.PrefsError) -> Bool {
        guard case .corruptStore(let path, _) = notice, !path.isEmpty else { return false }
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The library's sentence for `error`; for damage, followed by what resolves it.
    static func sentence(_ error: PersistentPrefs.PrefsError) -> String {
        guard let notice = notice(in: error) else { return error.description }
        if isLeftInPlace(notice) {
            let way = acknowledgement.map { ": '\($0)' moves it aside, byte for byte, and the set starts afresh; or mend the file by hand." }
            return notice.description + " Nothing can be written to it while it is there" + (way ?? "; move it aside or mend it by hand.")
        }
        let ending = acknowledgement.map { ", and '\($0)' ends this report." } ?? "."
        return notice.description + " A write (set, reset, defaults write) starts it afresh; the copy stays" + ending
    }

    /// The refusal of a command that met `notice`.
    static func refusal(_ notice: PersistentPrefs.PrefsError) -> HarnessError {
        .refused(sentence(notice))
    }

    /// Says on stderr that a write met `notice`, a file moved aside, and starts `what` afresh.
    static func warn(_ notice: PersistentPrefs.PrefsError, starting what: String, console: Console) {
        console.error("prefs-harness: warning: \(notice.description) This write starts \(what) afresh; the copy stays.")
    }
}

import Foundation
import PersistentPrefs

/// How the harness says that a file was damaged: the library moves an unreadable file aside
/// (keeping the copy) and reports ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)``,
/// naming the copy, to every reader until the set is written again. A read that meets it is
/// refused (exit 1: what it would show is not the user's set); a write says it on stderr and goes
/// on, starting the set afresh as the library does.
enum DamageReport {
    /// The damage `error` reports, or `nil` when it reports something else (or nothing).
    static func notice(in error: PersistentPrefs.PrefsError?) -> PersistentPrefs.PrefsError? {
        guard case .corruptStore? = error else { return nil }
        return error
    }

    /// The refusal of a read that met `notice`.
    static func refusal(_ notice: PersistentPrefs.PrefsError) -> HarnessError {
        .refused(notice.description + " A write (set, reset, defaults write) starts it afresh; the copy stays.")
    }

    /// Says on stderr that a write met `notice` and starts `what` afresh.
    static func warn(_ notice: PersistentPrefs.PrefsError, starting what: String, console: Console) {
        console.error("prefs-harness: warning: \(notice.description) This write starts \(what) afresh.")
    }
}

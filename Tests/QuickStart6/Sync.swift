import Foundation
import PersistentPrefs
import PersistentPrefsSync

// The editor's settings follow the user through a folder Syncthing replicates; the window's
// frame stays this machine's.
final class SyncedEditorPrefs: PersistentPrefs {
    @Pref("Font Size") var fontSize = 12
    @Pref("Window Frame") var windowFrame = ""
}

// The folder names a set by its suite and root key: a suite named alike on every machine.
func startSyncing(_ prefs: SyncedEditorPrefs) throws -> PrefsSync {
    let sync = try PrefsSync(folder: URL(fileURLWithPath: NSHomeDirectory() + "/Sync/prefs"))
    try sync.start(prefs, suite: "com.example.editor", localKeys: ["Window Frame"])  // live until sync.stop()
    return sync
}

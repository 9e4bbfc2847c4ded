import Foundation
import PersistentPrefs
import PersistentPrefsSync

// The editor's settings follow the user through a folder Syncthing replicates; the window's
// frame stays this machine's.
final class SyncedEditorPrefs: PersistentPrefs {
    @Pref("Font Size") var fontSize = 12
    @Pref("Window Frame") var windowFrame = ""
}

func startSyncing(_ prefs: SyncedEditorPrefs) throws -> PrefsSync {
    let sync = try PrefsSync(folder: URL(fileURLWithPath: NSHomeDirectory() + "/Sync/prefs"))
    try sync.start(prefs, localKeys: ["Window Frame"])  // merged now, then live until sync.stop()
    return sync
}

// Given: an editor's set with the keys the examples write, and a file path.
final class EditorPrefs: PersistentPrefs {
    enum Theme: String { case light, dark }
    @Pref("Font Size", in: 6...72) var fontSize = 12
    @Pref("Theme") var theme = Theme.light
    @Pref("Recent Files") var recentFiles: [String] = []
    @Pref("Launch Count") var launchCount = 0
}
let prefs = EditorPrefs()
let path = "/home/ann/notes.txt"


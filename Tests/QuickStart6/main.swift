import PersistentPrefs

enum Theme: String { case system, light, dark }

final class EditorPrefs: PersistentPrefs {
    @Pref("Font Size") var fontSize = 12
    @Pref("Theme") var theme = Theme.system
}

let prefs = EditorPrefs()              // the set under the root key "EditorPrefs"
prefs.fontSize = 14                    // on disk when this line returns
prefs.theme = .dark                    // stored as its raw value, "dark"
prefs.values = ["Colour": "red"]       // refused: "Colour" is not one of the keys
print(prefs.lastError?.description ?? "no error")
print(prefs.fontSize, prefs.theme)     // 14 dark

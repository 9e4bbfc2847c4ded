import PersistentPrefs

enum Theme: String, CaseIterable { case system, light, dark }   // CaseIterable: tools can check it

final class EditorPrefs: PersistentPrefs {
    @Pref("Font Size", in: 6...72) var fontSize = 12
    @Pref("Theme") var theme = Theme.system
}

let prefs = EditorPrefs()              // the set under the root key "EditorPrefs"
prefs.fontSize = 14                    // on disk when this line returns
prefs.theme = .dark                    // stored as its raw value, "dark"
do {
    try prefs.set(\.fontSize, 100)     // refused, nothing written: it throws why
} catch {
    print(error)                       // The value for "Font Size" is not allowed: 100 is outside the range 6...72.
}
prefs.fontSize = 100                   // the same refusal, kept in lastError by the read below
print(prefs.fontSize, prefs.lastError?.description ?? "no error")   // 14 The value for "Font Size" …
prefs.values = ["Colour": "red"]       // refused: "Colour" is not one of the keys
print(prefs.lastError?.description ?? "no error")
print(prefs.fontSize, prefs.theme)     // 14 dark

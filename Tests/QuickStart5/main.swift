import PersistentPrefs

final class EditorPrefs: PersistentPrefs {
    override var keys: [String] { ["Font Size", "Theme"] }

    var fontSize: Int {
        get { value(forKey: "Font Size", as: Int.self) ?? 12 }
        set { self["Font Size"] = newValue }
    }

    var theme: String {
        get { self["Theme"] as? String ?? "system" }
        set { self["Theme"] = newValue }
    }
}

let prefs = EditorPrefs()              // the set under the root key "EditorPrefs"
prefs.fontSize = 14                    // on disk when this line returns
prefs.values = ["Colour": "red"]       // refused: "Colour" is not one of the keys
print(prefs.lastError?.description ?? "no error")
print(prefs.fontSize, prefs.theme)     // 14 system

import PersistentPrefs

// Several changes, one durable write: other processes see all of them or none.
func applyDarkLayout(_ prefs: EditorPrefs) {
    prefs.batch { prefs in
        prefs.theme = .dark
        prefs.fontSize = 16
    }
}

// Read-modify-write under the store's lock: no process loses another's increment.
func growFont(_ prefs: EditorPrefs) throws {
    try prefs.update(\.fontSize) { $0 += 1 }
}

import PersistentPrefs

// Each task makes its own instance: instances of one root key share the set.
func setFontSizeFromManyTasks() async {
    await withTaskGroup(of: Void.self) { group in
        for size in 10..<20 {
            group.addTask { EditorPrefs(key: "Shared").fontSize = size }
        }
    }
}

// Given: the set of the article's first example, and the program's own log function.
let prefs = EditorPrefs()
func log(_ message: String) {}


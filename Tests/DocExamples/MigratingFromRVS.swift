// Given: an RVS-style subclass, moved over, and its instance.
final class AppPrefs: PersistentPrefs {
    override var keys: [String] { ["Integer Value"] }
}
let prefs = AppPrefs()


// Given: a set whose volume has a range, and the program's log function.
final class AudioPrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
}
let prefs = AudioPrefs()
func log(_ message: String) {}


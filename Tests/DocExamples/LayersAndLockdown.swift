// Given: a set with a volume, and the controls of the program's window.
final class AudioPrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
}
let prefs = AudioPrefs()
final class Control {
    var isEnabled = true
    var text = ""
}
let volumeSlider = Control()
let volumeHint = Control()
func showManagedBanner() {}


// Given: a set with a volume, the program's refresh function and its logger.
final class AppPrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
}
let prefs = AppPrefs()
func refresh() {}
struct Log: Sendable {
    func warning(_ message: String) {}
}
let log = Log()


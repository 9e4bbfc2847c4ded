// Given: a set with a volume, the program's model and slider (on the main actor, as user
// interface code is), SwiftUI where there is none (Linux), and the other styles' objects of
// <doc:UserDefaultsKeys>.
final class AppPrefs: PersistentPrefs {
    @Pref("Volume", in: 0...11) var volume = 5
}
let prefs = AppPrefs()
@MainActor final class Model {
    func refresh() {}
}
@MainActor final class Slider {
    var value = 0.0
}
let model = Model()
let slider = Slider()
#if canImport(SwiftUI)
    import SwiftUI
#else
    protocol View {
        associatedtype Body
        var body: Body { get }
    }
    struct Text: View {
        init(_ text: String) {}
        var body: Never { fatalError() }
    }
    extension Never: View {
        var body: Never { fatalError() }
    }
#endif
enum SettingsKey: CodingKey { case age }
let storage = UserDefaultsContainer(keyedBy: SettingsKey.self)
final class Settings {
    @SettingsStorage("planet") var planet = "earth"
}
let settings = Settings()


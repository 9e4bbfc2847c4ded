// The DocC article "Observing changes" quotes the lines between `#if` and `#endif` verbatim
// (ReadmeTests checks it): the macOS job compiles them; Linux has no SwiftUI.
#if canImport(SwiftUI)
import Foundation
import Observation
import PersistentPrefs
import SwiftUI

final class PlayerPrefs: PersistentPrefs {
    override class var coalescingInterval: TimeInterval? { 0.25 }   // a drag: one write per interval
    @Pref("Muted") var muted = false
    @Pref("Balance", in: -1.0...1.0) var balance = 0.0
}

// Reads of a @Pref are tracked already; the conformance lets @Bindable take the class.
@available(macOS 14, iOS 17, *)
extension PlayerPrefs: Observable {}

@available(macOS 14, iOS 17, *)
struct PlayerControls: View {
    @Bindable var prefs: PlayerPrefs

    var body: some View {
        Form {
            Toggle("Muted", isOn: $prefs.muted)        // a tap writes prefs.muted
            Slider(value: $prefs.balance, in: -1...1)   // redrawn when any process changes it
        }
    }
}
#endif

import Foundation
import PersistentPrefs

/// A sample set with the schema features tools read (see ``PersistentPrefs/PrefsSchema``): a
/// range, choices, summaries. Its writes leave `AudioPrefs.schema.json` (or
/// `<suite>.schemas/AudioPrefs….json`) beside the set, which `prefs-harness describe`, `range`,
/// `writable`, `list-keys` and `set` read.
///
/// ```swift
/// let audio = AudioPrefs()
/// audio.volume = 7          // refused (lastError) outside 0...11
/// audio.theme = .dark
/// ```
public final class AudioPrefs: PersistentPrefs {
    /// The colour schemes a player can use.
    public enum Theme: String, CaseIterable, Sendable {
        /// Light.
        case light
        /// Dark.
        case dark
        /// As the system is.
        case system
    }

    /// The output volume, 0 to 11.
    @Pref("Volume", in: 0...11, summary: "Output volume, 0 to 11") public var volume = 5

    /// The colour scheme.
    @Pref("Theme", summary: "Colour scheme of the player") public var theme = Theme.system

    /// Whether sound is off.
    @Pref("Muted", summary: "Whether sound is off") public var muted = false

    /// The output device's name.
    @Pref("Device") public var device = "default"
}

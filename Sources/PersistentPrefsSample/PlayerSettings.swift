import Foundation
import PersistentPrefs

/// The article's `PlayerSettings`: a struct whose defaults come from the bundled
/// `PlayerSettings.plist` (team "Cowboys", gun type 2, power levels 2, 3, 4, 0, 1).
///
/// ```swift
/// var player = PlayerSettings()
/// if player.loadUsingSettingsFile() {
///     player.gunType = 1
///     _ = player.update()
/// }
/// _ = player.reset()              // back to the bundled defaults
/// ```
public struct PlayerSettings: Codable, SettingsManageable, Equatable, Sendable {
    /// The player's team.
    public var team: String?
    /// Whether the player is male.
    public var isMale: Bool?
    /// The kind of gun.
    public var gunType: Int?
    /// Five power levels.
    public var powerLevels: [Int]?

    /// Empty settings; load them with ``loadUsingSettingsFile()``.
    public init() {}

    /// The defaults shipped in this module's resources.
    public static var bundledSettingsURL: URL? {
        Bundle.module.url(forResource: "PlayerSettings", withExtension: "plist")
    }
}

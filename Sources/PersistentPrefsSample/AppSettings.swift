import Foundation
import PersistentPrefs

/// The article's `AppSettings`: a class singleton whose defaults are its property values.
///
/// It keeps its shared instance in a `static let` (Swift 6 forbids a shared `static var`), so
/// it adopts ``SettingsManageableObject``: `load()` and `reset()` copy the loaded settings into
/// the one shared object. Its properties are guarded by a lock, so it is safe to share.
///
/// ```swift
/// _ = AppSettings.shared.load()          // at start-up: creates AppSettings.settings.plist (and .init)
/// AppSettings.shared.fontSize = 21.0
/// AppSettings.shared.playSFX = false
/// if AppSettings.shared.update() {
///     print(AppSettings.shared.toDictionary()?.compactMapValues { $0 } ?? [:])
/// }
/// _ = AppSettings.shared.reset()         // back to the values of the first load
/// ```
public final class AppSettings: Codable, SettingsManageableObject, @unchecked Sendable {  // `values` is only touched under `lock`
    /// The shared instance.
    public static let shared = AppSettings()

    /// The settings as stored: the file's keys are these property names.
    private struct Values: Codable {
        var playSFX = true
        var themeIndex = 1
        var fontName = "AvenirNext-Regular"
        var fontSize: CGFloat = 17.0
    }

    private let lock = NSLock()
    private var values = Values()

    /// Whether sound effects play.
    public var playSFX: Bool {
        get { self[\.playSFX] }
        set { self[\.playSFX] = newValue }
    }

    /// The index of the colour theme.
    public var themeIndex: Int {
        get { self[\.themeIndex] }
        set { self[\.themeIndex] = newValue }
    }

    /// The font's name.
    public var fontName: String {
        get { self[\.fontName] }
        set { self[\.fontName] = newValue }
    }

    /// The font's size.
    public var fontSize: CGFloat {
        get { self[\.fontSize] }
        set { self[\.fontSize] = newValue }
    }

    private init() {}

    /// Decodes settings from a file.
    public init(from decoder: any Decoder) throws {
        values = try Values(from: decoder)
    }

    /// Encodes the settings, one key per property.
    public func encode(to encoder: any Encoder) throws {
        try locked { $0 }.encode(to: encoder)
    }

    /// Copies `loaded`'s settings into this object.
    public func adopt(_ loaded: AppSettings) {
        let newValues = loaded.locked { $0 }
        locked { $0 = newValues }
    }

    /// One setting, read or written under the lock.
    private subscript<Setting>(setting: WritableKeyPath<Values, Setting>) -> Setting {
        get { locked { $0[keyPath: setting] } }
        set { locked { $0[keyPath: setting] = newValue } }
    }

    private func locked<Result>(_ body: (inout Values) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&values)
    }
}

import Foundation

/// The choices the library makes differently on Apple platforms and on Linux, in one place, following the platform
/// built for. Each is plain Foundation, so all run on Linux too: a debug build there takes Apple's when the
/// environment holds `PREFS_PLATFORM_CHOICES=apple` (`.ci/run` runs the whole suite so; release builds ignore it),
/// and a test can use `PlatformChoices.$current.withValue(…)`. What only Apple's Foundation has (KVO,
/// `CFPreferences`, `F_FULLFSYNC`) stays behind `#if canImport(…)`.
package struct PlatformChoices: Sendable, Equatable {
    /// Suites go through `UserDefaults`, whose daemon owns their files (Apple platforms), rather than being files the
    /// library reads and replaces itself under its lock, with layer files beside them (Linux).
    package var suitesGoThroughUserDefaults: Bool
    /// Foundation shows the library the suite name of a `UserDefaults` object made elsewhere
    /// (swift-corelibs-foundation does; Apple's Foundation does not).
    package var seesSuiteNames: Bool
    /// The Codable style's settings files are kept in Application Support (Apple platforms), not the config folder.
    package var settingsInApplicationSupport: Bool

    /// Apple platforms' choices.
    package static let apple = PlatformChoices(suitesGoThroughUserDefaults: true, seesSuiteNames: false, settingsInApplicationSupport: true)
    /// Linux's choices.
    package static let linux = PlatformChoices(suitesGoThroughUserDefaults: false, seesSuiteNames: true, settingsInApplicationSupport: false)

    /// The choices in effect (see the type's description).
    @TaskLocal package static var current: PlatformChoices = initial

    /// The platform's own choices, or in a debug build on Linux Apple's when asked for.
    private static let initial: PlatformChoices = {
        #if canImport(Darwin)
            return .apple
        #else
            #if DEBUG
                if ProcessEnvironment.value("PREFS_PLATFORM_CHOICES") == "apple" { return .apple }
            #endif
            return .linux
        #endif
    }()
}

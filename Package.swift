// swift-tools-version: 6.0
//
// PersistentPrefs: small, typed, trustworthy persistent preference sets.
// No package dependencies: the library builds on Foundation only.

import PackageDescription

let package = Package(
    name: "PersistentPrefs",
    platforms: [
        // NSLock (not Synchronization.Mutex) keeps these floors reachable.
        .macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8),
    ],
    products: [
        .library(name: "PersistentPrefs", targets: ["PersistentPrefs"]),
        .library(name: "PersistentPrefsSync", targets: ["PersistentPrefsSync"]),
        .library(name: "PersistentPrefsSample", targets: ["PersistentPrefsSample"]),
        .executable(name: "prefs-harness", targets: ["prefs-harness"]),
        .executable(name: "prefs-bench", targets: ["prefs-bench"]),
    ],
    targets: [
        .target(name: "PersistentPrefs"),
        // Sync across machines through a folder an engine replicates (ARCHITECTURE.md, Sync across machines).
        .target(name: "PersistentPrefsSync", dependencies: ["PersistentPrefs"]),
        .target(
            name: "PersistentPrefsSample",
            dependencies: ["PersistentPrefs"],
            resources: [.copy("Resources/PlayerSettings.plist")]
        ),
        // The terminal harness: a tiny `main` over a testable library.
        .target(
            name: "PrefsHarnessKit",
            dependencies: ["PersistentPrefs", "PersistentPrefsSample", "PersistentPrefsSync"],
            path: "Harness/PrefsHarnessKit"
        ),
        .executableTarget(
            name: "prefs-harness",
            dependencies: ["PrefsHarnessKit"],
            path: "Harness/prefs-harness"
        ),
        .executableTarget(
            name: "prefs-bench",
            dependencies: ["PersistentPrefs", "PersistentPrefsSample"],
            path: "Benchmarks/prefs-bench"
        ),
        // A helper process for the cross-process tests (durability after SIGKILL,
        // fresh-process reads). Not a product; `swift test` builds it with every target.
        .executableTarget(
            name: "prefs-test-helper",
            dependencies: ["PersistentPrefs", "PersistentPrefsSample"],
            path: "Tests/PrefsTestHelper"
        ),
        // Coverage-guided fuzz targets for every reader of outside bytes (Fuzz/README.md):
        // built only with `Fuzz/run`, which adds libFuzzer and AddressSanitizer.
        .executableTarget(
            name: "prefs-fuzz",
            dependencies: ["PersistentPrefs", "PrefsHarnessKit", "PersistentPrefsSync"],
            path: "Fuzz/prefs-fuzz"
        ),
        // The README quick start, compiled as written in both language modes.
        // Built, never run: a test checks that README.md quotes main.swift verbatim.
        .executableTarget(
            name: "quickstart-swift5",
            dependencies: ["PersistentPrefs"],
            path: "Tests/QuickStart5",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "quickstart-swift6",
            dependencies: ["PersistentPrefs", "PersistentPrefsSync"],
            path: "Tests/QuickStart6"
        ),
        // RVS_PersistentPrefs subclasses as RVS documents them, in Swift 5 mode.
        .testTarget(
            name: "RVSCompatibilityTests",
            dependencies: ["PersistentPrefs"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "PersistentPrefsTests",
            dependencies: [
                "PersistentPrefs", "PersistentPrefsSample", "PrefsHarnessKit", "PersistentPrefsSync",
            ],
            exclude: ["Fixtures"]  // read from the source tree by the tests that use them
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}

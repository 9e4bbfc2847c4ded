import Foundation
import Testing

/// The README's quick start is the file the package builds in both language modes.
@Suite("README")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("README.md quotes Tests/QuickStart6/main.swift, Tasks.swift, Transactions.swift, Coalescing.swift, Migrations.swift and Sync.swift verbatim")
    func quickStartIsBuilt() throws {
        let readme = try Self.read("README.md")
        let swift6 = try Self.read("Tests/QuickStart6/main.swift")
        #expect(readme.contains("```swift\n" + swift6 + "```"))
        let tasks6 = try Self.read("Tests/QuickStart6/Tasks.swift")
        #expect(readme.contains("```swift\n" + tasks6 + "```"))
        let transactions6 = try Self.read("Tests/QuickStart6/Transactions.swift")
        #expect(readme.contains("```swift\n" + transactions6 + "```"))
        let coalescing6 = try Self.read("Tests/QuickStart6/Coalescing.swift")
        #expect(readme.contains("```swift\n" + coalescing6 + "```"))
        let migrations6 = try Self.read("Tests/QuickStart6/Migrations.swift")
        #expect(readme.contains("```swift\n" + migrations6 + "```"))
        let sync6 = try Self.read("Tests/QuickStart6/Sync.swift")
        #expect(readme.contains("```swift\n" + sync6 + "```"))
    }

    @Test("the SwiftUI binding the observing article shows is Tests/QuickStart6/SwiftUIBinding.swift, which the macOS job compiles")
    func swiftUIBindingIsBuilt() throws {
        let file = try Self.read("Tests/QuickStart6/SwiftUIBinding.swift")
        let start = try #require(file.range(of: "#if canImport(SwiftUI)\n"))
        let end = try #require(file.range(of: "#endif", range: start.upperBound..<file.endIndex))
        let snippet = String(file[start.upperBound..<end.lowerBound])
        #expect(snippet.contains("@Bindable var prefs: PlayerPrefs") && snippet.contains("$prefs.muted"))
        let article = try Self.read("Sources/PersistentPrefs/PersistentPrefs.docc/ObservingChanges.md")
        #expect(article.contains("```swift\n" + snippet + "```"))
    }

    @Test("every Swift example of README.md is a file the build compiles, or the package manifest")
    func everyExampleIsBuilt() throws {
        let readme = try Self.read("README.md")
        let built = try ["main.swift", "Tasks.swift", "Transactions.swift", "Coalescing.swift", "Migrations.swift", "Sync.swift"].map {
            try Self.read("Tests/QuickStart6/\($0)")
        }
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
        #expect(blocks.count == built.count + 1)
        for block in blocks where !built.contains(block) {
            #expect(block.hasPrefix("// swift-tools-version:"), "an example the build does not compile: \(block.prefix(200))")
        }
    }

    @Test("README.md gives the two commands a newcomer runs")
    func commands() throws {
        let readme = try Self.read("README.md")
        #expect(readme.contains("swift run prefs-harness"))
        #expect(readme.contains("swift test"))
        let ci = try Self.read(".ci/run")
        #expect(ci.contains("swift test"))
    }
}

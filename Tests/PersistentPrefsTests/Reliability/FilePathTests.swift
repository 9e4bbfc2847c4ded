import Foundation
import Testing

@testable import PersistentPrefs

/// The schema file of a suite is where Foundation's path functions put it.
@Suite("File URL paths as Foundation gives them")
struct FilePathTests {
    @Test("a suite's schema file is where Foundation's path functions put it")
    func schemaFiles() {
        for directory in ["/tmp/config", "/a b/é", "/"] {
            for suite in ["com.example.app", "a b", "é", "x.plist", "100%", ".hidden"] {
                let file = URL(fileURLWithPath: directory, isDirectory: true).appendingPathComponent(suite + ".plist")
                let expected = file.deletingLastPathComponent()
                    .appendingPathComponent(file.deletingPathExtension().lastPathComponent + ".schemas", isDirectory: true)
                    .appendingPathComponent(PlistFileStore.fileStem(forRoot: "Root") + ".json")
                #expect(SuitePaths.schemaFile(besides: file, root: "Root") == expected, "\(directory) \(suite)")
            }
        }
    }
}

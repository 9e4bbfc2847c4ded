import Foundation
import Testing

@testable import PersistentPrefs

/// The library reads its file URLs' paths without Foundation's percent-decoding where that
/// changes nothing (see `Sources/PersistentPrefs/Internal/FilePaths.swift`); each reader must
/// return exactly what Foundation's counterpart returns, for every URL.
@Suite("File URL paths as Foundation gives them")
struct FilePathTests {
    static let paths = [
        "/", "//", "/tmp", "/tmp/", "/tmp//", "/tmp/a.plist", "/a b/c d.plist", "/a%20b/c", "/100%", "/x%2Fy",
        "/é/日本/🎉.plist", "/a/./b", "/a/../b", "/a//b", "/a/b/.", "/a/b/..", "/.hidden/.x", "/tmp/a#b?c;d",
        "/private/tmp/x", "/private/var/automount/x", "/var/automount/y", "rel/x", "x", "", ".", "..", "./a",
    ]
    static let names = ["x.plist", "a b", "é.json", "100%", "%41", "sub/x", ".hidden", "x.schemas", "a?b#c"]

    static func check(_ url: URL, _ comment: Comment) {
        #expect(url.filePath == url.path, comment)
        #expect(url.fileName == url.lastPathComponent, comment)
        #expect(url.standardizedFile == url.standardizedFileURL, comment)
        #expect(url.standardizedFile.path == url.standardizedFileURL.path, comment)
        #expect(url.deletingFileName() == url.deletingLastPathComponent(), comment)
        #expect(url.deletingFileName().path == url.deletingLastPathComponent().path, comment)
        #expect(url.folderPath == url.deletingLastPathComponent().path, comment)
        for name in names {
            for isDirectory in [false, true] {
                let ours = url.appendingFileName(name, isDirectory: isDirectory)
                let foundation = url.appendingPathComponent(name, isDirectory: isDirectory)
                #expect(ours == foundation, "\(comment) + \(name) \(isDirectory)")
                #expect(ours.path == foundation.path, "\(comment) + \(name) \(isDirectory)")
            }
        }
    }

    @Test("listed paths: path, last component, parent folder, standardized URL and appended names as Foundation's")
    func listed() {
        for path in Self.paths {
            for isDirectory in [false, true] {
                Self.check(URL(fileURLWithPath: path, isDirectory: isDirectory), "\(path) \(isDirectory)")
            }
        }
        Self.check(URL(fileURLWithPath: "a/b", relativeTo: URL(fileURLWithPath: "/base/", isDirectory: true)), "relative to /base/")
    }

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

    @Test("random paths of slashes, dots, escapes, spaces and non-ASCII")
    func random() {
        var random = SeededGenerator(state: 20_261_126)
        let pool = Array("ab/./%20 é日.-_~#?")
        for index in 0..<1_500 {
            let body = String((0..<Int.random(in: 0...14, using: &random)).map { _ in pool.randomElement(using: &random)! })
            let path = (Bool.random(using: &random) ? "/" : "") + body
            Self.check(URL(fileURLWithPath: path, isDirectory: Bool.random(using: &random)), "\(index): \(path)")
        }
    }
}

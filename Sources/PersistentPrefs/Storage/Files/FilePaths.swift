import Foundation

/// The paths of the file URLs the library makes, read without Foundation's first-use costs.
///
/// On Linux, FoundationEssentials percent-decodes a file URL's `path` (and its
/// `lastPathComponent`, `standardizedFileURL`, `appendingPathComponent`) through a
/// `Set<UInt8>` literal: the first one in a process makes the Swift runtime scan every loaded
/// library's conformance records for `UInt8: Hashable` (about 300,000 instructions, the
/// largest single step of a one-shot `prefs-harness defaults write`), and every call decodes
/// again. The URLs the library makes hold absolute paths; one with no `%` in its encoded path
/// reads the same path straight from it. Anything else (a relative URL, a `%` escape) takes
/// Foundation's road, so each of these returns exactly what Foundation's counterpart returns.
extension URL {
    /// The file-system path: what `path` returns.
    var filePath: String {
        guard let encoded = plainEncodedPath else { return path }
        return Self.droppingTrailingSlashes(encoded)
    }

    /// The last component of the path: what `lastPathComponent` returns.
    var fileName: String {
        guard let encoded = plainEncodedPath else { return lastPathComponent }
        let path = Self.droppingTrailingSlashes(encoded)
        guard path != "/", let (_, name) = Self.splitAtLastSlash(path) else { return path }
        return String(name)
    }

    /// This URL with `name` appended: the URL `appendingPathComponent(_:isDirectory:)` makes.
    ///
    /// - Parameters:
    ///   - name: A file or folder name (or several, separated by `/`).
    ///   - isDirectory: Whether the new URL names a folder.
    func appendingFileName(_ name: String, isDirectory: Bool = false) -> URL {
        guard let encoded = plainEncodedPath, !name.isEmpty, !name.hasPrefix("/") else {
            return appendingPathComponent(name, isDirectory: isDirectory)
        }
        return URL(fileURLWithPath: encoded + (encoded.hasSuffix("/") ? "" : "/") + name, isDirectory: isDirectory)
    }

    /// The folder holding this URL's file: the URL `deletingLastPathComponent()` makes.
    func deletingFileName() -> URL {
        guard let folder = plainFolderPath else { return deletingLastPathComponent() }
        return URL(fileURLWithPath: folder, isDirectory: true)
    }

    /// The path of the folder holding this URL's file: `deletingLastPathComponent().path`,
    /// without making that URL.
    var folderPath: String {
        plainFolderPath ?? deletingLastPathComponent().path
    }

    /// The folder's path when the path is plain and ends in a name (not `.` or `..`), or `nil`.
    private var plainFolderPath: String? {
        guard let encoded = plainEncodedPath, !Self.hasDoubleSlash(encoded),
            let (folder, name) = Self.splitAtLastSlash(Self.droppingTrailingSlashes(encoded)),
            !name.isEmpty, name != ".", name != ".."
        else { return nil }
        return folder.isEmpty ? "/" : String(folder)
    }

    /// `standardizedFileURL`: a path with no `.`, `..` or empty component, outside the folders
    /// Foundation strips as automount prefixes (`/private/`, `/var/automount/`), is standard
    /// already, and the URL is returned as it is.
    var standardizedFile: URL {
        guard let encoded = plainEncodedPath, !encoded.hasPrefix("/private/"), !encoded.hasPrefix("/var/automount/") else {
            return standardizedFileURL
        }
        return Self.isStandard(encoded) ? self : standardizedFileURL
    }

    /// The percent-encoded path of an absolute file URL with no `%` escape in it (so decoding
    /// it changes nothing), or `nil`.
    private var plainEncodedPath: String? {
        #if canImport(ObjectiveC)
            return nil  // Apple's Foundation: `path` as it is (and `path(percentEncoded:)` needs macOS 13).
        #else
            guard isFileURL, baseURL == nil else { return nil }
            let encoded = path(percentEncoded: true)
            guard encoded.hasPrefix("/"), !Self.utf8(of: encoded, { $0.contains(UInt8(ascii: "%")) }) else { return nil }
            return encoded
        #endif
    }

    /// Whether the absolute `path` has no empty, `.` or `..` component (one trailing slash, a
    /// folder's, is standard): a byte loop, with no array of components made.
    private static func isStandard(_ path: String) -> Bool {
        var length = 0  // of the component so far
        var dots = 0  // how many of its bytes are dots
        for byte in path.utf8.dropFirst() {  // after the leading slash
            if byte == UInt8(ascii: "/") {
                if length == 0 || (dots == length && length <= 2) { return false }  // "//", "/./", "/../"
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        // Ending in a slash: a folder's one trailing slash (a second was refused above); `/` alone is left to Foundation.
        if length == 0 { return path.utf8.count > 1 }
        return !(dots == length && length <= 2)
    }

    /// Whether `path` has `//` in it (a byte loop: Foundation's `contains` is an `NSString` search).
    private static func hasDoubleSlash(_ path: String) -> Bool {
        utf8(of: path) { bytes in
            var previous: UInt8 = 0
            for byte in bytes {
                if byte == UInt8(ascii: "/"), previous == byte { return true }
                previous = byte
            }
            return false
        }
    }

    /// `body` over the UTF-8 bytes of `string`: in place for a native string (stepping through
    /// `utf8` goes through the string's index machinery for every byte), else over a copy.
    private static func utf8<Result>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = string.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(string.utf8).withUnsafeBufferPointer(body)
    }

    /// What comes before and after the last `/` of `path`, or `nil` when it has none.
    private static func splitAtLastSlash(_ path: String) -> (folder: Substring, name: Substring)? {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return (path[..<slash], path[path.utf8.index(after: slash)...])
    }

    /// `path` without its trailing slashes; `/` for a path of slashes only.
    private static func droppingTrailingSlashes(_ path: String) -> String {
        guard let last = path.utf8.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return "/" }
        return String(path[...last])
    }
}

import Foundation

/// Folder paths resolved the way the kernel resolves them, so that every spelling of one folder
/// (through a symbolic link, with `.` or `..`, with a trailing slash) names the same layers.
enum FolderPath {
    /// `path` with its symbolic links, `.`, `..` and repeated or trailing slashes resolved. The part that does
    /// not exist yet is appended as written to its resolved existing ancestor (a `..` removes the name before it).
    static func resolved(_ path: String) -> String {
        if let real = realpath(path, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        var trimmed = Substring(path)
        while trimmed.utf8.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return path }  // relative: as it is
        let name = trimmed[trimmed.index(after: slash)...]
        let parent = slash == trimmed.startIndex ? "/" : resolved(String(trimmed[..<slash]))
        switch name {
        case "", ".":
            return parent
        case "..":
            guard let last = parent.lastIndex(of: "/"), last != parent.startIndex else { return "/" }
            return String(parent[..<last])
        default:
            return (parent == "/" ? "" : parent) + "/" + name
        }
    }

    /// The folder holding the file at `path` and its name (`/a/b`, `c` for `/a/b/c`; `/`, `c` for `/c`), without a URL.
    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        let name = String(path[path.index(after: slash)...])
        return (slash == path.startIndex ? "/" : String(path[..<slash]), name)
    }
}

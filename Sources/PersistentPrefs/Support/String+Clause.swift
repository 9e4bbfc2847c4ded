import Foundation

extension String {
    /// The text without its closing full stop, to go inside a sentence that has its own.
    var asClause: String {
        hasSuffix(".") ? String(dropLast()) : self
    }
}

extension Sequence<String> {
    /// The names, each in double quotes, comma-separated (`"Theme", "Volume"`): how messages
    /// list keys and root keys.
    package var quotedList: String {
        map { "\"\($0)\"" }.joined(separator: ", ")
    }
}

import Foundation

extension String {
    /// The text without its closing full stop, to go inside a sentence that has its own.
    var asClause: String {
        hasSuffix(".") ? String(dropLast()) : self
    }
}

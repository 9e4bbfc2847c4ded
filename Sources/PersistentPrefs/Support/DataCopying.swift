import Foundation

extension Data {
    /// A copy of `bytes`, made from their buffer in one go: `Data`'s initialiser from a sequence
    /// builds the array's type metadata at run time on a process's first use (about 20,000
    /// instructions of a one-shot `prefs-harness defaults write`).
    init(copying bytes: [UInt8]) {
        self = bytes.withUnsafeBufferPointer { Data(buffer: $0) }
    }
}

import Foundation

/// FNV-1a, 64 bits: a stable hash (the same across runs and platforms) for file names and
/// for recognising stored values.
package enum FNV1a {
    /// The hash of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// The hash of `data`, read through its buffer (a `Data` iterator costs far more per byte).
    package static func hash(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { hash($0) }
    }
}

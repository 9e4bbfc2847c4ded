/// When and where a value was set: a reading of a device's ``HybridClock`` (wall time in milliseconds since 1970, and a
/// counter that orders readings the wall clock cannot tell apart) and the identity of the device that made it.
///
/// Stamps are ordered by wall time, then counter, then device identity, so two devices never make equal stamps and the
/// greatest stamp of a key decides its value on every device alike.
struct SyncStamp: Hashable, Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z, as the clock read them (or the greatest it had seen, when its own wall
    /// clock was behind).
    var wall: Int64
    /// Orders stamps of the same `wall`: 0 for the first reading of a millisecond.
    var counter: Int64
    /// The identity of the device that made the stamp, as its device file's contents name it.
    var device: String

    /// The stamp below every stamp a clock makes.
    static let zero = SyncStamp(wall: 0, counter: 0, device: "")
}

extension SyncStamp: Comparable {
    static func < (left: SyncStamp, right: SyncStamp) -> Bool {
        if left.wall != right.wall { return left.wall < right.wall }
        if left.counter != right.counter { return left.counter < right.counter }
        return left.device < right.device
    }
}

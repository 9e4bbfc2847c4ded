/// A device's hybrid logical clock: wall time where the wall clock moves forward, a counter where it does not, and never
/// behind a stamp the device has made or seen.
///
/// A change stamped after the device saw another device's stamp therefore carries a greater stamp, whatever either wall
/// clock says: a clock a day slow still puts its later change after the one it saw. A clock a day fast makes stamps a
/// day ahead, and every device that sees one moves on from there.
struct HybridClock: Sendable {
    /// The device whose stamps this clock makes.
    let device: String
    /// The greatest reading made or seen (its device left out).
    private(set) var latest: (wall: Int64, counter: Int64) = (0, 0)

    init(device: String) {
        self.device = device
    }

    /// A new stamp at the wall time `now` (milliseconds since 1970): greater than every stamp made or seen before.
    mutating func stamp(now: Int64) -> SyncStamp {
        if now > latest.wall {
            latest = (now, 0)
        } else if latest.counter < Int64.max {
            latest.counter += 1
        } else if latest.wall < Int64.max {
            latest = (latest.wall + 1, 0)  // never reached from files (``DeviceFile`` bounds stamps), but never traps
        }
        return SyncStamp(wall: latest.wall, counter: latest.counter, device: device)
    }

    /// Moves the clock to `stamp` when it is ahead: the next ``stamp(now:)`` is greater than it.
    mutating func observe(_ stamp: SyncStamp) {
        if (stamp.wall, stamp.counter) > latest { latest = (stamp.wall, stamp.counter) }
    }
}

/// One key as a device published it: the value set there, or a tombstone for a key reset there, with its stamp.
struct SyncEntry<Value: Equatable & Sendable>: Equatable, Sendable {
    /// The value, or `nil` for a tombstone.
    var value: Value?
    var stamp: SyncStamp
}

/// What one device publishes for one set: the contents of its device file.
///
/// It holds the device's own entries that nothing it has merged since supersedes, and, for every other device, the
/// greatest ``published`` stamp of that device's log it has merged. The latter is what lets a device drop a tombstone:
/// once every known device has merged a log of this device published after the tombstone, each of them has applied it
/// (or something newer) and dropped its own older entries of that key, so nothing older can come back.
struct DeviceLog<Value: Equatable & Sendable>: Equatable, Sendable {
    /// The device that writes this log (read from the file's contents, never from its name).
    var device: String
    /// The device's own entries, by key.
    var entries: [String: SyncEntry<Value>] = [:]
    /// For each other device, the greatest ``published`` of its logs that this device has merged.
    var seen: [String: SyncStamp] = [:]
    /// A reading of the device's clock when it published this log: at least every stamp in it.
    var published = SyncStamp.zero

    init(device: String) {
        self.device = device
    }
}

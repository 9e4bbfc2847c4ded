/// One key as a device published it: the value set there, or a tombstone for a key reset there, with its stamp.
struct SyncEntry<Value: Equatable & Sendable>: Equatable, Sendable {
    /// The value, or `nil` for a tombstone.
    var value: Value?
    var stamp: SyncStamp
}

/// What one device publishes for one set: the contents of its device file.
///
/// It holds the greatest entry of every key the device knows (its own or merged, and applied or not), and, for every
/// other device whose log was in the folder at its last pass, the greatest ``published`` stamp of that device's logs it
/// has merged. The latter is what lets a device drop a tombstone: once every device in the folder has merged a log of
/// this device that carried it, each of them knows it, and a log found holding an older entry gets it carried again.
struct DeviceLog<Value: Equatable & Sendable>: Equatable, Sendable {
    /// The device that writes this log (read from the file's contents, never from its name).
    var device: String
    /// The device's own entries, by key.
    var entries: [String: SyncEntry<Value>] = [:]
    /// For each other device in the folder at the last pass, the greatest ``published`` of its logs this device merged.
    var seen: [String: SyncStamp] = [:]
    /// A reading of the device's clock when it published this log: at least every stamp in it.
    var published = SyncStamp.zero
    /// For each tombstone in ``entries``, the ``published`` stamp of the device's first log that carried it: a device
    /// whose ``seen`` of this one reaches it has acknowledged the tombstone (and need not write its file again for it).
    var carried: [String: SyncStamp] = [:]

    init(device: String) {
        self.device = device
    }
}

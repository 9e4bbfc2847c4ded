import Foundation
import PersistentPrefs

/// A ``DeviceLog`` as a property list: the contents of a device file, readable by `plutil`, `defaults read` or any
/// property-list reader.
///
/// ```
/// PersistentPrefsSync   1                          the format (a newer one is refused, not misread)
/// device                "3F2A…"                    the writing device's identity
/// published             [wall, counter]            its clock when it wrote the file
/// seen                  {device: [wall, counter]}  the greatest `published` of each other device's logs it merged
/// entries               {key: {stamp: [wall, counter, device], value: …}}   no `value`: the key was reset
/// carried               {key: [wall, counter]}     for each reset, the `published` of its first file that carried it
/// ```
///
/// Walls are milliseconds since 1970. A device's identity is read from here, never from the file's name (an engine's
/// conflict copy names another).
enum DeviceFile {
    /// The format this version writes and reads.
    static let format = 1

    /// Why a file is not a device log this version can merge: a sentence.
    struct Refusal: Error, Equatable {
        let reason: String
    }

    /// The property list of `log`.
    static func dictionary(of log: DeviceLog<SyncValue>) -> [String: Any] {
        [
            "PersistentPrefsSync": NSNumber(value: format),
            "device": log.device,
            "published": [NSNumber(value: log.published.wall), NSNumber(value: log.published.counter)],
            "seen": log.seen.mapValues { [NSNumber(value: $0.wall), NSNumber(value: $0.counter)] },
            "entries": log.entries.mapValues(fields(of:)),
            "carried": log.carried.mapValues { [NSNumber(value: $0.wall), NSNumber(value: $0.counter)] },
        ]
    }

    /// An entry as a device file (and a device's record) keeps it: `{stamp: [wall, counter, device], value: …}`, no
    /// `value` for a tombstone.
    static func fields(of entry: SyncEntry<SyncValue>) -> [String: Any] {
        var fields: [String: Any] = ["stamp": fields(of: entry.stamp)]
        if let value = entry.value { fields["value"] = value.plist }
        return fields
    }

    /// A stamp as a device file keeps it: `[wall, counter, device]`.
    static func fields(of stamp: SyncStamp) -> [Any] {
        [NSNumber(value: stamp.wall), NSNumber(value: stamp.counter), stamp.device]
    }

    /// The entry ``fields(of:)-(SyncEntry<SyncValue>)`` made, or `nil` when `fields` is not one.
    static func entry(_ fields: Any?) -> SyncEntry<SyncValue>? {
        guard let fields = fields as? [String: Any], let stamp = stamp(fields["stamp"]) else { return nil }
        guard let plist = fields["value"] else { return SyncEntry(value: nil, stamp: stamp) }
        return SyncValue(plist: plist).map { SyncEntry(value: $0, stamp: stamp) }
    }

    /// The log a device file holds, or why it holds none this version can merge. Every stamp must be a device's
    /// (wall and counter not negative and within bounds, a device named), and none of the file's entries may be newer than the stamp it
    /// was published with: a file that breaks either was not written by a device's clock.
    static func log(from dictionary: [String: Any]) -> Result<DeviceLog<SyncValue>, Refusal> {
        guard let version = dictionary["PersistentPrefsSync"] as? NSNumber, NumberKind(version) == .signed else {
            return .failure(Refusal(reason: "it is not a PersistentPrefsSync device file (it has no format number)"))
        }
        guard version.intValue >= 1 else {
            return .failure(Refusal(reason: "its format number \(version) is not one any version writes"))
        }
        guard version.intValue <= format else {
            return .failure(Refusal(reason: "it was written by a newer PersistentPrefsSync (format \(version), this version reads \(format))"))
        }
        guard let device = dictionary["device"] as? String, isIdentity(device) else {
            return .failure(Refusal(reason: "its device identity is missing or not one (letters, digits, - and _, at most 64)"))
        }
        guard let published = clockReading(dictionary["published"], device: device) else {
            return .failure(Refusal(reason: "its published stamp is missing or damaged"))
        }
        var log = DeviceLog<SyncValue>(device: device)
        log.published = published
        guard let seen = dictionary["seen"] as? [String: Any] else {
            return .failure(Refusal(reason: "its list of devices seen is missing or damaged"))
        }
        for (other, reading) in seen {
            guard isIdentity(other), let stamp = clockReading(reading, device: other) else {
                return .failure(Refusal(reason: "its stamp seen for device \"\(other)\" is damaged"))
            }
            guard (stamp.wall, stamp.counter) <= (published.wall, published.counter) else {
                return .failure(Refusal(reason: "its stamp seen for device \"\(other)\" is after the file was published"))
            }
            log.seen[other] = stamp
        }
        guard let entries = dictionary["entries"] as? [String: Any] else {
            return .failure(Refusal(reason: "its entries are missing or damaged"))
        }
        for (key, fields) in entries {
            guard let entry = entry(fields) else {
                return .failure(Refusal(reason: "its entry \"\(key)\" is damaged (no stamp, or a value no property list holds)"))
            }
            guard (entry.stamp.wall, entry.stamp.counter) <= (published.wall, published.counter) else {
                return .failure(Refusal(reason: "its entry \"\(key)\" is stamped after the file was published"))
            }
            log.entries[key] = entry
        }
        // Since when each tombstone is carried (none in a file without it: each then counts from `published`).
        for (key, reading) in dictionary["carried"] as? [String: Any] ?? [:] {
            guard log.entries[key]?.value == nil, log.entries[key] != nil, let since = clockReading(reading, device: device),
                (since.wall, since.counter) <= (published.wall, published.counter)
            else {
                return .failure(Refusal(reason: "the stamp since which it carries \"\(key)\"'s reset is damaged"))
            }
            log.carried[key] = since
        }
        return .success(log)
    }

    /// Whether `text` can be a device's identity: 1–64 ASCII letters, digits, `-` and `_` (a UUID is one), so it is
    /// also a file name on every system an engine replicates to.
    static func isIdentity(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.utf8.allSatisfy(\.isIdentityByte)
    }

    /// `[wall, counter, device]` read as a stamp.
    static func stamp(_ field: Any?) -> SyncStamp? {
        guard let parts = field as? [Any], parts.count == 3, let device = parts[2] as? String, isIdentity(device) else { return nil }
        return clockReading(Array(parts.prefix(2)), device: device)
    }

    /// The greatest wall a stamp may have: 9999-12-31T23:59:59.999Z (as a property-list date).
    static let latestWall: Int64 = 253_402_300_799_999
    /// The greatest counter a clock's stamp may have: far more readings than a device makes in one millisecond, far from
    /// overflow. (A stamp at the start of time, wall 0, orders first passes by its counter, which may be any.)
    static let greatestCounter: Int64 = 0xFFFF_FFFF

    /// `[wall, counter]` read as a stamp of `device`: both integers, not negative, within ``latestWall`` and (but at
    /// the start of time) ``greatestCounter``.
    private static func clockReading(_ field: Any?, device: String) -> SyncStamp? {
        guard let parts = field as? [Any], parts.count == 2, let wall = integer(parts[0]), let counter = integer(parts[1]),
            wall <= latestWall, wall == 0 || counter <= greatestCounter
        else { return nil }
        return SyncStamp(wall: wall, counter: counter, device: device)
    }

    /// A stamp's wall or counter: an integer, not negative.
    private static func integer(_ field: Any) -> Int64? {
        guard let number = field as? NSNumber, NumberKind(number) == .signed, number.int64Value >= 0 else { return nil }
        return number.int64Value
    }
}

extension UInt8 {
    /// Whether the byte may stand in a device's identity, and as itself in a sync folder's names: an ASCII letter or
    /// digit, `-` or `_`.
    var isIdentityByte: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
}

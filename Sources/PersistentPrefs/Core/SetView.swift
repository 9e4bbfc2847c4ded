import Foundation

/// What a read of an instance sees: the shared set, with the instance's pending batch over it.
///
/// Static functions of the two parts rather than a value holding them: a value would retain the
/// domain on every read.
enum SetView {
    /// The whole set.
    @inline(__always)
    static func values(_ domain: SharedSet, _ pending: PendingChanges.Box?) throws -> [String: Any] {
        guard let pending = pending?.changes else { return try domain.values() }
        return pending.applied(to: try pending.base ?? domain.values())
    }

    /// One value.
    @inline(__always)
    static func value(forKey key: String, _ domain: SharedSet, _ pending: PendingChanges.Box?) throws -> Any? {
        guard let pending = pending?.changes else { return try domain.value(forKey: key) }
        return try batchedValue(forKey: key, domain, pending)
    }

    /// One value inside a batch or update: the batch's, else the set's; a locked key reads its
    /// mandatory value, and a key the user's set lacks its system layers' value.
    @inline(never)
    private static func batchedValue(forKey key: String, _ domain: SharedSet, _ pending: PendingChanges) throws -> Any? {
        let layers = try domain.layers()
        if layers.isEmpty { return try pending.value(forKey: key) { try domain.value(forKey: key) } }
        if layers.isLocked(key) { return layers.layerValue(forKey: key) }
        return try pending.value(forKey: key) { try domain.values()[key] } ?? layers.layerValue(forKey: key)
    }

    /// The `as?` answers for one value.
    @inline(__always)
    static func number(forKey key: String, _ domain: SharedSet, _ pending: PendingChanges.Box?) throws -> NumberCasts? {
        guard let pending else { return try domain.number(forKey: key) }
        return try batchedNumber(forKey: key, domain, pending)
    }

    @inline(never)
    private static func batchedNumber(forKey key: String, _ domain: SharedSet, _ pending: PendingChanges.Box) throws -> NumberCasts? {
        try value(forKey: key, domain, pending).flatMap(NumberCasts.init)
    }

    /// One value as a `String`.
    @inline(__always)
    static func string(forKey key: String, _ domain: SharedSet, _ pending: PendingChanges.Box?) throws -> String? {
        guard let pending else { return try domain.string(forKey: key) }
        return try value(forKey: key, domain, pending) as? String
    }
}

import Foundation

extension PrefsTransacting where Self: PersistentPrefs {
    /// Sets a property of the subclass, and throws when the write is refused.
    ///
    /// The throwing form of assigning a `@Pref` property: `try prefs.set(\.volume, 12)` writes
    /// what `prefs.volume = 12` writes, with the same checks, and throws the refusal of this
    /// very write (never one another thread's write left in ``PersistentPrefs/lastError``).
    /// A refused value changes nothing, in memory or in the store.
    ///
    /// ```swift
    /// final class AudioPrefs: PersistentPrefs {
    ///     @Pref("Volume", in: 0...11) var volume = 5
    /// }
    ///
    /// do {
    ///     try prefs.set(\.volume, 12)
    /// } catch {
    ///     print(error)   // The value for "Volume" is not allowed: 12 is outside the range 0...11.
    /// }
    /// ```
    ///
    /// The key path may name any property of the subclass, `@Pref` or computed: the first
    /// refusal of a write its setter makes through this instance is thrown. Inside a
    /// ``batch(_:)`` the value is collected with the batch, and a refusal also spoils the batch.
    /// ``PersistentPrefs/lastError`` is set as the property's setter sets it.
    ///
    /// - Parameters:
    ///   - keyPath: The property to set, such as `\.volume`.
    ///   - value: The new value.
    /// - Throws: A ``PersistentPrefs/PrefsError``: ``PersistentPrefs/PrefsError/keyLocked(key:)``
    ///   for a key an administrator locked, ``PersistentPrefs/PrefsError/invalidValue(key:reason:)``
    ///   for a value its rule refuses, or a store failure. Nothing is written when it throws.
    public func set<Value>(_ keyPath: ReferenceWritableKeyPath<Self, Value>, _ value: Value) throws {
        let outcome = WriteOutcome()
        WriteOutcome.$current.withValue(outcome) {
            self[keyPath: keyPath] = value
        }
        if let error = outcome.error { throw error }
    }
}

/// The first error the writes made while a typed ``PrefsTransacting/set(_:_:)`` runs report
/// (see `PersistentPrefs.reportingErrors`): task-local, so each call sees its own writes only,
/// whatever other threads do.
final class WriteOutcome: Sendable {
    /// The outcome of the typed `set` running in this task or thread, or `nil`.
    @TaskLocal static var current: WriteOutcome?

    private let first = Locked<PersistentPrefs.PrefsError?>(nil)

    /// Keeps `error` unless an earlier one was kept.
    func record(_ error: PersistentPrefs.PrefsError) {
        first.withLock { if $0 == nil { $0 = error } }
    }

    /// The error kept, or `nil` when every write succeeded.
    var error: PersistentPrefs.PrefsError? { first.withLock { $0 } }
}

import Foundation

extension PrefsTransacting where Self: PersistentPrefs {
    /// Sets a property of the subclass, and throws when the write is refused: the throwing form of assigning it
    /// (see <doc:TypedPreferences>).
    ///
    /// `try prefs.set(\.volume, 12)` writes what `prefs.volume = 12` writes, with the same checks, and throws the
    /// refusal of this very write (never another thread's left in ``PersistentPrefs/lastError``, which is set as
    /// the setter sets it). The key path may name any property, `@Pref` or computed: the first refusal of a write
    /// its setter makes through this instance is thrown. Inside a ``batch(_:)`` the value is collected with the
    /// batch, and a refusal also spoils the batch.
    ///
    /// ```swift
    /// do {
    ///     try prefs.set(\.volume, 12)
    /// } catch {
    ///     print(error)   // The value for "Volume" is not allowed: 12 is outside the range 0...11.
    /// }
    /// ```
    ///
    /// - Throws: A ``PersistentPrefs/PrefsError``: ``PersistentPrefs/PrefsError/keyLocked(key:)`` for a locked key,
    ///   ``PersistentPrefs/PrefsError/invalidValue(key:reason:)`` for a value its rule refuses, or a store failure.
    ///   Nothing is written when it throws.
    public func set<Value>(_ keyPath: ReferenceWritableKeyPath<Self, Value>, _ value: Value) throws {
        let outcome = WriteOutcome()
        WriteOutcome.$current.withValue(outcome) {
            self[keyPath: keyPath] = value
        }
        if let error = outcome.error { throw error }
    }
}

/// The first error the writes made while a typed ``PrefsTransacting/set(_:_:)`` runs report (see
/// `PersistentPrefs.reportingErrors`): task-local, so each call sees its own writes only.
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

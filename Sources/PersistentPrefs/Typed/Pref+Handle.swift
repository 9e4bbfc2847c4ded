import Foundation

extension Pref {
    /// What `$property` gives for a `@Pref` property: the property of one instance, by its key, to reset it or to
    /// follow its values.
    ///
    /// ```swift
    /// prefs.$volume.key          // "Volume"
    /// prefs.$volume.reset()      // back to 5: the key is removed from the set
    /// for await volume in prefs.$volume.values {
    ///     print(volume)          // the value now, then after each change, from any process
    /// }
    /// ```
    public struct Handle {
        /// The key the property is stored under.
        public let key: String
        /// The property's declared default.
        public var defaultValue: Value { pref.defaultValue }
        /// The instance the property belongs to.
        let owner: PersistentPrefs
        let pref: Pref<Value>

        /// The property's value, read as the property reads it.
        public var value: Value { owner.value(of: pref.core, pref) }

        /// Returns the property to its default by removing its key, as ``PersistentPrefs/reset(_:)`` does; a failure
        /// (a locked key, a store error) is reported in ``PersistentPrefs/lastError``.
        public func reset() {
            owner.reset(key)
        }
    }
}

extension Pref.Handle where Value: Sendable {
    /// The property's values as an async sequence: its value now, then after each change of its key, whoever made
    /// it. Each is read as the property reads it when the change is delivered
    /// (``PersistentPrefs/observeChanges(to:_:)``): a burst may give the newest value more than once, never an older
    /// after a newer. Values are buffered without limit; the sequence ends when the iterating task is cancelled (or
    /// after the first value when the set cannot be observed: ``PersistentPrefs/lastError`` says why).
    ///
    /// ```swift
    /// for await volume in prefs.$volume.values { slider.value = Double(volume) }
    /// ```
    public var values: AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self)
        let reader = Reader(owner: owner, pref: pref)
        // Observed first, read second: a change between the two is heard, never missed.
        let observation = owner.observeChanges(to: [key]) { _ in continuation.yield(reader.value) }
        continuation.yield(reader.value)
        continuation.onTermination = { _ in observation.cancel() }
        if observation.isCancelled { continuation.finish() }
        return stream
    }
}

/// Reads a property of an instance from the thread that delivers its changes. `@unchecked Sendable`: an instance
/// may be used from any thread (its state is behind its lock), and the `Pref`'s codec and rule are pure.
private final class Reader<Value>: @unchecked Sendable {
    let owner: PersistentPrefs
    let pref: Pref<Value>

    init(owner: PersistentPrefs, pref: Pref<Value>) {
        self.owner = owner
        self.pref = pref
    }

    var value: Value { owner.value(of: pref.core, pref) }
}

import Foundation

#if canImport(Observation)
    import Observation
#endif

/// Where one set's changes go: closure observers (``PersistentPrefs/observeChanges(to:_:)``,
/// async sequences) and the Observation framework (`withObservationTracking`, SwiftUI).
///
/// Changes flow one way. Whoever changed the set's cached copy — a write, a reload, the watcher
/// after another process's write — posts the keys that changed with ``post(_:)`` while still
/// holding the cache lock, so events queue in the order the copy changed; then, with every lock
/// released, calls ``deliver()``. One thread at a time delivers a feed's events, in order: a
/// handler that writes to the set queues its own event, which the same loop delivers next,
/// instead of running handlers inside handlers or waiting for itself. Only a thread with an event
/// of its own in the queue starts delivering, so a write's event is delivered on the writing
/// thread before the write returns, unless another thread with its own event is delivering at
/// that moment; a thread that changed nothing (the watcher finding the process's own write)
/// never takes another thread's event.
final class ChangeFeed: @unchecked Sendable {  // `state` is a Locked; the rest is immutable
    private struct Subscriber {
        let keys: Set<String>
        let handler: @Sendable (PrefsChangeEvent) -> Void
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        /// Queued events, each with the thread that posted it.
        var pending: [(event: PrefsChangeEvent, poster: ObjectIdentifier)] = []
        var delivering = false
    }

    private let state = Locked(State(), level: .feed)
    private let root: String
    private let storeIdentifier: String
    /// The Observation framework's registrar for this set, or `nil`
    /// where the framework is not available.
    private let tracker: ObservationTracker?

    init(root: String, storeIdentifier: String) {
        self.root = root
        self.storeIdentifier = storeIdentifier
        tracker = ObservationTracker.make()
    }

    /// Calls `handler` with each later change that touches one of `keys` (any key when empty).
    ///
    /// - Returns: The subscription, for ``unsubscribe(_:)``.
    func subscribe(keys: Set<String>, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(keys: keys, handler: handler)
            return state.nextID
        }
    }

    /// Ends a subscription: no call of its handler starts after this returns, except one another
    /// thread was already starting.
    func unsubscribe(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Queues an event for the keys whose stored value changed (nothing for none). Runs no user
    /// code, so it may be called under the set's cache lock.
    func post(_ keys: Set<String>) {
        guard !keys.isEmpty else { return }
        let event = PrefsChangeEvent(root: root, keys: keys, storeIdentifier: storeIdentifier)
        let poster = ObjectIdentifier(Thread.current)
        state.withLock { $0.pending.append((event, poster)) }
    }

    /// Delivers the queued events in order, when one of them was posted by this thread and no
    /// other thread is delivering. Call it with no lock held; called inside a write of this
    /// thread (a set written from an `update` body of another), it delivers once that write ends
    /// (see ``WriteScope/afterWrites(_:)``), so no observer runs while a lock is held.
    func deliver() {
        guard !WriteScope.isInsideWrite else { return WriteScope.afterWrites { self.deliver() } }
        let me = ObjectIdentifier(Thread.current)
        let starts = state.withLock { state in
            guard !state.delivering, state.pending.contains(where: { $0.poster == me }) else { return false }
            state.delivering = true
            return true
        }
        guard starts else { return }
        while let event = state.withLock({ state -> PrefsChangeEvent? in
            guard !state.pending.isEmpty else {
                state.delivering = false
                return nil
            }
            return state.pending.removeFirst().event
        }) {
            // Observers' own writes are theirs: a typed `set` being delivered for does not take
            // their errors as its own (see ``WriteOutcome``).
            if WriteOutcome.current == nil {
                tell(event)
            } else {
                WriteOutcome.$current.withValue(nil) { tell(event) }
            }
        }
    }

    /// Tells the Observation framework and the subscribers of `event`'s keys.
    private func tell(_ event: PrefsChangeEvent) {
        tracker?.changed(keys: event.keys)
        let ids = state.withLock { state in
            state.subscribers.filter { $0.value.keys.isEmpty || !$0.value.keys.isDisjoint(with: event.keys) }.keys.sorted()
        }
        for id in ids {
            guard let subscriber = state.withLock({ $0.subscribers[id] }) else { continue }
            subscriber.handler(event)
        }
    }

    /// Tells the Observation framework that the caller read `key` of the set (`nil`: the whole
    /// set). Free when no `withObservationTracking` is running on this thread but a
    /// thread-local read.
    @inline(__always)
    func access(_ keyPath: KeyPath<PrefsKeySpace, Int>) {
        tracker?.access(keyPath)
    }
}

/// The key paths the Observation framework tracks a set's keys by: `\.[key]` for one key,
/// `\.wholeSet` for the whole set. Each set has its own registrar, so the same key path in two
/// sets is two different things to observe.
@usableFromInline
final class PrefsKeySpace: Sendable {
    static let shared = PrefsKeySpace()

    /// A key of a set.
    @usableFromInline
    subscript(key: String) -> Int { 0 }

    /// The whole set: read by `values`, `count`, the subscript and `value(forKey:as:)`; changed
    /// by every change of the set.
    @usableFromInline
    var wholeSet: Int { 0 }

    /// The key path of one key.
    ///
    /// Made once per key and kept: making a subscript key path demangles its pattern at run
    /// time. Every key path of a key is made here, so a key whose path was never made cannot be
    /// observed by key (see ``observableKeyPaths(_:)``).
    @usableFromInline
    static func keyPath(_ key: String) -> KeyPath<PrefsKeySpace, Int> {
        if let known = made.withLock({ $0.paths[key] }) { return known }
        let path = \PrefsKeySpace.[key]
        made.withLock { made in
            if made.paths.count >= 16_384 {  // bounded, whatever keys come and go
                made.paths.removeAll()
                made.forgot = true
            }
            made.paths[key] = path
        }
        return path
    }

    /// The key paths of those of `keys` a tracking may hold, in any order: the keys whose path
    /// was made (a `@Pref` declares one), found under one lock. A batch of 1,000 keys read only
    /// by the subscript then makes no key path (a tracking of such reads holds ``wholeSet``).
    /// Once the table forgot paths it made, every key's path is made again, as a tracking may
    /// hold one of them.
    static func observableKeyPaths(_ keys: Set<String>) -> [KeyPath<PrefsKeySpace, Int>] {
        var missing: [String] = []
        var found = made.withLock { made in
            keys.compactMap { key -> KeyPath<PrefsKeySpace, Int>? in
                if let known = made.paths[key] { return known }
                if made.forgot { missing.append(key) }
                return nil
            }
        }
        for key in missing { found.append(keyPath(key)) }
        return found
    }

    /// The key paths made so far, by key, and whether the table was ever emptied to stay within
    /// its bound (see ``keyPath(_:)``).
    private static let made = Locked<(paths: [String: KeyPath<PrefsKeySpace, Int>], forgot: Bool)>(([:], false))
}

/// The Observation framework's side of a set, where the framework is available (macOS 14,
/// iOS 17, tvOS 17, watchOS 10, and every Linux toolchain with Swift 5.9 or later): a base class
/// a set can hold on any system, whose one subclass holds the registrar. Elsewhere a set holds
/// none.
class ObservationTracker: @unchecked Sendable {  // no state; the subclass's is immutable
    /// A tracker for one set, or `nil` where the Observation framework is not available.
    static func make() -> ObservationTracker? {
        #if canImport(Observation)
            if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { return RegistrarTracker() }
        #endif
        return nil
    }

    /// Records a read of `keyPath` for the `withObservationTracking` running on this thread.
    func access(_ keyPath: KeyPath<PrefsKeySpace, Int>) {}

    /// Fires `onChange` of every tracking that read one of `keys` or the whole set.
    func changed(keys: Set<String>) {}
}

#if canImport(Observation)
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    extension PrefsKeySpace: Observable {}

    /// The tracker where the Observation framework is available: one registrar per set.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private final class RegistrarTracker: ObservationTracker, @unchecked Sendable {  // immutable
        private let registrar = ObservationRegistrar()
        /// ``PrefsKeySpace/shared``, at hand.
        private let space = PrefsKeySpace.shared

        override func access(_ keyPath: KeyPath<PrefsKeySpace, Int>) {
            registrar.access(space, keyPath: keyPath)
        }

        override func changed(keys: Set<String>) {
            // In any order: a tracking fires once, whichever key comes first.
            for keyPath in PrefsKeySpace.observableKeyPaths(keys) { registrar.withMutation(of: space, keyPath: keyPath) {} }
            registrar.withMutation(of: space, keyPath: \PrefsKeySpace.wholeSet) {}
        }
    }
#endif

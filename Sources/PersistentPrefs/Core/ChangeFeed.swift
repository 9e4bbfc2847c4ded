import Foundation

#if canImport(Observation)
    import Observation
#endif

/// Where one set's changes go: closure observers and the Observation framework. Whoever changes the cached copy
/// posts the changed keys with ``post(_:)`` under the cache lock (so events queue in order), then calls ``deliver()``
/// with no lock held. One thread at a time delivers, in order, and only one with an event of its own queued, so a
/// handler's own write is delivered next by the same loop rather than nested.
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
    /// The Observation framework's registrar for this set, or `nil` where the framework is not available.
    private let tracker: ObservationTracker?

    init(root: String, storeIdentifier: String) {
        self.root = root
        self.storeIdentifier = storeIdentifier
        tracker = ObservationTracker.make()
    }

    /// Calls `handler` with each later change touching one of `keys` (any when empty); returns its id for ``unsubscribe(_:)``.
    func subscribe(keys: Set<String>, _ handler: @escaping @Sendable (PrefsChangeEvent) -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(keys: keys, handler: handler)
            return state.nextID
        }
    }

    /// Ends a subscription: no call of its handler starts after this returns, except one already starting.
    func unsubscribe(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Queues an event for the changed keys (nothing for none). Runs no user code: may be called under the cache lock.
    func post(_ keys: Set<String>) {
        guard !keys.isEmpty else { return }
        let event = PrefsChangeEvent(root: root, keys: keys, storeIdentifier: storeIdentifier)
        let poster = ObjectIdentifier(Thread.current)
        state.withLock { $0.pending.append((event, poster)) }
    }

    /// Delivers the queued events in order, when this thread posted one and no other is delivering; inside a write of
    /// this thread, once that write ends (``WriteScope/afterWrites(_:)``), so no observer runs while a lock is held.
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
            // Observers' own writes are theirs: a typed `set` does not take their errors (see ``WriteOutcome``).
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

    /// Tells the Observation framework the caller read `keyPath` (a key, or the whole set).
    @inline(__always)
    func access(_ keyPath: KeyPath<PrefsKeySpace, Int>) {
        tracker?.access(keyPath)
    }
}

/// The key paths the Observation framework tracks a set's keys by: `\.[key]` for one key, `\.wholeSet` for the
/// whole set. Each set has its own registrar, so key paths of two sets never mix.
@usableFromInline
final class PrefsKeySpace: Sendable {
    static let shared = PrefsKeySpace()

    /// A key of a set.
    @usableFromInline
    subscript(key: String) -> Int { 0 }

    /// The whole set: read by `values`, `count`, the subscript and `value(forKey:as:)`; changed by every change.
    @usableFromInline
    var wholeSet: Int { 0 }

    /// The key path of one key, made once and kept (making one demangles at run time). Every key path of a key is
    /// made here, so a key whose path was never made is not observed by key (see ``observableKeyPaths(_:)``).
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

    /// The key paths of those of `keys` a tracking may hold, in any order: those already made (keys read only by the
    /// subscript make none; their trackings hold ``wholeSet``). Once the table forgot paths, all are made again.
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

    /// The key paths made so far, and whether the table was ever emptied to stay within its bound.
    private static let made = Locked<(paths: [String: KeyPath<PrefsKeySpace, Int>], forgot: Bool)>(([:], false))
}

/// The Observation framework's side of a set: a base class any system can hold; its one subclass holds the registrar.
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

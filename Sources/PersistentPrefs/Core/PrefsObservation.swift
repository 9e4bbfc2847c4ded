import Foundation

/// A change of a preference set, whoever made it: which keys' stored values changed. Delivered to
/// ``PersistentPrefs/observeChanges(to:_:)`` handlers and by ``PersistentPrefs/changes(to:)``.
public struct PrefsChangeEvent: Sendable, Hashable, CustomStringConvertible {
    /// The root key of the set that changed (for ``UserDefaultsContainer`` and ``SettingsStorage``, the key).
    public let root: String
    /// Exactly the keys whose stored value changed (set, changed or removed); never empty.
    public let keys: Set<String>
    /// The ``PrefsStore/identifier`` of the store holding the set.
    public let storeIdentifier: String

    /// An event, for tests of code that handles events.
    public init(root: String, keys: Set<String>, storeIdentifier: String = "") {
        self.root = root
        self.keys = keys
        self.storeIdentifier = storeIdentifier
    }

    /// `root: key, key` with the keys sorted.
    public var description: String { "\(root): \(keys.sorted().joined(separator: ", "))" }
}

/// A running observation of a preference set, until ``cancel()`` or deallocation (see <doc:ObservingChanges>).
public final class PrefsObservation: Sendable {
    private let stop: Locked<(@Sendable () -> Void)?>
    private let currentProblem: (@Sendable () -> PersistentPrefs.PrefsError?)?

    /// An observation that ends with `stop` (run once), whose ``problem`` `problem` tells.
    init(_ stop: (@Sendable () -> Void)?, problem: (@Sendable () -> PersistentPrefs.PrefsError?)? = nil) {
        self.stop = Locked(stop)
        currentProblem = problem
    }

    /// ``PersistentPrefs/PrefsError/watchDegraded(path:reason:)`` while other programs' changes reach this
    /// observation late (polled; see <doc:SharedMachines>), else `nil`. This process's changes are always at once.
    ///
    /// ```swift
    /// let observation = prefs.observeChanges { _ in refresh() }
    /// if let problem = observation.problem { log.warning("\(problem)") }
    /// ```
    public var problem: PersistentPrefs.PrefsError? {
        isCancelled ? nil : currentProblem?()
    }

    /// Stops observing; no handler call starts after this returns, except one already starting. Safe to repeat, in a handler too.
    public func cancel() {
        stop.withLock { $0.take() }?()
    }

    /// Whether observing has stopped (cancelled, or it could not start: see ``PersistentPrefs/lastError``).
    public var isCancelled: Bool { stop.withLock { $0 == nil } }

    deinit {
        cancel()
    }

    /// The events of the observation `observe` starts, as an async sequence that cancels it with the iterating task.
    static func stream(
        _ observe: (@escaping @Sendable (PrefsChangeEvent) -> Void) -> PrefsObservation
    ) -> AsyncStream<PrefsChangeEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PrefsChangeEvent.self)
        let observation = observe { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        if observation.isCancelled { continuation.finish() }
        return stream
    }
}

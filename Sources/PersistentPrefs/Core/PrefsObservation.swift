import Foundation

/// A change of a preference set: which keys' stored values changed.
///
/// Delivered to ``PersistentPrefs/observeChanges(to:_:)`` handlers and by
/// ``PersistentPrefs/changes(to:)``, whoever made the change: this instance, another instance,
/// another process, plain `UserDefaults` code, or `prefs-harness`.
public struct PrefsChangeEvent: Sendable, Hashable, CustomStringConvertible {
    /// The root key of the set that changed (for ``UserDefaultsContainer`` and
    /// ``SettingsStorage``, the `UserDefaults` key).
    public let root: String
    /// Exactly the keys whose stored value changed: set, changed or removed. Never empty; a write
    /// that stores an equal value is no change and sends no event.
    public let keys: Set<String>
    /// The ``PrefsStore/identifier`` of the store holding the set.
    public let storeIdentifier: String

    /// An event (for tests of code that handles events).
    ///
    /// - Parameters:
    ///   - root: The root key of the set.
    ///   - keys: The keys that changed.
    ///   - storeIdentifier: The store's identifier.
    public init(root: String, keys: Set<String>, storeIdentifier: String = "") {
        self.root = root
        self.keys = keys
        self.storeIdentifier = storeIdentifier
    }

    /// `root: key, key` with the keys sorted.
    public var description: String { "\(root): \(keys.sorted().joined(separator: ", "))" }
}

/// A running observation of a preference set; observing stops at ``cancel()`` or when this
/// object is deallocated. Keep it as long as you want to be told of changes.
///
/// ```swift
/// let observation = prefs.observeChanges(to: ["Volume"]) { event in
///     print("changed:", event.keys)
/// }
/// // later
/// observation.cancel()
/// ```
public final class PrefsObservation: Sendable {
    private let stop: Locked<(@Sendable () -> Void)?>
    private let currentProblem: (@Sendable () -> PersistentPrefs.PrefsError?)?

    /// An observation that ends with `stop` (run once), whose ``problem`` `problem` tells.
    init(_ stop: (@Sendable () -> Void)?, problem: (@Sendable () -> PersistentPrefs.PrefsError?)? = nil) {
        self.stop = Locked(stop)
        currentProblem = problem
    }

    /// Why changes made by other programs reach this observation late, or `nil` while they are
    /// reported as they happen.
    ///
    /// ``PersistentPrefs/PrefsError/watchDegraded(path:reason:)`` while the operating system
    /// cannot watch the store's file (on Linux: no `inotify` instance or watch left for this
    /// user): the library then looks at the file a few times a second, so the handler is still
    /// called, up to about half a second late, and it tries the operating system again every few
    /// seconds. Changes made through the library in this process are always reported at once.
    ///
    /// ```swift
    /// let observation = prefs.observeChanges { _ in refresh() }
    /// if let problem = observation.problem { log.warning("\(problem)") }
    /// ```
    public var problem: PersistentPrefs.PrefsError? {
        isCancelled ? nil : currentProblem?()
    }

    /// Stops observing. No call of the handler starts after this returns, except one another
    /// thread was already starting. Safe to call more than once, and from the handler itself.
    public func cancel() {
        stop.withLock { $0.take() }?()
    }

    /// Whether observing has stopped (cancelled, or it could not start: see the instance's
    /// ``PersistentPrefs/lastError``).
    public var isCancelled: Bool { stop.withLock { $0 == nil } }

    deinit {
        cancel()
    }

    /// The events an observation started by `observe` delivers, as an async sequence that
    /// cancels the observation when the iterating task is cancelled.
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

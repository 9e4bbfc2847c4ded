#if canImport(ObjectiveC)
    import Foundation

    // Apple platforms only (not built on Linux, which has no key-value observing): RVS's habit of
    // observing `values` with KVO keeps working, and now hears of every change of the set —
    // another instance's, another process's — not only this instance's setter. Both halves of
    // the notification are sent after the change: the set changes under its cache lock, and
    // observers are told only once every lock is released (so `.old` and `.prior` show the new
    // set; the `values` documentation says so).
    extension PersistentPrefs {
        /// A subscription to `sharedSet`'s changes that tells KVO observers of `values`; made when the
        /// instance settles on a set, ended when it moves to another or goes away.
        func keyValueNotifications(for sharedSet: SharedSet) -> PrefsObservation {
            let target = WeakInstance(self)
            let id = sharedSet.feed.subscribe(keys: []) { _ in
                guard let instance = target.instance else { return }
                instance.willChangeValue(forKey: "values")
                instance.didChangeValue(forKey: "values")
            }
            return PrefsObservation { sharedSet.feed.unsubscribe(id) }
        }
    }

    /// A weak reference a `@Sendable` handler can hold.
    private final class WeakInstance: @unchecked Sendable {  // only read; KVO notifications are thread-safe
        weak var instance: PersistentPrefs?

        init(_ instance: PersistentPrefs) {
            self.instance = instance
        }
    }
#endif

#if canImport(ObjectiveC)
    import Foundation

    // Apple platforms only: KVO observers of `values` hear of every change of the set. Both halves of the notification
    // are sent after the change, once every lock is released (so `.old` and `.prior` show the new set).
    extension PersistentPrefs {
        /// A subscription to `sharedSet`'s changes that tells KVO observers of `values`, for as long as the instance uses it.
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

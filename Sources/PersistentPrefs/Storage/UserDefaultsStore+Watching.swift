import Foundation

// How a `UserDefaultsStore` learns that someone changed a suite: on Linux the suite's file is
// watched (``ChangeWatcher``). Where there is no file to watch (the `UserDefaults` road on Apple
// platforms, where `cfprefsd` owns the files), key-value observing reports changes of a root key
// without a "." (including other processes' changes, through `cfprefsd`); a root key with a "."
// (which KVO takes as a key path) and the whole store (`observeStore`) are watched through
// `UserDefaults.didChangeNotification` (``DefaultsChangeWatcher``), which reports changes made
// in this process only.
extension UserDefaultsStore {
    var canWatch: Bool { true }

    func watch(root: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        watch(suiteKey: root, onChange)
    }

    func watchProblem(root: String) -> PersistentPrefs.PrefsError? {
        handle.watchedFile.flatMap(ChangeWatcher.shared.problem(for:))
    }

    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        if let file = handle.watchedFile { return ChangeWatcher.shared.watching(file, onChange) }
        return DefaultsChangeWatcher.start(handle.defaults, onChange)  // this process's changes only
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        handle.watchedFile.flatMap(ChangeWatcher.shared.problem(for:))
    }

    /// Calls `onChange` whenever the suite key `key` may have changed, until the returned
    /// closure is called.
    func watch(suiteKey key: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        if let file = handle.watchedFile {
            return ChangeWatcher.shared.watching(file, onChange)
        }
        #if canImport(ObjectiveC)
            if let stop = DefaultsKeyObserver.start(handle.defaults, key: key, onChange) { return stop }
        #endif
        return DefaultsChangeWatcher.start(handle.defaults, onChange)
    }
}

/// Watches one `UserDefaults` object through `UserDefaults.didChangeNotification` (plain
/// Foundation, every platform): reports changes this process makes through that object. Changes
/// made by other processes, or through another `UserDefaults` object, are not reported. (Apple
/// platforms post the notification for each change of the object's domains in this process;
/// swift-corelibs-foundation posts it for `setPersistentDomain` and `removePersistentDomain`, not
/// for `set` — on Linux the library watches the suite's file instead.)
///
/// `onChange` runs on a queue of the watcher's own, never on the writer's stack (which may hold
/// the library's locks); no call starts after the watch is stopped.
final class DefaultsChangeWatcher: @unchecked Sendable {  // `token` is set once in `start`, then only removed under `calls`
    private let calls: WatchCalls
    private var token: (any NSObjectProtocol)?

    private init(_ onChange: @escaping @Sendable () -> Void) {
        calls = WatchCalls(label: "PersistentPrefs.DefaultsChangeWatcher", onChange)
    }

    /// Starts calling `onChange` after each `didChangeNotification` posted for `defaults`.
    ///
    /// - Returns: How to stop; calling it more than once does nothing.
    static func start(_ defaults: UserDefaults, _ onChange: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let watcher = DefaultsChangeWatcher(onChange)
        let calls = watcher.calls
        watcher.token = NotificationCenter.default.addObserver(forName: UserDefaults.didChangeNotification, object: defaults, queue: nil) { _ in
            calls.schedule()
        }
        return { watcher.stop() }
    }

    /// Stops the watch; calling it again does nothing.
    func stop() {
        guard calls.stop() else { return }
        if let token { NotificationCenter.default.removeObserver(token) }
    }
}

/// The calls of a `UserDefaults` watcher's handler: each on a queue of its own, never on the
/// notifying thread, and none that starts after ``stop()`` returns (except one that was
/// starting on the queue at that moment).
final class WatchCalls: Sendable {
    private let queue: DispatchQueue
    private let stopped = Locked(false)
    private let onChange: @Sendable () -> Void

    init(label: String, _ onChange: @escaping @Sendable () -> Void) {
        queue = DispatchQueue(label: label)
        self.onChange = onChange
    }

    /// Queues a call of the handler (dropped if the watch is stopped before it runs).
    func schedule() {
        queue.async { [self] in
            // Checked as the call starts, not held during it: the handler may stop this watch.
            guard !stopped.withLock({ $0 }) else { return }
            onChange()
        }
    }

    /// Stops the calls; returns whether this was the first stop.
    @discardableResult
    func stop() -> Bool {
        stopped.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

#if canImport(ObjectiveC)
    /// Apple platforms only (not built on Linux): key-value observing of one `UserDefaults`
    /// key, which reports changes made by this process and, through `cfprefsd`, by others.
    /// The observer is told on a queue of its own, never on the writer's stack (which may hold
    /// the library's locks).
    final class DefaultsKeyObserver: NSObject, @unchecked Sendable {  // set up in `start`, then immutable
        private let defaults: UserDefaults
        private let key: String
        private let calls: WatchCalls

        private init(defaults: UserDefaults, key: String, onChange: @escaping @Sendable () -> Void) {
            self.defaults = defaults
            self.key = key
            calls = WatchCalls(label: "PersistentPrefs.DefaultsKeyObserver", onChange)
        }

        /// Starts observing `key`; returns how to stop. Keys with a `.` are key paths to KVO, so
        /// they are not observed here (`nil`: see ``DefaultsChangeWatcher``).
        static func start(_ defaults: UserDefaults, key: String, _ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
            guard !key.contains(".") else { return nil }
            let observer = DefaultsKeyObserver(defaults: defaults, key: key, onChange: onChange)
            defaults.addObserver(observer, forKeyPath: key, options: [.new], context: nil)
            return { observer.stop() }
        }

        /// Stops observing; calling it again does nothing.
        func stop() {
            guard calls.stop() else { return }
            defaults.removeObserver(self, forKeyPath: key)
        }

        override func observeValue(
            forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?, context: UnsafeMutableRawPointer?
        ) {
            calls.schedule()
        }
    }
#endif

// MARK: - System layers

// A suite's site and vendor defaults are files named as the suite's own file, in each folder of
// `$XDG_CONFIG_DIRS` and in the vendor folder: `/etc/xdg/<suite>.plist` (root keys at the top
// level, as in the user's file). On Apple platforms `cfprefsd` owns the files, so there are none.
extension UserDefaultsStore {
    func layerFiles(root: String) -> [LayerFile] {
        handle.layerFiles
    }

    /// Values `UserDefaults` itself layers: a set an administrator forces (managed preferences on
    /// Apple platforms; `objectIsForced(forKey:)`), locked whole above everything, and a set
    /// registered with `register(defaults:)`, beneath everything. (On Linux neither exists:
    /// swift-corelibs-foundation forces nothing and keeps its registration domain to itself —
    /// `volatileDomain(forName: registrationDomain)` is empty there — so the suite-file road,
    /// Linux's, asks nothing of `UserDefaults`; `LinuxFoundationFactsTests` checks both facts.)
    func memoryLayers(root: String) -> (above: [LayerStack.Layer], below: [LayerStack.Layer]) {
        guard handle.file == nil else { return ([], []) }
        return handle.withDefaults { defaults in
            var above: [LayerStack.Layer] = []
            var below: [LayerStack.Layer] = []
            if defaults.objectIsForced(forKey: root) {
                let forced = defaults.object(forKey: root).flatMap(PlistValue.stringKeyedDictionary) ?? [:]
                if case .success(let values) = PlistValue.normalizedSet(forced, for: .loading) {
                    above.append(LayerStack.Layer(source: "managed (forced) values", kind: .managed, values: values, locked: [], locksAll: true))
                }
            }
            let registered = defaults.volatileDomain(forName: UserDefaults.registrationDomain)[root]
            if let registered, let set = PlistValue.stringKeyedDictionary(registered), !set.isEmpty,
                case .success(let values) = PlistValue.normalizedSet(set, for: .loading)
            {
                below.append(LayerStack.Layer(source: "registered defaults", kind: .registered, values: values, locked: [], locksAll: false))
            }
            return (above, below)
        }
    }
}

// MARK: - Schema files

extension UserDefaultsStore {
    /// Where the schema of the set under `root` is kept (see ``PrefsSchema``): on Linux
    /// `<suite>.schemas/<root file name>.json` beside the suite's file (the root key named as
    /// ``PlistFileStore`` names its files); `nil` on Apple platforms.
    ///
    /// - Parameter root: A root key.
    /// - Returns: The schema file's URL, or `nil`.
    public func schemaFileURL(forRoot root: String) -> URL? {
        handle.watchedFile.map { SuitePaths.schemaFile(besides: $0, root: root) }
    }

    func schemaFile(root: String) -> URL? {
        handle.file == nil ? nil : schemaFileURL(forRoot: root)
    }
}

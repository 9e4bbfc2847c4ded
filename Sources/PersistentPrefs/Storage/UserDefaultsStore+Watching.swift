import Foundation

// How a `UserDefaultsStore` learns that someone changed a suite: on Linux the suite's file is watched
// (``ChangeWatcher``). On Apple platforms, KVO reports changes of a root key without a "." (other processes' too);
// a root key with a "." (a key path to KVO) and the whole store go through ``DefaultsChangeWatcher`` (this process only).
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

    /// Calls `onChange` whenever the suite key `key` may have changed, until the returned closure is called.
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

/// Watches one `UserDefaults` object through `UserDefaults.didChangeNotification`: reports changes this process makes
/// through that object only (swift-corelibs-foundation posts it for `setPersistentDomain` and `removePersistentDomain`,
/// not `set`: on Linux the suite's file is watched instead). `onChange` runs as ``WatchCalls`` says.
final class DefaultsChangeWatcher: @unchecked Sendable {  // `token` is set once in `start`, then only removed under `calls`
    private let calls: WatchCalls
    private var token: (any NSObjectProtocol)?

    private init(_ onChange: @escaping @Sendable () -> Void) {
        calls = WatchCalls(label: "PersistentPrefs.DefaultsChangeWatcher", onChange)
    }

    /// Starts calling `onChange` after each `didChangeNotification` posted for `defaults`; returns how to stop.
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

/// The calls of a `UserDefaults` watcher's handler: on a queue of its own, never on the notifying thread (which may
/// hold the library's locks), and none that starts after ``stop()`` returns (but one starting at that moment).
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
    /// Key-value observing of one `UserDefaults` key (Apple platforms): reports changes made by this process and,
    /// through `cfprefsd`, by others; `onChange` runs as ``WatchCalls`` says.
    final class DefaultsKeyObserver: NSObject, @unchecked Sendable {  // set up in `start`, then immutable
        private let defaults: UserDefaults
        private let key: String
        private let calls: WatchCalls

        private init(defaults: UserDefaults, key: String, onChange: @escaping @Sendable () -> Void) {
            self.defaults = defaults
            self.key = key
            calls = WatchCalls(label: "PersistentPrefs.DefaultsKeyObserver", onChange)
        }

        /// Starts observing `key`; returns how to stop, or `nil` for a key with a `.` (a key path to KVO).
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

// A suite's site and vendor defaults are files named as the suite's own (`/etc/xdg/<suite>.plist`, root keys at
// the top level); none on Apple platforms.
extension UserDefaultsStore {
    func layerFiles(root: String) -> [LayerFile] { handle.layerFiles }

    /// Values `UserDefaults` itself layers: a set an administrator forces (`objectIsForced(forKey:)`), locked whole
    /// above everything, and one registered with `register(defaults:)`, beneath everything. The suite-file road asks
    /// nothing: swift-corelibs-foundation forces nothing and hides its registration domain (`LinuxFoundationFactsTests`).
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
    /// `<suite>.schemas/<root file name>.json` beside the suite's file; `nil` on Apple platforms. A schema this
    /// process's writes publish is there when it answers.
    public func schemaFileURL(forRoot root: String) -> URL? {
        SchemaPublishing.waitForAll()
        return handle.watchedFile.map { SuitePaths.schemaFile(besides: $0, root: root) }
    }

    func schemaFile(root: String) -> URL? { handle.file.map { SuitePaths.schemaFile(besides: $0, root: root) } }
}

import Foundation

/// A store that can tell when any of its sets may have changed (its suite file, its folder).
protocol StoreWatchable: PrefsStore {
    /// Starts calling `onChange` whenever some set may have changed; `nil` when it cannot watch.
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?
    /// Why changes reach the store's watch late, or `nil`.
    var allSetsWatchProblem: PersistentPrefs.PrefsError? { get }
}

extension UserDefaultsStore: StoreWatchable {
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        if let file = handle.watchedFile { return ChangeWatcher.shared.watching(file, onChange) }
        return DefaultsChangeWatcher.start(handle.defaults, onChange)  // this process's changes only
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        handle.watchedFile.flatMap(ChangeWatcher.shared.problem(for:))
    }
}

extension PlistFileStore: StoreWatchable {
    func watchAllSets(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        ChangeWatcher.shared.watching(URL(fileURLWithPath: directory.path + "/"), onChange)
    }

    var allSetsWatchProblem: PersistentPrefs.PrefsError? {
        ChangeWatcher.shared.problem(for: URL(fileURLWithPath: directory.path + "/"))
    }
}

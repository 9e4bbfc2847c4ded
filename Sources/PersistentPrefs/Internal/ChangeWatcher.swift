import Foundation

/// The one watcher of this process: tells listeners when a file they care about may have been
/// changed by anyone (another process, plain `UserDefaults`, the harness, this process).
///
/// Listeners are registered per file; the operating system watches the files' folders (an
/// atomic replace gives the file a new inode, so the file itself cannot be watched). On Linux
/// that is one `inotify` descriptor and one thread blocked in `poll` (see ``InotifyBackend``);
/// on Apple platforms, dispatch sources on the folders (see ``DispatchBackend``). The backend
/// starts with the first listener and stops ``linger`` after the last one goes (so a program that
/// makes and drops one instance after another does not start a thread for each), so an idle
/// process keeps nothing running and nothing polls.
///
/// Listeners run on the backend's thread, never under a lock of the watcher; several changes
/// that arrive together are reported once.
final class ChangeWatcher: @unchecked Sendable {  // `state` is a Locked
    /// What a listener is called with: nothing, it re-reads what it needs.
    typealias Listener = @Sendable () -> Void

    /// The watcher of this process.
    static let shared = ChangeWatcher()

    /// How long the backend outlives its last listener.
    let linger: TimeInterval

    /// A watcher whose backend stops `linger` seconds after its last listener goes.
    init(linger: TimeInterval = 1) {
        self.linger = linger
    }

    /// Names one registration, for ``unwatch(_:)``.
    struct Token: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct Entry {
        let directory: String
        let name: String
        let listener: Listener
    }

    private struct State {
        var nextID = 0
        var entries: [Int: Entry] = [:]
        /// How many entries watch each folder.
        var directories: [String: Int] = [:]
        var backend: (any WatchBackend)?
        /// Bumped whenever the last listener goes: a scheduled stop happens only if no listener
        /// came and went since it was scheduled.
        var idleGeneration = 0
    }

    private let state = Locked(State())

    /// Calls `listener` whenever `file` may have changed (created, replaced, rewritten, removed,
    /// or its folder created or removed), until ``unwatch(_:)``.
    ///
    /// - Returns: The registration, or `nil` where this platform has no way to watch files.
    func watch(_ file: URL, _ listener: @escaping Listener) -> Token? {
        let directory = file.deletingLastPathComponent().standardizedFileURL.path
        let name = file.lastPathComponent
        return state.withLock { state in
            if state.backend == nil {
                state.backend = Self.makeBackend { [weak self] changes in self?.deliver(changes) }
            }
            guard let backend = state.backend else { return nil }
            state.nextID += 1
            state.entries[state.nextID] = Entry(directory: directory, name: name, listener: listener)
            state.directories[directory, default: 0] += 1
            if state.directories[directory] == 1 { backend.add(directory) }
            return Token(id: state.nextID)
        }
    }

    /// Ends a registration made by ``watch(_:_:)``; the backend stops with the last one.
    func unwatch(_ token: Token) {
        let idle: Int? = state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: token.id) else { return nil }
            let remaining = (state.directories[entry.directory] ?? 1) - 1
            state.directories[entry.directory] = remaining > 0 ? remaining : nil
            if remaining <= 0 { state.backend?.remove(entry.directory) }
            guard state.entries.isEmpty else { return nil }
            state.idleGeneration += 1
            return state.idleGeneration
        }
        guard let idle else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + linger) { self.stop(ifIdleSince: idle) }
    }

    /// Stops the backend if nothing was watched since the last listener went (`generation`).
    private func stop(ifIdleSince generation: Int) {
        let stopped: (any WatchBackend)? = state.withLock { state in
            guard state.entries.isEmpty, state.idleGeneration == generation else { return nil }
            defer { state.backend = nil }
            return state.backend
        }
        stopped?.stop()
    }

    /// Whether a backend is running (for tests: it stops ``linger`` after the last registration).
    var isRunning: Bool { state.withLock { $0.backend != nil } }

    /// Calls the listeners of the files that changed: by folder, the names that changed, or
    /// `nil` when anything in the folder may have (the folder appeared or went, or events were
    /// lost).
    private func deliver(_ changes: [String: Set<String>?]) {
        let listeners = state.withLock { state in
            state.entries.values.compactMap { entry -> Listener? in
                guard let names = changes[entry.directory] else { return nil }
                return names.map { $0.contains(entry.name) } ?? true ? entry.listener : nil
            }
        }
        for listener in listeners { listener() }
    }

    private static func makeBackend(_ report: @escaping @Sendable ([String: Set<String>?]) -> Void) -> (any WatchBackend)? {
        #if canImport(Glibc) || canImport(Musl)
            return InotifyBackend(report: report)
        #elseif canImport(Darwin)
            return DispatchBackend(report: report)
        #else
            return nil
        #endif
    }
}

/// How the operating system watches folders for ``ChangeWatcher``.
protocol WatchBackend: AnyObject, Sendable {
    /// Starts watching `directory` (which may not exist yet).
    func add(_ directory: String)
    /// Stops watching `directory`.
    func remove(_ directory: String)
    /// Stops for good and releases what the backend holds.
    func stop()
}

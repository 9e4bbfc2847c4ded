import Foundation

/// The one watcher of this process: tells listeners when a file they care about may have been changed by anyone.
/// Listeners are registered per file; the operating system watches the files' folders (an atomic replace gives the
/// file a new inode): ``InotifyBackend`` on Linux, ``DispatchBackend`` on Apple platforms. The backend starts with the
/// first listener and stops ``linger`` after the last one goes, so an idle process keeps nothing running. Where the
/// operating system cannot watch, the files are looked at every ``pollInterval`` and the backend tried again every
/// ``retryInterval``; ``degradation(for:)`` says so meanwhile. Each listener runs as ``Delivery`` says: a slow or
/// stuck one delays no other.
final class ChangeWatcher: @unchecked Sendable {  // `state` is a Locked; the rest is immutable
    /// What a listener is called with: nothing, it re-reads what it needs.
    typealias Listener = @Sendable () -> Void
    /// What a backend reports: by folder, the names that changed, or `nil` when anything in it may have.
    typealias Report = @Sendable ([String: Set<String>?]) -> Void
    /// Makes a backend, or throws why the operating system cannot watch.
    typealias BackendFactory = @Sendable (@escaping Report) throws -> any WatchBackend

    /// The watcher of this process.
    static let shared = ChangeWatcher()

    /// How long the backend outlives its last listener (a program making and dropping instances starts no thread for each).
    let linger: TimeInterval
    /// How often files are looked at while the backend cannot watch them.
    let pollInterval: TimeInterval
    /// How often a backend that failed is tried again.
    let retryInterval: TimeInterval
    private let makeBackend: BackendFactory

    /// A watcher with these intervals (see the properties) and backend (the platform's by default).
    init(
        linger: TimeInterval = 1, pollInterval: TimeInterval = 0.5, retryInterval: TimeInterval = 5,
        makeBackend: @escaping BackendFactory = ChangeWatcher.platformBackend
    ) {
        self.linger = linger
        self.pollInterval = pollInterval
        self.retryInterval = retryInterval
        self.makeBackend = makeBackend
    }

    /// Names one registration, for ``unwatch(_:)``.
    struct Token: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct Entry {
        let directory: String
        let name: String
        let delivery: Delivery

        var path: String { directory + "/" + name }
    }

    private struct State {
        var nextID = 0
        var entries: [Int: Entry] = [:]
        /// How many entries watch each folder.
        var directories: [String: Int] = [:]
        var backend: (any WatchBackend)?
        /// Why the backend could not be made, while it cannot.
        var backendFailure: String?
        /// When the backend (or a folder it could not watch) was last tried.
        var lastAttempt: TimeInterval = 0
        /// Folders the running backend cannot watch, with why.
        var unwatchable: [String: String] = [:]
        /// The files looked at by polling, as last seen (`nil`: absent).
        var polled: [String: FileSignature?] = [:]
        var poller: (any DispatchSourceTimer)?
        /// Bumped whenever the last listener goes: a scheduled stop happens only if none came and went since.
        var idleGeneration = 0

        /// Whether files in `directory` are polled.
        func isPolled(_ directory: String) -> Bool { backend == nil || unwatchable[directory] != nil }
    }

    private let state = Locked(State())
    private let pollQueue = DispatchQueue(label: "PersistentPrefs.ChangeWatcher.poll")

    /// Calls `listener` whenever `file` may have changed (created, replaced, rewritten, removed, or its folder created
    /// or removed), until ``unwatch(_:)`` with the token returned. A folder URL ending in `/` watches every file in it
    /// (while polling, the folder's own time and size, which a file rewritten in place does not change).
    func watch(_ file: URL, _ listener: @escaping Listener) -> Token {
        let wholeFolder = file.absoluteString.hasSuffix("/")
        let directory = (wholeFolder ? file : file.deletingLastPathComponent()).standardizedFileURL.path
        let entry = Entry(directory: directory, name: wholeFolder ? "" : file.lastPathComponent, delivery: Delivery(listener))
        return state.withLock { state in
            if state.backend == nil, state.backendFailure == nil { startBackend(&state) }
            state.nextID += 1
            state.entries[state.nextID] = entry
            state.directories[directory, default: 0] += 1
            if state.directories[directory] == 1, let backend = state.backend {
                backend.add(directory)
                state.unwatchable = backend.failures(retrying: false)
            }
            if state.isPolled(directory) {
                if state.polled[entry.path] == nil { state.polled[entry.path] = .some(FileSignature.of(entry.path)) }
                startPolling(&state)
            }
            return Token(id: state.nextID)
        }
    }

    /// Ends a registration: no call of its listener starts after this returns, but one already starting.
    func unwatch(_ token: Token) {
        let idle: Int? = state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: token.id) else { return nil }
            entry.delivery.cancel()
            if !state.entries.values.contains(where: { $0.path == entry.path }) { state.polled[entry.path] = nil }
            let remaining = (state.directories[entry.directory] ?? 1) - 1
            state.directories[entry.directory] = remaining > 0 ? remaining : nil
            if remaining <= 0 {
                state.backend?.remove(entry.directory)
                state.unwatchable[entry.directory] = nil
            }
            guard state.entries.isEmpty else { return nil }
            state.idleGeneration += 1
            return state.idleGeneration
        }
        guard let idle else { return }
        Detached.run(after: linger) { self.stop(ifIdleSince: idle) }
    }

    /// Why changes of `file` are found by polling, or `nil` when the operating system reports them (or it is not watched).
    func degradation(for file: URL) -> String? {
        let directory = (file.absoluteString.hasSuffix("/") ? file : file.deletingLastPathComponent()).standardizedFileURL.path
        return state.withLock { state in
            guard state.directories[directory] != nil else { return nil }
            guard let reason = state.backendFailure ?? state.unwatchable[directory] else { return nil }
            let (poll, retry) = (String(format: "%g", pollInterval), String(format: "%g", retryInterval))
            return "\(reason); the library looks at the file every \(poll) s instead and tries again every \(retry) s"
        }
    }

    /// Stops the backend if nothing was watched since the last listener went (`generation`).
    private func stop(ifIdleSince generation: Int) {
        let stopped: ((any WatchBackend)?, (any DispatchSourceTimer)?)? = state.withLock { state in
            guard state.entries.isEmpty, state.idleGeneration == generation else { return nil }
            defer {
                state.backend = nil
                state.backendFailure = nil
                state.unwatchable = [:]
                state.polled = [:]
                state.poller = nil
            }
            return (state.backend, state.poller)
        }
        stopped?.0?.stop()
        stopped?.1?.cancel()
    }

    #if DEBUG
        /// Whether a backend or the poller is running (for the tests).
        var isRunning: Bool { state.withLock { $0.backend != nil || $0.poller != nil } }
    #endif

    /// Signals the listeners of the files that changed (a ``Report``).
    private func deliver(_ changes: [String: Set<String>?]) {
        guard !changes.isEmpty else { return }
        let deliveries = state.withLock { state -> [Delivery] in
            // A backend learns that a folder cannot be watched while it reports (one reappeared).
            if let backend = state.backend {
                state.unwatchable = backend.failures(retrying: false)
                if !state.unwatchable.isEmpty { startPolling(&state) }
            }
            return state.entries.values.compactMap { entry -> Delivery? in
                guard let names = changes[entry.directory] else { return nil }
                return names.map { entry.name.isEmpty || $0.contains(entry.name) } ?? true ? entry.delivery : nil
            }
        }
        for delivery in deliveries { delivery.signal() }
    }

    // MARK: - The backend, and polling where it cannot watch

    /// Makes the backend and gives it every folder in use; on failure, notes why (so files are polled).
    private func startBackend(_ state: inout State) {
        state.lastAttempt = ProcessInfo.processInfo.systemUptime
        do {
            let backend = try makeBackend { [weak self] changes in self?.deliver(changes) }
            for directory in state.directories.keys { backend.add(directory) }
            state.backend = backend
            state.backendFailure = nil
            state.unwatchable = backend.failures(retrying: false)
        } catch {
            state.backendFailure = "\(error)"
        }
    }

    /// Starts the timer that polls, unless it runs.
    private func startPolling(_ state: inout State) {
        guard state.poller == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: pollQueue)
        timer.schedule(deadline: .now() + pollInterval, repeating: pollInterval, leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.poll() }
        state.poller = timer
        timer.resume()
    }

    /// One round of polling: the backend (or its unwatchable folders) tried again when due, the polled files looked
    /// at, their listeners told; the timer stops when nothing is polled.
    private func poll() {
        var changes: [String: Set<String>?] = [:]
        let paths = state.withLock { state -> [String] in
            guard !state.entries.isEmpty else { return [] }  // lingering: nothing to look at or retry
            let now = ProcessInfo.processInfo.systemUptime
            if now - state.lastAttempt >= retryInterval {
                let polledBefore = Set(state.directories.keys.filter { state.isPolled($0) })
                if state.backend == nil {
                    startBackend(&state)
                } else if let backend = state.backend {
                    state.lastAttempt = now
                    state.unwatchable = backend.failures(retrying: true)
                }
                // Watched again: what changed since the last look is not reported, so every listener there reads again.
                for directory in polledBefore where !state.isPolled(directory) { changes[directory] = .some(nil) }
            }
            state.polled = state.polled.filter { state.isPolled(($0.key as NSString).deletingLastPathComponent) }
            for entry in state.entries.values where state.isPolled(entry.directory) && state.polled[entry.path] == nil {
                state.polled[entry.path] = .some(FileSignature.of(entry.path))
            }
            if state.polled.isEmpty, state.backend != nil {
                state.poller?.cancel()
                state.poller = nil
            }
            return Array(state.polled.keys)
        }
        // Looked at outside the lock: a slow file system delays only this timer.
        let seen = paths.map { ($0, FileSignature.of($0)) }
        state.withLock { state in
            for (path, signature) in seen {
                guard let previous = state.polled[path], previous != signature else { continue }
                state.polled[path] = .some(signature)
                if path.hasSuffix("/") {  // a whole folder's entry: anything in it may have changed
                    changes[String(path.dropLast())] = .some(nil)
                    continue
                }
                let url = URL(fileURLWithPath: path)
                let directory = url.deletingLastPathComponent().path
                if changes[directory] != .some(nil) { changes[directory, default: []]?.insert(url.lastPathComponent) }
            }
        }
        deliver(changes)
    }

    /// The platform's backend: `inotify` on Linux, dispatch sources on Apple platforms.
    static let platformBackend: BackendFactory = { report in
        #if canImport(Glibc) || canImport(Musl)
            return try InotifyBackend(report: report)
        #elseif canImport(Darwin)
            return DispatchBackend(report: report)
        #else
            throw BackendUnavailable(reason: "this platform has no way to watch files")
        #endif
    }
}

/// Why a watch backend could not start.
struct BackendUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

// MARK: - Delivery

extension ChangeWatcher {
    /// Runs one listener on a thread of its own (``Detached``), one call at a time, never under a lock of the watcher;
    /// signals that arrive while it runs make one more call after it, so a stuck listener delays only itself.
    fileprivate final class Delivery: @unchecked Sendable {  // `flags` is a Locked; the rest is immutable
        private let listener: Listener
        private let flags = Locked((running: false, pending: false, cancelled: false))

        init(_ listener: @escaping Listener) {
            self.listener = listener
        }

        /// Asks for a call of the listener.
        func signal() {
            let starts = flags.withLock { flags -> Bool in
                guard !flags.cancelled else { return false }
                flags.pending = true
                guard !flags.running else { return false }
                flags.running = true
                return true
            }
            if starts { Detached.run { self.run() } }
        }

        /// No call starts after this returns (one already starting may still run).
        func cancel() { flags.withLock { $0.cancelled = true } }

        private func run() {
            while flags.withLock({ flags -> Bool in
                guard flags.pending, !flags.cancelled else {
                    flags.running = false
                    return false
                }
                flags.pending = false
                return true
            }) {
                listener()
            }
        }
    }
}

/// How the operating system watches folders for ``ChangeWatcher``.
protocol WatchBackend: AnyObject, Sendable {
    /// Starts watching `directory` (which may not exist yet: it is waited for).
    func add(_ directory: String)
    /// Stops watching `directory`.
    func remove(_ directory: String)
    /// Stops for good and releases what the backend holds.
    func stop()
    /// The folders asked for that cannot be watched (not those that do not exist yet), with why; with `retrying`,
    /// after trying each again.
    func failures(retrying: Bool) -> [String: String]
}

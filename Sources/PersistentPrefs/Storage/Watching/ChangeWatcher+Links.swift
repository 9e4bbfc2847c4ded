import Foundation

// MARK: - Files that are symbolic links

extension ChangeWatcher {
    /// ``watching(_:_:)`` for a file that may be a symbolic link (a site default linked elsewhere): every file its chain
    /// of links leads to is watched too, and the chain is followed again before `onChange` when a link changes.
    /// Returns what stops every watch of the chain.
    func watchingFollowingLinks(_ file: URL, _ onChange: @escaping Listener) -> @Sendable () -> Void {
        let links = LinkWatch(watcher: self, onChange: onChange)
        let own = watching(file) { links.changed() }
        links.follow(from: file.path)
        return {
            own()
            links.cancel()
        }
    }

    /// The targets one watched file leads to, each watched while the chain leads there.
    fileprivate final class LinkWatch: Sendable {
        private let watcher: ChangeWatcher
        private let onChange: Listener
        /// The chain's start, the targets watched (by path, with how to stop each), and whether the watch was stopped:
        /// one lock, taken before the watcher's own, never under it.
        private let state = Locked((start: "", targets: [String: @Sendable () -> Void](), cancelled: false))

        init(watcher: ChangeWatcher, onChange: @escaping Listener) {
            self.watcher = watcher
            self.onChange = onChange
        }

        /// Watches the files the chain of links from `path` leads to.
        func follow(from path: String) {
            state.withLock { $0.start = path }
            refresh()
        }

        /// A file of the chain changed: the chain is followed again, then the listener called.
        func changed() {
            refresh()
            onChange()
        }

        /// Stops watching every target.
        func cancel() {
            let stops = state.withLock { state -> [@Sendable () -> Void] in
                state.cancelled = true
                defer { state.targets = [:] }
                return Array(state.targets.values)
            }
            for stop in stops { stop() }
        }

        /// Watches the targets the chain leads to now and stops watching those it no longer does.
        private func refresh() {
            let stops = state.withLock { state -> [@Sendable () -> Void] in
                guard !state.cancelled else { return [] }
                let chain = Self.targets(from: state.start)
                var stops: [@Sendable () -> Void] = []
                for (path, stop) in state.targets where !chain.contains(path) {
                    stops.append(stop)
                    state.targets[path] = nil
                }
                for path in chain where state.targets[path] == nil {
                    state.targets[path] = watcher.watching(URL(fileURLWithPath: path)) { [self] in changed() }
                }
                return stops
            }
            for stop in stops { stop() }
        }

        /// The files the chain of links from `path` names, in order; at most 40 links are followed, as the kernel does.
        private static func targets(from path: String) -> [String] {
            var chain: [String] = []
            var current = path
            for _ in 0..<40 {
                var info = stat()
                guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { break }
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(current, &buffer, buffer.count - 1)
                guard count > 0 else { break }
                let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let folder = (current as NSString).deletingLastPathComponent
                current = target.hasPrefix("/") ? target : (folder as NSString).appendingPathComponent(target)
                current = (current as NSString).standardizingPath
                guard !chain.contains(current), current != path else { break }
                chain.append(current)
            }
            return chain
        }
    }
}

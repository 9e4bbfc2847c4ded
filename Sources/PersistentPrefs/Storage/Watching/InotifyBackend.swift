#if canImport(Glibc) || canImport(Musl)
    import Foundation
    #if canImport(Glibc)
        import Glibc
    #else
        import Musl
    #endif

    /// ``ChangeWatcher``'s backend on Linux: one `inotify` descriptor for every watched folder, read by one thread
    /// that sleeps in `poll` (``stop()`` wakes it through a socket pair).
    /// An atomic replace is `IN_MOVED_TO`, an in-place rewrite (plain `UserDefaults`) `IN_CLOSE_WRITE`, a removal
    /// `IN_DELETE` or `IN_MOVED_FROM`. A folder that does not exist yet (or went away) is watched through its nearest
    /// existing ancestor until it appears. A folder the kernel will not watch is listed in ``failures(retrying:)``.
    final class InotifyBackend: WatchBackend, @unchecked Sendable {  // `table` is a Locked; the descriptors are immutable
        private static let fileEvents = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
        private static let folderEvents = UInt32(IN_DELETE_SELF | IN_MOVE_SELF)
        private static let mask = fileEvents | folderEvents | UInt32(IN_ONLYDIR)

        private struct Table {
            /// The folders asked for, by path: their watch, or `nil` while they do not exist.
            var folders: [String: Int32?] = [:]
            /// Ancestors watched until a missing folder appears.
            var ancestors: [String: Int32] = [:]
            /// Folders that exist (or whose ancestor does) but cannot be watched, with why.
            var failures: [String: String] = [:]
            var stopped = false
            /// Why the thread ended on its own (a failed `poll`); every folder is then in ``failures(retrying:)``.
            var ended: String?
        }

        private let table = Locked(Table())
        private let descriptor: Int32
        private let wake: (read: Int32, write: Int32)
        private let report: @Sendable ([String: Set<String>?]) -> Void

        #if DEBUG
            // For the tests.
            private let pollFails = Locked(false)
            let threadEnded = DispatchSemaphore(value: 0)
            /// The descriptor ``stop()`` wakes the thread through.
            var wakeDescriptor: Int32 { wake.write }

            /// Makes the thread's next `poll`, after the next event, fail as with `EINVAL`.
            func failNextPoll() { pollFails.withLock { $0 = true } }
        #endif

        /// Starts the thread that reads the events, or throws ``BackendUnavailable`` saying why there is no `inotify`
        /// instance.
        init(report: @escaping @Sendable ([String: Set<String>?]) -> Void) throws {
            let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            guard descriptor >= 0 else {
                let failure = errno
                var reason = "inotify_init1 failed: \(String(cString: strerror(failure)))"
                if failure == EMFILE {
                    reason += " (every inotify instance this user may have is in use, see fs.inotify.max_user_instances, or the process is out of file descriptors)"
                }
                throw BackendUnavailable(reason: reason)
            }
            // The wake channel: a socket pair made close-on-exec in the same call, so a `fork` and `exec` by another
            // thread never inherits it (`pipe2` is not visible to Swift through Glibc).
            #if canImport(Glibc)
                let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            #else
                let kind = SOCK_STREAM | SOCK_CLOEXEC
            #endif
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, kind, 0, &ends) == 0 else {
                let reason = "socketpair failed: \(String(cString: strerror(errno)))"
                close(descriptor)
                throw BackendUnavailable(reason: reason)
            }
            self.descriptor = descriptor
            wake = (ends[0], ends[1])
            self.report = report
            let thread = Thread { [self] in run() }
            thread.name = "PersistentPrefs.ChangeWatcher"
            thread.stackSize = 1 << 18
            thread.start()
        }

        func add(_ directory: String) {
            table.withLock { table in
                if let ended = table.ended, table.folders[directory] == nil {
                    table.folders[directory] = .some(nil)
                    table.failures[directory] = ended
                }
                guard !table.stopped, table.folders[directory] == nil else { return }
                table.folders[directory] = .some(nil)
                attachMissing(&table)
            }
        }

        func remove(_ directory: String) {
            table.withLock { table in
                if table.ended != nil {
                    table.folders[directory] = nil
                    table.failures[directory] = nil
                }
                guard !table.stopped, let watch = table.folders.removeValue(forKey: directory) else { return }
                table.failures[directory] = nil
                if let watch, !isInUse(watch, table) { inotify_rm_watch(descriptor, watch) }
                attachMissing(&table)
            }
        }

        func failures(retrying: Bool) -> [String: String] {
            table.withLock { table in
                if retrying, !table.stopped, !table.failures.isEmpty { attachMissing(&table) }
                return table.failures
            }
        }

        /// Ends the thread. Writes into the wake channel only while the thread has not closed it (it closes its
        /// descriptors under the same lock, once `stopped` is set), so never into a descriptor number reused since.
        func stop() {
            table.withLock { table in
                guard !table.stopped else { return }
                table.stopped = true
                var byte: UInt8 = 1
                _ = write(wake.write, &byte, 1)  // the one byte ever written: never blocks
            }
        }

        // MARK: - The thread

        private func run() {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            var failure: String?
            while true {
                var ready = poll(&fds, 2, -1)
                #if DEBUG
                    if pollFails.withLock({ $0 }) {
                        ready = -1
                        errno = EINVAL
                    }
                #endif
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 {
                    failure = "inotify's reading thread stopped: poll failed: \(String(cString: strerror(errno)))"
                    break
                }
                if fds[1].revents != 0 { break }
                var changes: [String: Set<String>?] = [:]
                // Everything queued now is reported together: a burst of writes costs one reload.
                while case let count = read(descriptor, &buffer, buffer.count), count > 0 {
                    collect(buffer.prefix(count), into: &changes)
                }
                if !changes.isEmpty { report(changes) }
            }
            // Under the lock, with `stopped` set: no `add`, `remove` or `stop` uses a closed descriptor.
            let unwatched = table.withLock { table -> [String] in
                table.stopped = true
                close(descriptor)
                close(wake.read)
                close(wake.write)
                guard let failure else { return [] }
                table.ended = failure
                for folder in table.folders.keys { table.failures[folder] = failure }
                return Array(table.folders.keys)
            }
            // Ended on its own: the watcher polls the folders (from the failures), and their listeners read again.
            if !unwatched.isEmpty { report(Dictionary(uniqueKeysWithValues: unwatched.map { ($0, Set<String>?.none) })) }
            #if DEBUG
                threadEnded.signal()
            #endif
        }

        /// Reads the events in `bytes` (whole `inotify_event` records) into `changes`.
        private func collect(_ bytes: ArraySlice<UInt8>, into changes: inout [String: Set<String>?]) {
            table.withLock { table in
                var offset = bytes.startIndex
                var appeared = false
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= bytes.endIndex {
                    let event = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset - bytes.startIndex, as: inotify_event.self) }
                    let nameStart = offset + header
                    let nameEnd = min(nameStart + Int(event.len), bytes.endIndex)
                    let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                    offset = nameEnd
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                        // Events were lost: anything may have changed.
                        for folder in table.folders.keys { changes[folder] = .some(nil) }
                        continue
                    }
                    if event.mask & UInt32(IN_ISDIR) != 0 && event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                        appeared = true
                    }
                    for (folder, watch) in table.folders where watch == event.wd {
                        if event.mask & (Self.folderEvents | UInt32(IN_IGNORED)) != 0 {
                            // The folder went away: its files are gone; wait for it to come back.
                            changes[folder] = .some(nil)
                            table.folders[folder] = .some(nil)
                            appeared = true
                        } else if !name.isEmpty, changes[folder] != .some(nil) {
                            changes[folder, default: []]?.insert(name)
                        }
                    }
                }
                if appeared {
                    let missing = Set(table.folders.filter { $0.value == nil }.keys)
                    attachMissing(&table)
                    // A folder that appeared may already hold files (one that cannot be watched is reported too).
                    for folder in missing where table.folders[folder] != .some(nil) || table.failures[folder] != nil {
                        changes[folder] = .some(nil)
                    }
                }
            }
        }

        // MARK: - Watches

        /// Watches each missing folder that now exists, and the nearest existing ancestor of each one that does not;
        /// drops ancestor watches no longer needed. A folder refused for another reason than its absence goes to `failures`.
        private func attachMissing(_ table: inout Table) {
            var needed: [String: Int32] = [:]
            for (folder, watch) in table.folders where watch == nil {
                table.failures[folder] = nil
                // A folder below the ancestor created between the two watches is never reported: look again while
                // the path grew meanwhile.
                for _ in 0..<16 {
                    let added = inotify_add_watch(descriptor, folder, Self.mask)
                    if added >= 0 {
                        table.folders[folder] = added
                        break
                    }
                    guard errno == ENOENT || errno == ENOTDIR else {
                        table.failures[folder] = Self.refusal(folder)
                        break
                    }
                    guard let ancestor = watchAncestor(of: folder, &table, &needed) else {
                        table.failures[folder] = Self.refusal(folder)
                        break
                    }
                    let below = Self.child(of: ancestor, toward: folder)
                    guard let below, FileManager.default.fileExists(atPath: below) else { break }
                }
            }
            for (ancestor, watch) in table.ancestors where needed[ancestor] == nil {
                table.ancestors[ancestor] = nil
                if !isInUse(watch, table) { inotify_rm_watch(descriptor, watch) }
            }
            table.ancestors.merge(needed) { _, new in new }
        }

        /// Watches the nearest existing ancestor of `folder` (recorded in `needed`); returns it.
        private func watchAncestor(of folder: String, _ table: inout Table, _ needed: inout [String: Int32]) -> String? {
            var ancestor = (folder as NSString).deletingLastPathComponent
            while !ancestor.isEmpty {
                if let known = table.ancestors[ancestor] ?? needed[ancestor] {
                    needed[ancestor] = known
                    return ancestor
                }
                let watch = inotify_add_watch(descriptor, ancestor, Self.mask)
                if watch >= 0 {
                    needed[ancestor] = watch
                    return ancestor
                }
                if ancestor == "/" { return nil }
                ancestor = (ancestor as NSString).deletingLastPathComponent
            }
            return nil
        }

        /// Why the kernel refused a watch for `folder`, from `errno`.
        private static func refusal(_ folder: String) -> String {
            let failure = errno
            var reason = "inotify cannot watch \(folder): \(String(cString: strerror(failure)))"
            if failure == ENOSPC { reason += " (every inotify watch this user may have is in use, see fs.inotify.max_user_watches)" }
            return reason
        }

        /// The path one component below `ancestor` on the way to `folder`, or `nil`.
        private static func child(of ancestor: String, toward folder: String) -> String? {
            let base = ancestor.hasSuffix("/") ? ancestor : ancestor + "/"
            guard folder.hasPrefix(base) else { return nil }
            let rest = folder.dropFirst(base.count)
            guard let first = rest.split(separator: "/").first else { return nil }
            return base + first
        }

        /// Whether some folder or ancestor still relies on `watch` (one folder has one watch, whatever path names it).
        private func isInUse(_ watch: Int32, _ table: Table) -> Bool {
            table.folders.values.contains(watch) || table.ancestors.values.contains(watch)
        }
    }
#endif

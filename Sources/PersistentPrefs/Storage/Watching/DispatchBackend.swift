#if canImport(Darwin)
    import Foundation
    import Darwin

    /// ``ChangeWatcher``'s backend on Apple platforms: a dispatch source on each watched folder
    /// (a file added, replaced or removed writes the folder). A folder that does not exist yet is
    /// looked for again every second until it does; one that cannot be opened (no descriptor
    /// left) is reported as changed every second meanwhile, and listed in ``failures(retrying:)``.
    ///
    /// Apple platforms only (this file does not build on Linux, where ``InotifyBackend`` serves).
    final class DispatchBackend: WatchBackend, @unchecked Sendable {  // `sources` and `refused` are Locked
        private let queue = DispatchQueue(label: "PersistentPrefs.ChangeWatcher")
        private let sources = Locked<[String: any DispatchSourceProtocol]>([:])
        private let refused = Locked<[String: String]>([:])
        private let report: @Sendable ([String: Set<String>?]) -> Void

        init(report: @escaping @Sendable ([String: Set<String>?]) -> Void) {
            self.report = report
        }

        func failures(retrying: Bool) -> [String: String] {
            refused.withLock { $0 }
        }

        func add(_ directory: String) {
            let descriptor = open(directory, O_EVTONLY)
            let failure = errno
            refused.withLock { refused in
                refused[directory] = descriptor < 0 && failure != ENOENT && failure != ENOTDIR
                    ? "cannot watch \(directory): \(String(cString: strerror(failure)))" : nil
            }
            let source: any DispatchSourceProtocol
            if descriptor >= 0 {
                let folder = DispatchSource.makeFileSystemObjectSource(
                    fileDescriptor: descriptor, eventMask: [.write, .delete, .rename], queue: queue)
                folder.setEventHandler { [weak self] in
                    self?.report([directory: nil])
                    if folder.data.contains(.delete) || folder.data.contains(.rename) { self?.reattach(directory) }
                }
                folder.setCancelHandler { close(descriptor) }
                source = folder
            } else {
                let timer = DispatchSource.makeTimerSource(queue: queue)
                timer.schedule(deadline: .now() + 1, repeating: 1)
                timer.setEventHandler { [weak self] in
                    guard access(directory, F_OK) == 0 else { return }
                    self?.reattach(directory)
                    self?.report([directory: nil])
                }
                source = timer
            }
            let replaced = sources.withLock { sources in
                defer { sources[directory] = source }
                return sources[directory]
            }
            replaced?.cancel()
            source.resume()
        }

        func remove(_ directory: String) {
            refused.withLock { $0[directory] = nil }
            sources.withLock { $0.removeValue(forKey: directory) }?.cancel()
        }

        func stop() {
            for source in sources.withLock({ sources in defer { sources = [:] }; return Array(sources.values) }) {
                source.cancel()
            }
        }

        private func reattach(_ directory: String) {
            guard sources.withLock({ $0[directory] != nil }) else { return }
            add(directory)
        }
    }
#endif

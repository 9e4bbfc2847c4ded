#if canImport(Darwin)
    import Foundation
    import Darwin

    /// ``ChangeWatcher``'s backend on Apple platforms: a dispatch source on each watched folder (a file added,
    /// replaced or removed writes the folder), and one on each of its first ``maximumFilesPerFolder`` property-list
    /// files, for a file rewritten in place. A folder that does not exist yet is looked for every second; one that
    /// cannot be opened is reported as changed every second meanwhile, and listed in ``failures(retrying:)``.
    final class DispatchBackend: WatchBackend, @unchecked Sendable {  // `sources` and `refused` are Locked
        private let queue = DispatchQueue(label: "PersistentPrefs.ChangeWatcher")
        private let sources = Locked<[String: any DispatchSourceProtocol]>([:])
        /// By folder, the sources on its property-list files, by name.
        private let fileSources = Locked<[String: [String: any DispatchSourceProtocol]]>([:])
        /// How many files of one folder are watched for writes in place (the others' in-place rewrites are missed).
        static let maximumFilesPerFolder = 64
        private let refused = Locked<[String: String]>([:])
        private let report: @Sendable ([String: Set<String>?]) -> Void

        init(report: @escaping @Sendable ([String: Set<String>?]) -> Void) {
            self.report = report
        }

        func failures(retrying: Bool) -> [String: String] { refused.withLock { $0 } }

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
                    if folder.data.contains(.delete) || folder.data.contains(.rename) {
                        self?.reattach(directory)
                    } else {
                        self?.watchFiles(in: directory)
                    }
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
            watchFiles(in: directory)
        }

        /// Watches each property-list file now in `directory` for writes in place, anew (a renamed-over file is new).
        private func watchFiles(in directory: String) {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                .filter { $0.hasSuffix(".plist") }.sorted().prefix(Self.maximumFilesPerFolder)
            var opened: [String: any DispatchSourceProtocol] = [:]
            for name in names {
                let descriptor = open(directory + "/" + name, O_EVTONLY)
                guard descriptor >= 0 else { continue }
                let file = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write, .extend], queue: queue)
                file.setEventHandler { [weak self] in self?.report([directory: [name]]) }
                file.setCancelHandler { close(descriptor) }
                opened[name] = file
            }
            // Only a folder still watched keeps them, decided under the folders' lock: a `remove` comes first or finds them.
            let (kept, previous) = sources.withLock { sources in
                let kept = sources[directory] != nil
                return fileSources.withLock { all in
                    defer { all[directory] = kept ? opened : nil }
                    return (kept, all[directory] ?? [:])
                }
            }
            for source in previous.values { source.cancel() }
            for source in opened.values {
                // Resumed even when cancelled, so its cancel handler closes its descriptor.
                if !kept { source.cancel() }
                source.resume()
            }
        }

        func remove(_ directory: String) {
            refused.withLock { $0[directory] = nil }
            sources.withLock { $0.removeValue(forKey: directory) }?.cancel()
            for source in (fileSources.withLock { $0.removeValue(forKey: directory) } ?? [:]).values { source.cancel() }
        }

        func stop() {
            for source in sources.withLock({ sources in defer { sources = [:] }; return Array(sources.values) }) {
                source.cancel()
            }
            for source in fileSources.withLock({ all in defer { all = [:] }; return all.values.flatMap(\.values) }) {
                source.cancel()
            }
        }

        private func reattach(_ directory: String) {
            guard sources.withLock({ $0[directory] != nil }) else { return }
            add(directory)
        }
    }
#endif

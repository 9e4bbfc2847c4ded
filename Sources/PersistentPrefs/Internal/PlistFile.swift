import Foundation

/// A property-list file holding one dictionary: read it (moving an unreadable one aside, so
/// it is reported once and never silently replaced) and replace it atomically.
enum PlistFile {
    /// The dictionary in `url`, or `nil` when there is no file.
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - movingAside: Whether an unreadable file is moved aside (a store's own file) or left
    ///     where it is (a file the caller was handed, such as an import or a bundled default).
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)`` for an
    ///   empty, unparseable or non-dictionary file, or
    ///   ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    static func read(_ url: URL, movingAside: Bool = true) throws -> [String: Any]? {
        let unreadable = { (reason: String) -> PersistentPrefs.PrefsError in
            movingAside ? moveAside(url, reason: reason) : .corruptStore(path: url.path, reason: reason)
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return nil
        } catch {
            throw PersistentPrefs.PrefsError.ioError(path: url.path, reason: (error as NSError).localizedDescription)
        }
        guard !data.isEmpty else { throw unreadable("the file is empty") }
        let parsed: Any
        do {
            parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw unreadable("not a property list (\(data.count) bytes)")
        }
        guard let dictionary = PlistValue.stringKeyedDictionary(parsed) else {
            throw unreadable("the top level is not a dictionary")
        }
        return dictionary
    }

    /// Replaces `url` with `dictionary` atomically and durably (removes it when `nil`).
    static func write(_ dictionary: [String: Any]?, to url: URL, format: PropertyListSerialization.PropertyListFormat) throws {
        do {
            guard let dictionary else {
                try AtomicFile.remove(url)
                return
            }
            let data: Data
            do {
                data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: format, options: 0)
            } catch {
                throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: dictionary.keys.sorted())
            }
            try AtomicFile.write(data, to: url)
        } catch let failure as AtomicFile.Failure {
            throw failure.prefsError
        }
    }

    /// Moves an unreadable file aside (`<name>.corrupt-<time>-<id>`) and returns the error
    /// that reports it.
    static func moveAside(_ url: URL, reason: String) -> PersistentPrefs.PrefsError {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "-")
        let aside = url.path + ".corrupt-\(stamp)-\(UUID().uuidString.prefix(8))"
        guard rename(url.path, aside) == 0 else {
            return .corruptStore(path: url.path, reason: "\(reason); it could not be moved aside (\(String(cString: strerror(errno))))")
        }
        try? AtomicFile.syncDirectory(url.deletingLastPathComponent().path)
        return .corruptStore(path: url.path, reason: "\(reason); moved aside to \(aside)")
    }
}

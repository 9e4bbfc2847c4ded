import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``PrefsStore`` that keeps each set in its own binary property-list file in a directory.
///
/// - Each root key has one file, `<encoded root key>.plist`; the name encoding is
///   reversible and cannot leave the directory (`/`, `..`, NUL and other special
///   characters are percent-encoded).
/// - Writes are atomic and durable: the new file is written beside the old one, flushed
///   with `fsync`, renamed over it, and the directory is flushed. A crash leaves the old
///   file or the new one, never a mix.
/// - The binary format round-trips every property-list value exactly (sub-second dates,
///   `-0.0`, 64-bit integers).
/// - A file that cannot be parsed is moved aside (`<name>.plist.corrupt-<timestamp>`) and
///   reported as ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)``;
///   it is never silently replaced.
/// - The directory is created with mode 0700 and files with mode 0600.
///
/// ```swift
/// let store = PlistFileStore(directory: URL(fileURLWithPath: "/var/lib/myapp/prefs"))
/// let prefs = SamplePrefs(key: "Main", store: store)
/// ```
public final class PlistFileStore: PrefsStore, @unchecked Sendable {  // immutable; file access is serialised by `lock`
    /// The directory holding the files.
    public let directory: URL

    /// Identifies the directory.
    public let identifier: String

    private let lock = NSLock()

    /// Root keys whose encoded file name would be longer than this are refused.
    static let maximumFileNameLength = 240

    /// A store for the files in `directory` (created on the first write).
    ///
    /// - Parameter directory: The directory to keep the files in.
    public init(directory: URL) {
        self.directory = directory.standardizedFileURL
        identifier = "plistfile:\(self.directory.path)"
    }

    /// The file that holds the set for `root`.
    ///
    /// - Parameter root: A root key.
    /// - Returns: The file's URL.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)`` when the
    ///   root key is too long for a file name.
    public func fileURL(forRoot root: String) throws -> URL {
        let name = Self.encode(root) + ".plist"
        guard name.utf8.count <= Self.maximumFileNameLength else {
            throw PersistentPrefs.PrefsError.ioError(
                path: directory.path,
                reason: "the root key \"\(root.prefix(40))…\" is too long for a file name (\(root.utf8.count) bytes)"
            )
        }
        return directory.appendingPathComponent(name)
    }

    /// Reads the set for `root`, or `nil` when it has no file.
    ///
    /// - Parameter root: The root key.
    /// - Returns: The stored dictionary, or `nil`.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)``
    ///   (the file is moved aside first) or ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    public func load(root: String) throws -> [String: Any]? {
        let url = try fileURL(forRoot: root)
        return try locked {
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
                return nil
            } catch {
                throw PersistentPrefs.PrefsError.ioError(path: url.path, reason: Self.reason(error))
            }
            let parsed: Any
            do {
                parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
            } catch {
                throw moveAside(url, reason: "not a property list (\(data.count) bytes)")
            }
            guard let dictionary = PlistValue.stringKeyedDictionary(parsed) else {
                throw moveAside(url, reason: "the top level is not a dictionary")
            }
            return dictionary
        }
    }

    /// Writes the set for `root` atomically and durably.
    ///
    /// - Parameters:
    ///   - values: The whole set.
    ///   - root: The root key.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``; the old
    ///   file is then unchanged.
    public func save(_ values: [String: Any], root: String) throws {
        let url = try fileURL(forRoot: root)
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        } catch {
            throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: values.keys.sorted())
        }
        try locked {
            do {
                try AtomicFile.write(data, to: url)
            } catch let failure as AtomicFile.Failure {
                throw failure.prefsError
            }
        }
    }

    /// Removes the file for `root`, durably.
    ///
    /// - Parameter root: The root key.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    public func remove(root: String) throws {
        let url = try fileURL(forRoot: root)
        try locked {
            do {
                try AtomicFile.remove(url)
            } catch let failure as AtomicFile.Failure {
                throw failure.prefsError
            }
        }
    }

    /// The root keys that have a file, sorted.
    ///
    /// - Returns: The root keys present in the directory.
    public func roots() throws -> [String] {
        try locked {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
                return []
            } catch {
                throw PersistentPrefs.PrefsError.ioError(path: directory.path, reason: Self.reason(error))
            }
            return names.compactMap { name in
                guard name.hasSuffix(".plist"), !name.hasPrefix(".") else { return nil }
                return Self.decode(String(name.dropLast(".plist".count)))
            }.sorted()
        }
    }

    // MARK: - File names

    /// Percent-encodes every UTF-8 byte outside `A–Z a–z 0–9 - _`: the result is a safe,
    /// reversible file name (no `/`, no `.`, no NUL, never hidden).
    static func encode(_ root: String) -> String {
        var name = ""
        for byte in root.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                name.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                name += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        // An empty root key still needs a name.
        return name.isEmpty ? "%" : name
    }

    /// The root key for an encoded file name, or `nil` when the name is not one of ours.
    static func decode(_ name: String) -> String? {
        if name == "%" { return "" }
        var bytes: [UInt8] = []
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        let root = String(decoding: bytes, as: UTF8.self)
        return encode(root) == name ? root : nil
    }

    // MARK: - Private

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Moves an unreadable file aside and returns the error that reports it.
    private func moveAside(_ url: URL, reason: String) -> PersistentPrefs.PrefsError {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "-")
        let aside = url.path + ".corrupt-\(stamp)-\(UUID().uuidString.prefix(8))"
        guard rename(url.path, aside) == 0 else {
            return .corruptStore(path: url.path, reason: "\(reason); it could not be moved aside (\(String(cString: strerror(errno))))")
        }
        try? AtomicFile.syncDirectory(directory.path)
        return .corruptStore(path: url.path, reason: "\(reason); moved aside to \(aside)")
    }

    private static func reason(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

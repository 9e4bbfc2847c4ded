import Foundation

/// A property-list file holding one dictionary: read it (moving a damaged one aside, so it is reported once and never
/// silently replaced) and replace it atomically. Other programs may rewrite it in place while it is read (`UserDefaults`
/// on Linux does, without a lock), so an empty or unparseable file is read again until it parses or stays the same for
/// ``quietPeriod``: only a file unreadable while nobody changes it is damaged. A binary file is checked
/// (``BinaryPlistCheck``) before Foundation parses it, so no file can crash the process.
enum PlistFile {
    /// How long an unreadable file must stay unchanged before it counts as damaged.
    static let quietPeriod: TimeInterval = 0.3
    /// How long a file may keep changing under a reader before the read gives up (reported, not moved aside).
    static let busyLimit: TimeInterval = 3
    /// Files larger than this are not read (too slow and large to parse); the error names the size.
    static let maximumReadSize = 64 << 20

    /// The dictionary in `url`, or `nil` when there is no file. A damaged file is moved aside when `movingAside`
    /// (a store's own file), else left where it is (a file the caller was handed: an import, a bundled default).
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/corruptStore(path:reason:)`` for an empty, unparseable or
    ///   non-dictionary file, or ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)``.
    static func read(_ url: URL, movingAside: Bool = true) throws -> [String: Any]? {
        try readSigned(url, movingAside: movingAside).dictionary
    }

    /// ``read(_:movingAside:)``, with the signature of the version read and the ``digest(_:)`` of its bytes (`nil` when
    /// there is no file; no digest for a file repaired while being read). With `reusingWritten` (the write path, which
    /// encodes the suite again anyway) the dictionary is normalised, and one this process wrote
    /// (``remember(_:as:forFileAt:)``) stands for its bytes while the file holds exactly them; readers get only what a
    /// parser produced, so every process reads the same values from the same bytes.
    static func readSigned(_ url: URL, movingAside: Bool = true, reusingWritten: Bool = false) throws -> (
        dictionary: [String: Any]?, signature: FileSignature?, digest: UInt64?
    ) {
        try readSigned(atPath: url.path, movingAside: movingAside, reusingWritten: reusingWritten)
    }

    /// ``readSigned(_:movingAside:reusingWritten:)`` for the file at `path`.
    static func readSigned(atPath path: String, movingAside: Bool = true, reusingWritten: Bool = false) throws -> (
        dictionary: [String: Any]?, signature: FileSignature?, digest: UInt64?
    ) {
        let started = Date()
        var unchangedSince: AtomicFile.Contents?  // an unreadable version, and when it was first read
        var unchangedAt = started
        var pause: TimeInterval = 0.001
        while true {
            guard let contents = try contents(of: path) else { return (nil, nil, nil) }
            let (data, signature) = (contents.data, contents.signature)
            if let known = ParseCache.shared.dictionary(for: path, data: data, written: reusingWritten) {
                return (known, signature, digest(data))
            }
            // The write path after someone else's write: a reader may have parsed these bytes already.
            let parsed: Result<[String: Any], ParseFailure>
            if reusingWritten, let known = ParseCache.shared.dictionary(for: path, data: data, written: false) {
                parsed = .success(known)
            } else {
                parsed = parse(data)
            }
            let problem: String
            switch parsed {
            case .success(var dictionary):
                if reusingWritten { dictionary = PlistValue.loadedOrAsIs(dictionary) }
                ParseCache.shared.store(dictionary, data: data, for: path, written: reusingWritten)
                return (dictionary, signature, digest(data))
            case .failure(let failure) where !failure.damaged:
                // A whole document this library cannot keep exactly: no write may land on it, nor is it moved aside.
                throw PersistentPrefs.PrefsError.corruptStore(path: path, reason: "\(failure.reason); it was left as it is")
            case .failure(let failure): problem = failure.reason
            }
            let now = Date()
            if let previous = unchangedSince, previous.signature == signature, previous.data == data {
                if now.timeIntervalSince(unchangedAt) >= quietPeriod {
                    guard movingAside else {
                        throw PersistentPrefs.PrefsError.corruptStore(path: path, reason: "\(problem); it was left as it is")
                    }
                    if let dictionary = try moveAside(URL(fileURLWithPath: path), signature: signature, reason: problem) {
                        return (dictionary, FileSignature.of(path), nil)
                    }
                    unchangedSince = nil  // it parsed after all, or changed: read it again
                    continue
                }
            } else {
                unchangedSince = contents
                unchangedAt = now
            }
            guard now.timeIntervalSince(started) < busyLimit else {
                throw PersistentPrefs.PrefsError.ioError(
                    path: path, reason: "it kept changing without becoming readable for \(Int(busyLimit)) s (\(problem))")
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
    }

    /// Notes that `data`, just written to `path`, encodes `dictionary` (normalised, as the write path read it),
    /// so the next write (``readSigned(_:movingAside:reusingWritten:)``) need not parse these bytes again.
    static func remember(_ data: Data, as dictionary: [String: Any], forFileAt path: String) {
        ParseCache.shared.store(dictionary, data: data, for: path, written: true)
    }

    /// What the files read or written last held, by path, so the same bytes are not parsed twice: what a parser made of
    /// them, and for the write path the normalised dictionary it encoded (``PlistValue/normalizedSet(_:for:)``: a write
    /// that keeps a value keeps the very object). Only files up to ``entryLimit`` bytes, at most ``pathLimit`` paths.
    final class ParseCache: Sendable {
        static let shared = ParseCache()
        static let entryLimit = 1 << 20
        static let pathLimit = 16

        private struct Entry {
            let data: Data
            let dictionary: [String: Any]
        }

        /// What a parser made of a path's bytes, and what the write path encoded to them (changed under the lock).
        private struct Slots {
            var parsed: Entry?
            var written: Entry?
        }

        private let entries = Locked<[String: Slots]>([:])

        /// The dictionary last parsed from (or, for the write path, written to) `path`, when its bytes were `data`.
        func dictionary(for path: String, data: Data, written: Bool) -> [String: Any]? {
            let entry = entries.withLock { entries in
                entries[path].flatMap { written ? $0.written : $0.parsed }
            }
            guard let entry, entry.data == data else { return nil }
            return entry.dictionary
        }

        func store(_ dictionary: [String: Any], data: Data, for path: String, written: Bool) {
            let entry = data.count <= Self.entryLimit ? Entry(data: data, dictionary: dictionary) : nil
            entries.withLock { entries in
                if entries[path] == nil {
                    guard entry != nil else { return }
                    if entries.count >= Self.pathLimit { entries.remove(at: entries.startIndex) }
                    entries[path] = Slots()
                }
                if written { entries[path]?.written = entry } else { entries[path]?.parsed = entry }
            }
        }
    }

    /// The versions (``digest(_:)``) this process's writes took each file through and the top-level keys each changed, so
    /// a set can tell the file changed without its key changing (``SetStorage/unchangedByOwnWrites(root:from:to:)``): a
    /// chain of writes from `old` to `new` none of which changed a key proves it holds in `new` what it held in `old`
    /// (a foreign write breaks the chain: its versions are in no link).
    enum OwnWrites {
        private struct Link {
            let from: UInt64
            let to: UInt64
            let keys: Set<String>
        }

        /// How many recent writes are kept per file.
        private static let depth = 64
        /// How many files are followed (all are forgotten when one more comes).
        private static let pathLimit = 64
        private static let links = Locked<[String: [Link]]>([:])
        /// Non-zero once a set of this process holds a version of a suite (``follow()``).
        private static let followed = SharedInt()

        /// Notes that a set may ask ``untouched(_:in:from:to:)``: writes are remembered from now on (a process that only
        /// writes keeps none). A write in flight while the first set loads may go unremembered: it reads the file again.
        static func follow() {
            if followed.load() == 0 { followed.store(1) }
        }

        /// Remembers a write of `path` that changed `keys` and took it from `old` to `new` (once ``follow()`` ran).
        static func remember(_ path: String, from old: UInt64, to new: UInt64, keys: some Sequence<String>) {
            guard followed.load() != 0 else { return }
            let link = Link(from: old, to: new, keys: Set(keys))
            links.withLock { links in
                if links[path] == nil, links.count >= pathLimit { links.removeAll() }
                links[path, default: []].append(link)
                if links[path]!.count > depth { links[path]!.removeFirst() }
            }
        }

        /// Whether this process's writes took `path` from `old` to `new` without changing `key`.
        static func untouched(_ key: String, in path: String, from old: UInt64, to new: UInt64) -> Bool {
            let known = links.withLock { $0[path] } ?? []
            var reached: Set<UInt64> = [old]
            var frontier = [old]
            while let version = frontier.popLast() {
                for link in known where link.from == version && !link.keys.contains(key) && !reached.contains(link.to) {
                    if link.to == new { return true }
                    reached.insert(link.to)
                    frontier.append(link.to)
                }
            }
            return false
        }
    }

    /// Replaces `url` with `dictionary` atomically and durably (through a symbolic link), or removes it when `nil`.
    /// - Returns: The ``digest(_:)`` of what was written (`nil` after a removal).
    @discardableResult
    static func write(_ dictionary: [String: Any]?, to url: URL, format: PropertyListSerialization.PropertyListFormat) throws
        -> UInt64?
    {
        guard let dictionary else {
            do {
                try AtomicFile.remove(url, throughLink: true)
            } catch {
                throw error.prefsError
            }
            return nil
        }
        let data = try encoded(dictionary, format: format, for: url)
        try write(data, atPath: url.path)
        return digest(data)
    }

    /// Replaces the file at `path` with `data` atomically and durably, unless `stillCurrent` says no just
    /// before the replacement; returns the signature of the file written, `nil` when the write was abandoned.
    @discardableResult
    static func write(_ data: Data, atPath path: String, if stillCurrent: () -> Bool = { true }) throws -> FileSignature? {
        do {
            return try AtomicFile.write(data, atPath: path, if: stillCurrent)
        } catch {
            throw error.prefsError
        }
    }

    /// Identifies the contents of a file: a version of a set, as ``digest(of:)`` finds it again.
    static func digest(_ data: Data) -> UInt64 {
        FNV1a.hash(data) ^ UInt64(data.count)
    }

    /// The ``digest(_:)`` of the file at `url` as it is now (read whole, no lock, no parse), or `nil` when it cannot be read.
    static func digest(of url: URL) -> UInt64? {
        ((try? AtomicFile.readRegular(url.path, limit: maximumReadSize)) ?? nil).map { digest($0.data) }
    }

    /// ``encoded(_:format:for:)`` as XML, with where each top-level value lies in the bytes when the library's own
    /// writer made them (see ``PlistXML/document(ranging:)``; empty when Foundation's did).
    static func encodedRanging(_ dictionary: [String: Any], for url: URL) throws -> (data: Data, ranges: [String: Range<Int>]) {
        guard let (data, ranges, portable) = PlistXML.document(ranging: dictionary) else {
            return (try encoded(dictionary, format: .xml, for: url), [:])  // refused there, naming the keys
        }
        // Not encoded again as XML only to find the same character.
        guard portable else { return (try encoded(dictionary, format: .binary, for: url), [:]) }
        try checkSize(data, for: url)
        return (data, ranges)
    }

    /// `dictionary` as a property list in `format`, for `url`; refused when a property list cannot hold it exactly or
    /// it exceeds ``maximumWriteSize``. XML comes from the library's own writer only: what it cannot write exactly (a
    /// date CoreFoundation cannot read back) is refused naming the top-level keys. A set XML cannot carry portably is
    /// written as a binary property list instead, which every reader reads exactly (see ``PlistXML/Writer/portable``).
    static func encoded(_ dictionary: [String: Any], format: PropertyListSerialization.PropertyListFormat, for url: URL) throws -> Data {
        let data: Data
        if format == .xml {
            guard let (xml, portable) = PlistXML.portableDocument(dictionary) else {
                let keys = dictionary.keys.filter { PlistXML.document([$0: dictionary[$0]!]) == nil }
                throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: keys.sorted())
            }
            guard portable else { return try encoded(dictionary, format: .binary, for: url) }
            data = xml
        } else {
            do {
                data = try PlistValue.foundationData(dictionary, format: format)
            } catch {
                throw PersistentPrefs.PrefsError.valuesNotPlistCompatible(invalidElements: dictionary.keys.sorted())
            }
        }
        try checkSize(data, for: url)
        return data
    }

    private static func checkSize(_ data: Data, for url: URL) throws {
        guard data.count <= maximumWriteSize else {
            throw PersistentPrefs.PrefsError.ioError(
                path: url.path, reason: "the file would grow to \(data.count >> 20) MB, over the limit of \(maximumWriteSize >> 20) MB")
        }
    }

    /// The largest file a write may leave (refused, naming the size): every change rewrites the whole file, under the lock.
    static let maximumWriteSize = 8 << 20

    /// ``AtomicFile/readRegular(_:following:limit:)`` of `path`, with the library's error.
    private static func contents(of path: String) throws -> AtomicFile.Contents? {
        do {
            return try AtomicFile.readRegular(path, limit: maximumReadSize)
        } catch {
            throw error.prefsError
        }
    }

    struct ParseFailure: Error {
        let reason: String
        /// Whether the file is damaged (no reader reads it) and may be moved aside; `false`: left as it is.
        var damaged = true
    }

    /// The dictionary in `data`: XML read by ``PlistXML/read(_:)``, binary property lists checked, then read by Foundation.
    /// A declined XML document is damaged when Foundation finds no dictionary in it either; one Foundation reads is
    /// another program's property list, left as it is (`damaged` `false`). Foundation refuses deep XML nesting itself,
    /// so no document exhausts its stack.
    static func parse(_ data: Data) -> Result<[String: Any], ParseFailure> {
        guard !data.isEmpty else { return .failure(ParseFailure(reason: "it is damaged: the file is empty")) }
        guard data.starts(with: Array("bplist".utf8)) else {
            switch PlistXML.read(data) {
            case .success(let dictionary): return .success(dictionary)
            case .failure(let decline) where decline.damaged || !foundationReadsDictionary(data):
                return .failure(ParseFailure(reason: "it is damaged, not a property list (\(decline.reason))"))
            case .failure(let decline):
                return .failure(
                    ParseFailure(reason: "it holds an XML property list this library cannot read exactly (\(decline.reason))", damaged: false))
            }
        }
        guard data.starts(with: Array("bplist00".utf8)) else {
            return .failure(ParseFailure(reason: "it is damaged, a binary property list of an unsupported version"))
        }
        if let problem = BinaryPlistCheck.problem(in: data) {
            return .failure(ParseFailure(reason: "it is damaged, a binary property list that does not read (\(problem))"))
        }
        let parsed: Any
        do {
            parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            return .failure(ParseFailure(reason: "it is damaged, not a property list (\(data.count) bytes)"))
        }
        guard let dictionary = PlistValue.stringKeyedDictionary(parsed) else {
            return .failure(ParseFailure(reason: "it is damaged: its top level is not a dictionary"))
        }
        return .success(dictionary)
    }

    /// Where the version of `path` with `signature` goes when moved aside: `<name>.corrupt-<time>-<id>`, its
    /// modification time and an id of it, so readers that move it at the same moment agree on the name.
    private static func asidePath(_ path: String, signature: FileSignature) -> String {
        let modified = Date(timeIntervalSince1970: TimeInterval(signature.seconds))
        let stamp = ISO8601DateFormatter().string(from: modified).replacingOccurrences(of: ":", with: "-")
        let id = String(FNV1a.hash(signature.fields.flatMap { withUnsafeBytes(of: $0) { Array($0) } }) & 0xffff_ffff, radix: 16)
        return path + ".corrupt-\(stamp)-\(id)"
    }

    /// Ends the report of damage of the file at `path` on the caller's word, holding the file's writers' lock, and returns
    /// where a file it found was moved (`nil`: none was, the file reads). The file is read as every reader reads it (a
    /// damaged one is moved aside); a property list this library cannot read exactly is moved aside too, byte for byte,
    /// so the next write starts the file afresh. The note of damage is removed last.
    /// - Throws: ``PersistentPrefs/PersistentPrefs/PrefsError/ioError(path:reason:)`` when the
    ///   file cannot be read or moved; the note then stays.
    static func acknowledgeDamage(atPath path: String) throws -> String? {
        var aside: String?
        if let contents = try contents(of: path) {
            switch parse(contents.data) {
            case .success:
                break
            case .failure(let failure) where !failure.damaged:
                let target = asidePath(path, signature: contents.signature)
                guard FileSignature.of(path) == contents.signature else {
                    throw PersistentPrefs.PrefsError.ioError(path: path, reason: "another program rewrote it while it was being moved aside; nothing was moved")
                }
                guard rename(path, target) == 0 else {
                    throw PersistentPrefs.PrefsError.ioError(
                        path: path, reason: "it could not be moved aside (\(String(cString: strerror(errno)))); it was left as it is")
                }
                try? AtomicFile.syncDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
                aside = target
            case .failure:
                // Damaged: moved aside as a read moves it, unless a writer at work finishes meanwhile.
                do {
                    _ = try readSigned(atPath: path)
                } catch PersistentPrefs.PrefsError.corruptStore(_, let reason) {
                    guard FileSignature.of(path) == nil else { throw PersistentPrefs.PrefsError.ioError(path: path, reason: reason) }
                    let target = asidePath(path, signature: contents.signature)
                    aside = FileSignature.of(target) != nil ? target : nil
                }
            }
        }
        DamageNote.clear(forFileAt: path)
        return aside
    }

    private static func foundationReadsDictionary(_ data: Data) -> Bool {
        guard let parsed = try? PropertyListSerialization.propertyList(from: data, format: nil) else { return false }
        return PlistValue.stringKeyedDictionary(parsed) != nil
    }

    /// Moves a damaged file aside (to ``asidePath(_:signature:)``) and throws the error that reports it. A file
    /// that was a writer at work after all (it parses once moved, or changed since `signature`) is put back
    /// and its dictionary returned; `nil` means "read it again". Done holding the writers' lock, never
    /// waiting for it: while a writer holds it, the damage is reported and the file left (that writer moves it).
    private static func moveAside(_ url: URL, signature: FileSignature, reason: String) throws -> [String: Any]? {
        let outcome: [String: Any]??
        do {
            outcome = try FileLock.withLockIfFree(for: url) { try moveAsideHoldingLock(url, signature: signature, reason: reason) }
        } catch let error as PersistentPrefs.PrefsError {
            if case .corruptStore = error { throw error }
            throw PersistentPrefs.PrefsError.corruptStore(path: url.path, reason: "\(reason); it was left in place (\(error))")
        }
        guard let outcome else {
            throw PersistentPrefs.PrefsError.corruptStore(
                path: url.path, reason: "\(reason); it was left in place while another process writes the store")
        }
        return outcome
    }

    /// The body of ``moveAside(_:signature:reason:)``, for a caller holding the lock.
    private static func moveAsideHoldingLock(_ url: URL, signature: FileSignature, reason: String) throws -> [String: Any]? {
        let aside = asidePath(url.path, signature: signature)
        guard FileSignature.of(url.path) == signature else { return nil }
        // The note goes first, so a reader that finds the file gone finds why (readers of one version write one note).
        DamageNote.write(for: url, reason: "\(reason); it was moved aside to \(aside)")
        guard rename(url.path, aside) == 0 else {
            let failure = errno
            if failure == ENOENT { return nil }  // another reader moved it: its note is this one
            DamageNote.clear(for: url)
            throw PersistentPrefs.PrefsError.corruptStore(
                path: url.path, reason: "\(reason); it could not be moved aside (\(String(cString: strerror(failure))))")
        }
        // A last look: a writer that finished just now leaves a file that parses.
        if let contents = try? contents(of: aside), case .success(let dictionary) = parse(contents.data) {
            DamageNote.clear(for: url)
            if link(aside, url.path) == 0 {  // never over a file someone wrote meanwhile
                unlink(aside)
                return dictionary
            }
            return nil
        }
        try? AtomicFile.syncDirectory(url.deletingLastPathComponent().path)
        throw PersistentPrefs.PrefsError.corruptStore(path: url.path, reason: "\(reason); moved aside to \(aside)")
    }
}

import Foundation

extension PersistentPrefs {
    // MARK: - Damage

    /// Acknowledges that the store holding this set was damaged, so its readers stop reporting
    /// ``PrefsError/corruptStore(path:reason:)``, and reads the set again. A file "left as it is" is moved aside by
    /// this call: the set reads as empty and the next write starts it afresh. See <doc:LinuxAndReliability>.
    ///
    /// ```swift
    /// if case .corruptStore(let path, _)? = prefs.lastError {
    ///     log("preferences at \(path) were damaged and reset")
    ///     prefs.acknowledgeDamage()
    /// }
    /// ```
    ///
    /// - Returns: Where this call moved a file, or `nil`. A failure is reported in ``lastError``.
    @discardableResult
    public func acknowledgeDamage() -> URL? {
        var aside: String?
        reportingErrors { aside = try resolvedSet().acknowledgeDamage() }
        return aside.map { URL(fileURLWithPath: $0, isDirectory: false) }
    }

    // MARK: - Defaults from a file

    /// The defaults in ``defaultsFileURL``, vetted and normalised; empty when there is no file or it was refused
    /// (reported in ``lastError`` when the instance is made). Never written to the store; a ``Pref`` reads them
    /// between its stored value and its declared default, while ``values`` and the subscript show stored values
    /// only (see <doc:TypedPreferences>).
    public var fileDefaults: [String: Any] {
        (try? loadedFileDefaults()) ?? [:]
    }

    /// Reads, vets and caches the defaults file (once per class and file).
    func loadedFileDefaults() throws -> [String: Any] {
        guard let url = defaultsFileURL else { return [:] }
        let cacheKey = "\(ObjectIdentifier(type(of: self)).hashValue)\u{0}\(url.absoluteString)"
        if let cached = fileDefaultsCache.withLock({ $0[cacheKey] }) { return try cached.get() }
        let result = Result { () throws -> [String: Any] in
            let contents = try Self.readPlistDictionary(url)
            let allowed = Set(keys)
            let unknown = contents.keys.filter { !allowed.contains($0) }.sorted()
            guard unknown.isEmpty else { throw PrefsError.incorrectKeys(invalidElements: unknown) }
            return try PlistValue.normalizedSet(contents).get()
        }.mapError(SharedSet.mapped)
        fileDefaultsCache.withLock { $0[cacheKey] = result }
        return try result.get()
    }

    // MARK: - Export and import

    /// Writes the current set to `url` as an XML property list, atomically (binary when XML cannot keep it exactly),
    /// with its schema version under ``schemaVersionKey`` when versioned, so ``import(from:)`` can migrate it.
    ///
    /// ```swift
    /// try prefs.export(to: URL(fileURLWithPath: "/tmp/backup.plist"))
    /// ```
    ///
    /// - Parameter url: The file to write (replaced if it exists).
    /// - Throws: ``PrefsError/ioError(path:reason:)``; ``lastError`` records the outcome too.
    public func export(to url: URL) throws {
        try reportingFileErrors {
            var set = try resolvedSet().values()
            let version = try resolvedSet().schemaVersion()
            if version > 0 { set[Self.schemaVersionKey] = version }
            let data = try PlistFile.encoded(set, format: .xml, for: url)
            do {
                try AtomicFile.write(data, to: url)
            } catch let failure as AtomicFile.Failure {
                throw failure.prefsError
            }
        }
    }

    /// Replaces the set with the one in the property list at `url`, all or nothing, with the same checks as assigning
    /// ``values``; a file at an older schema version (none: 0) is migrated first, a newer one refused.
    ///
    /// ```swift
    /// try prefs.import(from: URL(fileURLWithPath: "/tmp/backup.plist"))
    /// ```
    ///
    /// - Parameter url: A property-list file holding a dictionary (as written by ``export(to:)``).
    /// - Throws: A ``PrefsError``: a refused key or value, ``PrefsError/corruptStore(path:reason:)`` (not a
    ///   dictionary), an I/O error, a failed migration or a newer schema version. Nothing changes when it throws;
    ///   ``lastError`` records the outcome too.
    public func `import`(from url: URL) throws {
        try reportingFileErrors {
            var set = try Self.readPlistDictionary(url)
            let version = set[Self.schemaVersionKey] == nil ? 0 : SchemaPlan.take(from: &set)
            guard case .success(let normalized) = PlistValue.normalizedSet(set, for: .loading) else {
                return try setValues(set)  // refused, naming the keys
            }
            try setValues(try schemaPlan.report(on: normalized, from: version, root: key).after)
        }
    }

    // MARK: - Private

    /// The dictionary in a property-list file the caller was handed (never moved, even when unreadable).
    static func readPlistDictionary(_ url: URL) throws -> [String: Any] {
        guard let dictionary = try PlistFile.read(url, movingAside: false) else {
            throw PrefsError.ioError(path: url.path, reason: "there is no such file")
        }
        return dictionary
    }

    /// Runs a file operation, sets ``lastError`` to its outcome (`nil` on success; no damage is asked for) and rethrows.
    private func reportingFileErrors(_ body: () throws -> Void) throws {
        do {
            try body()
            lastError = nil
        } catch {
            let mapped = SharedSet.mapped(error)
            lastError = mapped
            throw mapped
        }
    }
}

/// The vetted contents (or the refusal) of each class's defaults file.
private let fileDefaultsCache = Locked<[String: Result<[String: Any], PersistentPrefs.PrefsError>]>([:])

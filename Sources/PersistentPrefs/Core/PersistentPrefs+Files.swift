import Foundation

extension PersistentPrefs {
    // MARK: - Damage

    /// Acknowledges that the store holding this set was damaged, so its readers stop reporting it.
    ///
    /// When a store file cannot be read by any property-list reader, the library moves it aside
    /// (it is never overwritten) and every set that was in it reads as empty. Until that file is
    /// written again by the library, a file is put back in its place, or the damage is
    /// acknowledged, every reader of those sets — every instance, root key, style and process —
    /// reports ``PrefsError/corruptStore(path:reason:)`` in ``lastError``, naming the file and
    /// where the damaged copy was moved. Call this once the app has dealt with it (for example
    /// restored what it could from the moved copy, or told the user); the set is then read again.
    ///
    /// A file that other readers read but this library cannot keep exactly (its reason says
    /// "left as it is") is never moved by a read or a write, and every write of it is refused.
    /// Acknowledging it moves it aside, byte for byte, on the app's word: the set then reads as
    /// empty and the next write starts the file afresh.
    ///
    /// ```swift
    /// if case .corruptStore(let path, _)? = prefs.lastError {
    ///     log("preferences at \(path) were damaged and reset")
    ///     prefs.acknowledgeDamage()
    /// }
    /// ```
    ///
    /// - Returns: Where this call moved a file (a property list left as it is until now), or
    ///   `nil`. A failure is reported in ``lastError``.
    @discardableResult
    public func acknowledgeDamage() -> URL? {
        var aside: String?
        reportingErrors { aside = try resolvedSet().acknowledgeDamage() }
        return aside.map { URL(fileURLWithPath: $0, isDirectory: false) }
    }

    // MARK: - Defaults from a file

    /// The defaults in ``defaultsFileURL``, vetted and normalised; empty when there is no file
    /// or it was refused (the refusal is reported in ``lastError`` when the instance is made).
    ///
    /// Like `UserDefaults.register(defaults:)`, these are never written to the store. A ``Pref``
    /// property that is not stored reads its value from here before falling back to its
    /// declared default, so the order is: **stored value, then file default, then declared
    /// default**. ``values`` and the subscript show stored values only.
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

    /// Writes the current set to `url` as an XML property list, atomically (a binary one when
    /// the set holds what XML cannot keep exactly: a control character, a date with a fraction of
    /// a second).
    ///
    /// A versioned set (see ``schemaVersion``) is written with its schema version under
    /// ``schemaVersionKey``, so ``import(from:)`` can migrate it when a later version reads it.
    ///
    /// ```swift
    /// try prefs.export(to: URL(fileURLWithPath: "/tmp/backup.plist"))
    /// ```
    ///
    /// - Parameter url: The file to write (replaced if it exists).
    /// - Throws: ``PrefsError/ioError(path:reason:)``; ``lastError`` records the outcome too.
    public func export(to url: URL) throws {
        try reportingFileErrors {
            var set = try currentValues()
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

    /// Replaces the set with the one in the property list at `url`, all or nothing, with the
    /// same checks as assigning ``values``.
    ///
    /// A file exported at an older schema version (or without one: version 0) goes through the
    /// pending ``migrations`` first; a file of a newer version is refused.
    ///
    /// ```swift
    /// try prefs.import(from: URL(fileURLWithPath: "/tmp/backup.plist"))
    /// ```
    ///
    /// - Parameter url: A property-list file holding a dictionary (as written by
    ///   ``export(to:)``).
    /// - Throws: ``PrefsError/incorrectKeys(invalidElements:)``,
    ///   ``PrefsError/valuesNotPlistCompatible(invalidElements:)``,
    ///   ``PrefsError/corruptStore(path:reason:)`` (not a dictionary),
    ///   ``PrefsError/ioError(path:reason:)``,
    ///   ``PrefsError/migrationFailed(root:step:name:reason:)`` or
    ///   ``PrefsError/newerSchemaVersion(root:stored:supported:)``. Nothing changes when it
    ///   throws; ``lastError`` records the outcome too.
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

    /// The dictionary in a property-list file the caller was handed (left where it is even
    /// when it is unreadable).
    static func readPlistDictionary(_ url: URL) throws -> [String: Any] {
        guard let dictionary = try PlistFile.read(url, movingAside: false) else {
            throw PrefsError.ioError(path: url.path, reason: "there is no such file")
        }
        return dictionary
    }

    /// Runs a file operation, sets ``lastError`` to its outcome (`nil` on success: the set is
    /// not read, so no damage is asked for) and rethrows.
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

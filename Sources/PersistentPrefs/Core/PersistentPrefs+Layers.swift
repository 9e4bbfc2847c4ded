import Foundation

// MARK: - Layered defaults and locked keys

extension PersistentPrefs {
    /// A folder of defaults shipped with the program (`/usr/share/myapp/defaults`, say), the
    /// *vendor* layer: beneath the site defaults of `$XDG_CONFIG_DIRS`, above the defaults in
    /// code. `nil` (the default): no vendor layer.
    ///
    /// Its files are named as the site defaults files are (see <doc:LayersAndLockdown>). Set it
    /// before the first instance of a set is made: a set already in use keeps the layers it found.
    ///
    /// ```swift
    /// PersistentPrefs.vendorDefaultsDirectory = URL(fileURLWithPath: "/usr/share/myapp/defaults")
    /// ```
    public static var vendorDefaultsDirectory: URL? {
        get { LayerStack.vendorDirectory.withLock { $0 } }
        set { LayerStack.vendorDirectory.withLock { $0 = newValue } }
    }

    /// The system configuration folders searched for site defaults, the most important first:
    /// the absolute entries of `$XDG_CONFIG_DIRS`, else `/etc/xdg` (read once, when first needed).
    public static var systemConfigDirectories: [URL] { LayerPaths.systemDirectories }

    /// Whether an administrator locked `key` in a system layer: it reads the layer's value
    /// whatever the user stored, and every write of it is refused with
    /// ``PrefsError/keyLocked(key:)``. The counterpart of `UserDefaults.objectIsForced(forKey:)`.
    ///
    /// ```swift
    /// volumeSlider.isEnabled = !prefs.isLocked("Volume")
    /// ```
    ///
    /// - Parameter key: A key of the set.
    /// - Returns: `true` when the key is locked (by name, or because the whole set is).
    public func isLocked(_ key: String) -> Bool {
        (try? resolvedSet().layers().isLocked(key)) ?? false
    }

    /// ``isLocked(_:)`` under the name of Apple's `objectIsForced(forKey:)`: whether `key` is
    /// locked (forced) by an administrator.
    ///
    /// - Parameter key: A key of the set.
    /// - Returns: `true` when the key is locked.
    public func isForced(_ key: String) -> Bool {
        isLocked(key)
    }

    /// Whether an administrator locked the whole set: ``isLocked(_:)`` is `true` for every key,
    /// named in a layer or not.
    ///
    /// ```swift
    /// if prefs.isEntirelyLocked { showManagedBanner() }
    /// ```
    public var isEntirelyLocked: Bool {
        (try? resolvedSet().layers().locksAll) ?? false
    }

    /// ``isEntirelyLocked``, under its earlier name; `isForced(_:)` with a key is the one
    /// meaning of "forced" (a key is locked).
    @available(*, deprecated, renamed: "isEntirelyLocked")
    public var isForced: Bool { isEntirelyLocked }

    /// The keys an administrator locked by name, sorted (when the whole set is locked, see
    /// ``isEntirelyLocked``, every key is locked, named or not).
    public var lockedKeys: [String] {
        ((try? resolvedSet().layers().lockedKeys) ?? []).sorted()
    }

    /// The set as readers see it: the user's values (``values``) over the site and vendor
    /// defaults, with locked keys at their mandatory values. Keys no layer gives are absent (they
    /// read as ``fileDefaults`` and then as the declared defaults).
    ///
    /// ``values`` is the user's own layer, which writes replace; the subscript, typed accessors,
    /// `@Pref` properties and ``value(forKey:as:)`` read this set.
    public var effectiveValues: [String: Any] {
        read { view in
            guard view.pending != nil else { return try view.sharedSet.effectiveValues() }
            return try view.sharedSet.layers().effective(try view.values())
        } ?? [:]
    }

    /// The system layer files looked for beneath this set, the most important first (most do
    /// not exist): site defaults over ``systemConfigDirectories``, then vendor defaults in
    /// ``vendorDefaultsDirectory``. Empty for stores without layers (``InMemoryStore``, a
    /// ``PlistFileStore`` outside the user's configuration folder made without a layer name).
    public var layerFileURLs: [URL] {
        ((try? resolvedSet())?.layerReader.files ?? []).map(\.url)
    }

    // MARK: - Where a value comes from

    /// Where the value a reader sees for a key comes from: the layer that gives it, the way
    /// `dconf`/`gsettings` users find out why a value is what it is. See ``valueSource(forKey:)``.
    ///
    /// It prints as its ``name``, followed by the file for a site or vendor file:
    /// `user`, `site /etc/xdg/MyApp.plist`, `default`.
    public enum ValueSource: Hashable, Sendable, CustomStringConvertible {
        /// The user's own value (``values``, the set's file or suite).
        case user
        /// A site defaults file over ``systemConfigDirectories``; the associated value is the file.
        case site(URL)
        /// A vendor defaults file in ``vendorDefaultsDirectory``; the associated value is the file.
        case vendor(URL)
        /// Defaults registered with the platform (`UserDefaults.register(defaults:)`).
        case registered
        /// Values an administrator forces through the platform (managed preferences).
        case managed
        /// The set's defaults file (see ``fileDefaults``).
        case fileDefault
        /// The default declared in code (``declaredDefaults``, from `@Pref` declarations).
        case declaredDefault

        /// A short name for the source: `user`, `site`, `vendor`, `registered`, `managed`,
        /// `file default` or `default`.
        public var name: String {
            switch self {
            case .user: return "user"
            case .site: return "site"
            case .vendor: return "vendor"
            case .registered: return "registered"
            case .managed: return "managed"
            case .fileDefault: return "file default"
            case .declaredDefault: return "default"
            }
        }

        /// The file the value is read from, for ``site(_:)`` and ``vendor(_:)``; `nil` otherwise.
        public var file: URL? {
            switch self {
            case .site(let url), .vendor(let url): return url
            default: return nil
            }
        }

        /// The ``name``, and for a site or vendor file its path: `site /etc/xdg/MyApp.plist`.
        public var description: String {
            file.map { "\(name) \($0.path)" } ?? name
        }
    }

    /// Where the value of `key` a reader sees (``effectiveValues``, then ``fileDefaults``, then
    /// ``declaredDefaults``) comes from; `nil` when nothing gives the key a value.
    ///
    /// A locked key (``isLocked(_:)``) is never ``ValueSource/user``: it reads the locking layer's
    /// value, or a less important layer's.
    ///
    /// ```swift
    /// if case .site(let file) = prefs.valueSource(forKey: "Volume") {
    ///     print("Volume is set by the administrator in \(file.path)")
    /// }
    /// ```
    ///
    /// - Parameter key: A key of the set.
    /// - Returns: The source of the key's value, or `nil`.
    public func valueSource(forKey key: String) -> ValueSource? {
        let layers = (try? resolvedSet().layers()) ?? .empty
        // The user's own value, read as a `@Pref` reads: ``lastError`` is left as it is.
        let stored = read(keepingError: true) { try $0.values()[key] }
        if !layers.isLocked(key), stored.flatMap({ $0 }) != nil { return .user }
        if let layer = layers.layerGiving(key) {
            switch layer.kind {
            case .site: return .site(URL(fileURLWithPath: layer.source))
            case .vendor: return .vendor(URL(fileURLWithPath: layer.source))
            case .registered: return .registered
            case .managed: return .managed
            }
        }
        if fileDefaults[key] != nil { return .fileDefault }
        if declaredDefaults[key] != nil { return .declaredDefault }
        return nil
    }
}

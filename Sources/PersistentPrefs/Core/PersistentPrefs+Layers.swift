import Foundation

// MARK: - Layered defaults and locked keys

extension PersistentPrefs {
    /// A folder of defaults shipped with the program, the *vendor* layer: beneath the site defaults of
    /// `$XDG_CONFIG_DIRS`, above the defaults in code; `nil` (the default): none. Set it before the first instance of
    /// a set is made (a set in use keeps its layers). See <doc:LayersAndLockdown>.
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

    /// Whether an administrator locked `key` in a system layer: it reads the layer's value, and every write of it is
    /// refused with ``PrefsError/keyLocked(key:)``. The counterpart of `UserDefaults.objectIsForced(forKey:)`.
    ///
    /// ```swift
    /// volumeSlider.isEnabled = !prefs.isLocked("Volume")
    /// ```
    ///
    /// - Returns: `true` when the key is locked (by name, or because the whole set is).
    public func isLocked(_ key: String) -> Bool {
        (try? resolvedSet().layers().isLocked(key)) ?? false
    }

    /// ``isLocked(_:)`` under the name of Apple's `objectIsForced(forKey:)`.
    public func isForced(_ key: String) -> Bool {
        isLocked(key)
    }

    /// Whether an administrator locked the whole set: ``isLocked(_:)`` is `true` for every key.
    ///
    /// ```swift
    /// if prefs.isEntirelyLocked { showManagedBanner() }
    /// ```
    public var isEntirelyLocked: Bool {
        (try? resolvedSet().layers().locksAll) ?? false
    }

    /// ``isEntirelyLocked``, under its earlier name.
    @available(*, deprecated, renamed: "isEntirelyLocked")
    public var isForced: Bool { isEntirelyLocked }

    /// The keys an administrator locked by name, sorted (see also ``isEntirelyLocked``).
    public var lockedKeys: [String] {
        ((try? resolvedSet().layers().lockedKeys) ?? []).sorted()
    }

    /// The set as readers (the subscript, typed accessors, `@Pref` properties) see it: the user's ``values`` over the
    /// site and vendor defaults, locked keys at their mandatory values; keys no layer gives are absent.
    public var effectiveValues: [String: Any] {
        read { view in
            guard view.pending != nil else { return try view.sharedSet.effectiveValues() }
            return try view.sharedSet.layers().effective(try view.values())
        } ?? [:]
    }

    /// The system layer files looked for beneath this set, the most important first (most do not exist): site
    /// defaults over ``systemConfigDirectories``, then ``vendorDefaultsDirectory``. Empty for stores without layers.
    public var layerFileURLs: [URL] {
        ((try? resolvedSet())?.layerReader.files ?? []).map(\.url)
    }

    // MARK: - Where a value comes from

    /// Where the value a reader sees for a key comes from (see ``valueSource(forKey:)``); it prints as its ``name``,
    /// followed by the file for a site or vendor file: `site /etc/xdg/MyApp.plist`.
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

        /// A short name: `user`, `site`, `vendor`, `registered`, `managed`, `file default` or `default`.
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

    /// Where the value of `key` a reader sees comes from; `nil` when nothing gives it one. A locked key is never
    /// ``ValueSource/user``. See <doc:LayersAndLockdown>.
    ///
    /// ```swift
    /// if case .site(let file) = prefs.valueSource(forKey: "Volume") {
    ///     print("Volume is set by the administrator in \(file.path)")
    /// }
    /// ```
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

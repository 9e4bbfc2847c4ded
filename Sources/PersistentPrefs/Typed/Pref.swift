import Foundation

/// A typed value of a ``PersistentPrefs`` subclass, stored under `key` in the instance's set.
///
/// ```swift
/// final class EditorPrefs: PersistentPrefs {
///     @Pref("Font Size") var fontSize: Double = 14
///     @Pref("Last Folder") var lastFolder: URL?          // nil removes the key
/// }
/// let prefs = EditorPrefs()
/// prefs.fontSize = 16          // stored when the setter returns (see ApplePlatforms)
/// prefs.reset("Font Size")     // back to 14
/// ```
///
/// The declared value is the default: a key that is not stored reads as it, and it is never written. Reads and
/// writes go through the instance's shared, locked set, with the same guarantees as ``PersistentPrefs/values``; a
/// refused write leaves the set unchanged and sets ``PersistentPrefs/lastError`` (``PrefsTransacting/set(_:_:)``
/// throws it instead). Untyped writes of the key are checked against the declaration. A stored value that cannot be
/// read as the declared type reads as the default, is reported as
/// ``PersistentPrefs/PrefsError/typeMismatch(key:expected:found:)``, and stays stored. See <doc:TypedPreferences>.
///
/// In every initialiser `key` is the key in the set; `wrappedValue` the default, read while the key is not stored
/// (or stores a refused value); `summary` one optional line on what the value is for, for the set's ``PrefsSchema``.
@propertyWrapper
public struct Pref<Value> {
    /// The key in the set.
    public let key: String
    /// The value read when the key is not stored.
    public let defaultValue: Value
    /// The codec, rule and observation key behind one reference: every read copies the `Pref`, and a copy then
    /// retains one reference rather than several.
    @usableFromInline let core: PrefCore<Value>

    /// How values are stored.
    var codec: PrefCodec<Value> { core.codec }
    /// Why a value is not allowed (`nil` when it is), or `nil` without a rule.
    var rule: ((Value) -> String?)? { core.rule }

    /// The one initialiser behind the public ones (`Pref+Storable.swift`, which admits only property-list types).
    init(wrappedValue: Value, _ key: String, rule: ((Value) -> String?)?, summary: String? = nil, bounds: (Value, Value)? = nil) {
        self.key = key
        defaultValue = wrappedValue
        core = PrefCore(key: key, codec: PrefCodec.make(), rule: rule, summary: summary, bounds: bounds)
    }

    /// The rule of a `validate:` closure, for the initialisers that take one.
    static func rule(_ validate: @escaping (Value) throws -> Bool, key: String) -> (Value) -> String? {
        { PrefsValidator.reason(validate, $0, rule: "the rule of \"\(key)\"") }
    }

    /// The rule of an `in:` range, with the reason ``PrefsSchema/Key/problem(with:)`` gives, so the library and
    /// the harness say the same.
    static func rule(_ range: ClosedRange<Value>) -> (Value) -> String? where Value: Comparable {
        { PrefsSchema.problem($0, outside: range) }
    }

    /// The reason `value` is not allowed, or `nil` when it is.
    func problem(with value: Value) -> String? {
        rule?(value)
    }

    /// What a read of `stored` returns without a problem: the stored value decoded and allowed by the rule; for a
    /// key not stored, `fileDefaults`' value (when it decodes), else the default. `nil` when the stored value cannot
    /// be decoded or the rule refuses it.
    func answer(_ stored: Any?, fileDefaults: @autoclosure () -> [String: Any]) -> Value? {
        guard let stored else {
            return fileDefaults()[key].flatMap { codec.decode($0) } ?? defaultValue
        }
        return codec.decode(stored).flatMap { problem(with: $0) == nil ? $0 : nil }
    }

    /// Not available: `@Pref` reaches its value through the enclosing ``PersistentPrefs``.
    @available(*, unavailable, message: "@Pref can only be used on properties of a PersistentPrefs subclass")
    public var wrappedValue: Value {
        get { fatalError("unreachable: @Pref outside a PersistentPrefs subclass") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("unreachable: @Pref outside a PersistentPrefs subclass") }
    }

    /// Not available: `$property` (a ``Handle``) is reached through the enclosing ``PersistentPrefs``. It and the
    /// subscript below are declared with the type because the compiler looks for them nowhere else.
    @available(*, unavailable, message: "$property is reached through the enclosing PersistentPrefs instance")
    public var projectedValue: Handle {
        fatalError("unreachable: @Pref outside a PersistentPrefs subclass")
    }

    /// The ``Handle`` of the property in the enclosing instance (`prefs.$volume`).
    public static subscript<Owner: PersistentPrefs>(
        _enclosingInstance owner: Owner,
        projected projectedKeyPath: KeyPath<Owner, Handle>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Pref<Value>>
    ) -> Handle {
        let pref = owner[keyPath: storageKeyPath]
        return Handle(key: pref.key, owner: owner, pref: pref)
    }

    /// Reads and writes the value through the enclosing instance's set. Inlinable, so a read of an `Int`, `Double`,
    /// `Float` or `Bool` property is specialised in the subclass's module (the fast path of
    /// ``PersistentPrefs/value(forKey:as:)``).
    @inlinable
    public static subscript<Owner: PersistentPrefs>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Pref<Value>>
    ) -> Value {
        // Always inlined: only then is the key path a literal the compiler turns into a field access. Only the core
        // is taken on the way to the remembered answer: a copy of the whole `Pref` retains its key and default too.
        @inline(__always) get { owner.value(of: owner[keyPath: storageKeyPath].core, owner[keyPath: storageKeyPath]) }
        set { owner.write(newValue, owner[keyPath: storageKeyPath]) }
    }
}

/// What the read path needs of a ``Pref``, without its value type: the key, what Observation tracks it by, and
/// which state its remembered answer came from. Not generic, so read functions take it as it is (an upcast of the
/// ``PrefCore``) and read its fields in place.
@usableFromInline
class PrefKey {
    /// The key in the set.
    @usableFromInline let key: String
    /// What the Observation framework tracks the key by.
    @usableFromInline let observationKey: KeyPath<PrefsKeySpace, Int>
    /// The ``SharedSet/readStamp`` of the state ``PrefCore/remembered`` was worked out from (0: none): while the
    /// set's stamp is the same, a read returns that answer without a look-up or decoding. This and the answer are
    /// used only under the lock of the instance whose `Pref` this is (a `Pref` belongs to one instance).
    var rememberedStamp = 0

    init(key: String, observationKey: KeyPath<PrefsKeySpace, Int>) {
        self.key = key
        self.observationKey = observationKey
    }
}

/// The parts of a ``Pref`` behind its one reference: codec, rule, and what Observation tracks the key by.
@usableFromInline
final class PrefCore<Value>: PrefKey {
    let codec: PrefCodec<Value>
    let rule: ((Value) -> String?)?
    /// What a read returned at ``PrefKey/rememberedStamp``: the stored value decoded and passed by the rule, or the
    /// default of a key not stored. A value that reads with a problem is never remembered, so each read reports it.
    @usableFromInline var remembered: Value?
    /// What the value is for, for the schema.
    let summary: String?
    /// The ends of an `in:` range, for the schema.
    let bounds: (Value, Value)?

    init(key: String, codec: PrefCodec<Value>, rule: ((Value) -> String?)?, summary: String?, bounds: (Value, Value)?) {
        self.codec = codec
        self.rule = rule
        self.summary = summary
        self.bounds = bounds
        super.init(key: key, observationKey: PrefsKeySpace.keyPath(key))
    }
}

/// What the base class needs to know of a `@Pref` found by reflection.
protocol DeclaredPref {
    var key: String { get }
    /// The default in its stored form; `nil` for an optional whose default is `nil`.
    var storedDefault: Any? { get }
    /// Why `stored` is not allowed (not readable as the declared type, or refused by its rule), or `nil`.
    func problem(withStored stored: Any, checkingType: Bool) -> String?
    /// The declared type's name.
    var typeName: String { get }
    /// What a read of `stored` reports: a type mismatch or a refused value; `nil` when it reads fine.
    func readingProblem(_ stored: Any) -> PersistentPrefs.PrefsError?
    /// The key as the set's schema describes it (not locked: the set knows that).
    var schemaKey: PrefsSchema.Key { get }
}

extension Pref: DeclaredPref {
    var storedDefault: Any? { try? codec.encode(defaultValue) }

    var schemaKey: PrefsSchema.Key {
        let stored = storedDefault
        var choices: [Any]?
        if let cases = PlistKind.unwrapped(Value.self) as? any CaseIterable.Type {
            choices = Self.allCases(of: cases).compactMap { ($0 as? Value).flatMap { try? codec.encode($0) } }
        }
        // A `Codable` value: its default's shape, and whether the type reads back exactly that.
        var shape: (shape: PrefsSchema.Shape?, checked: Bool)?
        if storesThroughCodable {
            shape = stored.map { PrefsSchema.Shape.checked(defaultValue, stored: $0) { codec.decode($0) != nil } } ?? (nil, false)
        }
        return PrefsSchema.Key(
            name: key, type: typeName, kind: stored.flatMap(PrefsSchema.kind(of:)) ?? PlistKind.of(Value.self),
            defaultValue: stored, minimum: core.bounds.flatMap { try? codec.encode($0.0) },
            maximum: core.bounds.flatMap { try? codec.encode($0.1) }, choices: choices, summary: core.summary, isLocked: false,
            isOptional: Value.self is any OptionalConvertible.Type, shape: shape?.shape, isShapeChecked: shape?.checked)
    }

    /// Whether values are stored as `PropertyListEncoder` encodes them (not as a plist value, raw value or URL
    /// text): told by the default, or for an optional without one by the type.
    private var storesThroughCodable: Bool {
        let value: Any? = (defaultValue as? any OptionalConvertible).map { Self.unwrap($0) } ?? defaultValue
        guard let value else { return PlistKind.of(Value.self) == nil && PlistKind.unwrapped(Value.self) is any Decodable.Type }
        return PlistValue.normalized(value) == nil && !(value is any RawRepresentable) && !(value is URL) && value is any Encodable
    }

    private static func unwrap<O: OptionalConvertible>(_ optional: O) -> Any? {
        optional.asOptional.map { $0 as Any }
    }

    private static func allCases<Cases: CaseIterable>(of type: Cases.Type) -> [Any] {
        type.allCases.map { $0 }
    }
    /// The declared type's name as Swift spells it: `Int`, `[String]`, `String?`.
    var typeName: String { PlistKind.name(of: Value.self) }

    func readingProblem(_ stored: Any) -> PersistentPrefs.PrefsError? {
        guard let value = codec.decode(stored) else { return codec.mismatch(stored, forKey: key) }
        return problem(with: value).map { .invalidValue(key: key, reason: $0) }
    }

    func problem(withStored stored: Any, checkingType: Bool) -> String? {
        guard let value = codec.decode(stored) else { return checkingType ? typeProblem(stored) : nil }
        return rule?(value)
    }

    /// Why `stored` cannot be read as the declared type: the schema's words (another kind, not an enum's choice),
    /// else that it is not a `Value`.
    private func typeProblem(_ stored: Any) -> String {
        schemaKey.problem(with: stored) ?? PrefsSchema.unreadable(stored, as: typeName)
    }
}

// MARK: - Reading and writing typed values

extension PersistentPrefs {
    /// A ``Pref`` property's value (`core` is `pref`'s): the remembered answer while the shared set's
    /// ``SharedSet/readStamp`` is the one it was worked out at (no look-up, no decoding), else
    /// ``read(_:missed:)``'s. Inlinable, so the read is specialised for the type in the subclass's module.
    @inlinable @inline(__always)
    func value<Value>(of core: PrefCore<Value>, _ pref: @autoclosure () -> Pref<Value>) -> Value {
        var remembered: Value?
        let missed = recall(core) { remembered = core.remembered }
        if let remembered { return remembered }
        return read(pref(), missed: missed)
    }

    /// A ``Pref`` read whose remembered answer is stale: worked out from the set `missed` names when it can be
    /// served at once and reads without a problem, and remembered if the stamp is still the one `missed` read
    /// (it then names exactly the state the answer came from). Otherwise ``read(_:)``, which reports problems.
    @usableFromInline
    func read<Value>(_ pref: Pref<Value>, missed: RecallMiss) -> Value {
        if let sharedSet = missed.sharedSet, case .some(let stored) = sharedSet.loadedValue(forKey: pref.key),
            let value = pref.answer(stored, fileDefaults: fileDefaults)
        {
            sharedSet.feed.access(pref.core.observationKey)
            if sharedSet.readStamp.load() == missed.stamp {
                state.withLock { _ in (pref.core.rememberedStamp, pref.core.remembered) = (missed.stamp, value) }
            }
            return value
        }
        return read(pref)
    }

    /// The read of a ``Pref`` that reports what it finds: a key not stored reads as the defaults file's value, then
    /// the declared one; a stored value of another type, or refused, reads as the default, reported in ``lastError``.
    func read<Value>(_ pref: Pref<Value>) -> Value {
        guard let stored = rawValue(forKey: pref.key, tracking: pref.core.observationKey, keepingError: true) else {
            return pref.answer(nil, fileDefaults: fileDefaults) ?? pref.defaultValue
        }
        if let value = pref.codec.decode(stored) {
            guard let reason = pref.problem(with: value) else { return value }
            reportInvalid(key: pref.key, reason: reason)
            return pref.defaultValue
        }
        lastError = pref.codec.mismatch(stored, forKey: pref.key)
        return pref.defaultValue
    }

    /// Reports a stored value that breaks its `@Pref`'s rule. Not generic, so the inlined getter needs no metadata.
    @usableFromInline
    func reportInvalid(key: String, reason: String) {
        lastError = .invalidValue(key: key, reason: reason)
    }

    @usableFromInline
    func write<Value>(_ value: Value, _ pref: Pref<Value>) {
        reportingErrors {
            try submit {
                if let reason = pref.problem(with: value) { throw refusal(key: pref.key, reason: reason) }
                let encoded = try pref.codec.encoded(value, forKey: pref.key)
                return .set(key: pref.key, value: try vetting(oneKey: true, typed: true).vet(encoded, forKey: pref.key))
            }
        }
    }

    /// The defaults of this instance's ``Pref`` properties, by key, in their stored form (optionals whose default is
    /// `nil` are left out). To write them into an empty set: `values = declaredDefaults`.
    public var declaredDefaults: [String: Any] {
        var defaults: [String: Any] = [:]
        for pref in declaredPrefs() {
            if let value = pref.storedDefault { defaults[pref.key] = value }
        }
        return defaults
    }

    /// The `@Pref` properties of this instance, from its class and superclasses up to (not including)
    /// `PersistentPrefs`, which declares none: reflecting the base class would make the runtime build the type of
    /// each stored property, a cost a one-shot program (`prefs-harness get`) pays in full, for nothing.
    func declaredPrefs() -> [any DeclaredPref] {
        guard Swift.type(of: self) != PersistentPrefs.self else { return [] }
        var prefs: [any DeclaredPref] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror, current.subjectType != PersistentPrefs.self {
            for child in current.children {
                if let pref = child.value as? any DeclaredPref { prefs.append(pref) }
            }
            mirror = current.superclassMirror
        }
        return prefs
    }

    /// The `@Pref` properties of this instance's class, by key (the first of a key), against which every untyped
    /// write of a declared key is checked. Found once per class.
    var declaredRules: [String: any DeclaredPref] {
        let type = ObjectIdentifier(Swift.type(of: self))
        if let known = declaredRulesByClass.withLock({ $0[type] }) { return known }
        var rules: [String: any DeclaredPref] = [:]
        for pref in declaredPrefs() where rules[pref.key] == nil { rules[pref.key] = pref }
        declaredRulesByClass.withLock { $0[type] = rules }
        return rules
    }

    /// `@Pref` properties of this instance's class that share a key but not a type (they would
    /// fight over the key), one error per key, by key; found once per class.
    var declarationConflicts: [PrefsError] {
        let type = ObjectIdentifier(Swift.type(of: self))
        if let known = declarationConflictsByClass.withLock({ $0[type] }) { return known }
        var typesByKey: [String: [String]] = [:]
        for pref in declaredPrefs() { typesByKey[pref.key, default: []].append(pref.typeName) }
        let conflicts = typesByKey.filter { Set($0.value).count > 1 }.sorted { $0.key < $1.key }
            .map { PrefsError.conflictingDeclarations(key: $0.key, types: $0.value.sorted()) }
        declarationConflictsByClass.withLock { $0[type] = conflicts }
        return conflicts
    }

    /// The keys of the `@Pref` properties of this instance's class and its superclasses.
    var declaredPrefKeys: [String] {
        let type = ObjectIdentifier(Swift.type(of: self))
        if let known = declaredKeysByClass.withLock({ $0[type] }) { return known }
        let keys = declaredPrefs().map(\.key)
        declaredKeysByClass.withLock { $0[type] = keys }
        return keys
    }
}

/// The `@Pref` keys of each class, found once by reflection.
private let declaredKeysByClass = Locked<[ObjectIdentifier: [String]]>([:])

/// The conflicting `@Pref` declarations of each class, found once by reflection.
private let declarationConflictsByClass = Locked<[ObjectIdentifier: [PersistentPrefs.PrefsError]]>([:])

/// The `@Pref` properties of each class, by key, found once by reflection (their checks are the same for every
/// instance).
private let declaredRulesByClass = Locked<[ObjectIdentifier: [String: any DeclaredPref]]>([:])

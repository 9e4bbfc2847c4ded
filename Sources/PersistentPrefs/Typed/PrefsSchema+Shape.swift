import Foundation

extension PrefsSchema {
    /// The structure a `Codable` value is stored as: what a tool checks a new value against, so that it never writes
    /// one the program cannot read back (see ``Key/shape``).
    ///
    /// ```swift
    /// struct Window: Codable { var w = 800.0; var h = 600.0 }
    /// // @Pref("Window") var window = Window()   is recorded as
    /// // .dictionary(["w": .kind("real"), "h": .kind("real")]), shown as {h: real, w: real}
    /// ```
    public indirect enum Shape: Sendable, Equatable, CustomStringConvertible {
        /// A single value of a property-list kind (`"integer"`, `"string"`, …; an integer fits a `"real"`).
        case kind(String)
        /// A dictionary with exactly these members.
        case dictionary([String: Shape])
        /// An array whose every element has this shape; `nil` when unknown (the default's array was empty, or its
        /// elements differ).
        case array(Shape?)

        /// The shape in words: `{h: real, w: real}`, `[integer]`, `[?]`.
        public var description: String {
            switch self {
            case .kind(let kind): return kind
            case .dictionary(let members):
                return "{" + members.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
            case .array(let element): return "[\(element.map(\.description) ?? "?")]"
            }
        }

        /// Why the property-list `value` (as stored) does not have this shape, or `nil` when it has: the first member
        /// missing, extra or of another kind, named by its path.
        public func problem(with value: Any) -> String? {
            problem(with: value, at: "")
        }

        private func problem(with value: Any, at path: String) -> String? {
            let place = path.isEmpty ? "it" : path
            switch self {
            case .kind(let kind):
                guard let found = PrefsSchema.kind(of: value) else { return "\(place) is not a property-list value" }
                guard found == kind || (kind == "real" && found == "integer") else {
                    return "\(place) is \(PrefsSchema.article(found)) \(found), not \(PrefsSchema.article(kind)) \(kind)"
                }
                return nil
            case .dictionary(let members):
                guard let dictionary = PlistValue.stringKeyedDictionary(value) else { return "\(place) is not a dictionary" }
                for name in members.keys.sorted() where dictionary[name] == nil { return "\(place) lacks \(path.isEmpty ? "" : path + ".")\(name)" }
                for name in dictionary.keys.sorted() where members[name] == nil {
                    return "\(place) has \(path.isEmpty ? "" : path + ".")\(name), which the type does not"
                }
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    if let problem = member.problem(with: dictionary[name]!, at: path.isEmpty ? name : path + "." + name) { return problem }
                }
                return nil
            case .array(let element):
                guard let array = PlistValue.normalized(value) as? [Any] else { return "\(place) is not an array" }
                guard let element else { return nil }
                for (index, item) in array.enumerated() {
                    if let problem = element.problem(with: item, at: "\(path.isEmpty ? "element" : path) \(index)") { return problem }
                }
                return nil
            }
        }

        /// The shape of a stored value: its kind, or its members' shapes, nested (an array's element shape when its
        /// elements share one).
        init?(of value: Any) {
            guard let kind = PrefsSchema.kind(of: value) else { return nil }
            switch kind {
            case "dictionary":
                guard let dictionary = PlistValue.stringKeyedDictionary(value) else { return nil }
                var members: [String: Shape] = [:]
                for (name, member) in dictionary {
                    guard let shape = Shape(of: member) else { return nil }
                    members[name] = shape
                }
                self = .dictionary(members)
            case "array":
                guard let array = PlistValue.normalized(value) as? [Any] else { return nil }
                let shapes = array.map(Shape.init(of:))
                guard let first = shapes.first, let element = first, shapes.allSatisfy({ $0 == element }) else {
                    self = .array(nil)
                    return
                }
                self = .array(element)
            default:
                self = .kind(kind)
            }
        }

        /// Whether some array in it has no known element shape.
        var hasUnknownElements: Bool {
            switch self {
            case .kind: return false
            case .dictionary(let members): return members.values.contains { $0.hasUnknownElements }
            case .array(let element): return element?.hasUnknownElements ?? true
            }
        }

        /// The shape as the schema file records it: a kind as a string, a dictionary as an object, an array as
        /// `[element]` (`[]` when unknown).
        var json: Any {
            switch self {
            case .kind(let kind): return kind
            case .dictionary(let members): return members.mapValues(\.json)
            case .array(let element): return element.map { [$0.json] } ?? []
            }
        }

        /// The shape a schema file records (see ``json``), or `nil` when it is not one.
        init?(json: Any, depth: Int = 0) {
            guard depth <= PlistValue.maximumDepth else { return nil }
            switch json {
            case let kind as String:
                guard PrefsSchema.kinds.contains(kind), kind != "dictionary", kind != "array" else { return nil }
                self = .kind(kind)
            case let members as [String: Any]:
                var shapes: [String: Shape] = [:]
                for (name, member) in members {
                    guard let shape = Shape(json: member, depth: depth + 1) else { return nil }
                    shapes[name] = shape
                }
                self = .dictionary(shapes)
            case let elements as [Any]:
                guard elements.count <= 1 else { return nil }
                guard let first = elements.first else {
                    self = .array(nil)
                    return
                }
                guard let element = Shape(json: first, depth: depth + 1) else { return nil }
                self = .array(element)
            default:
                return nil
            }
        }
    }
}

// MARK: - A Codable default's shape

extension PrefsSchema.Shape {
    /// The shape of a `Codable` type's stored default, and whether it is exactly what the type reads back, worked
    /// out from its default `value` (stored as `stored`) and its decoder (`decodes`). It is checked when: every array
    /// of the default has elements of one shape; the default, reflected, has no `nil` member and as many members as
    /// it stores, at every level (no member renamed, added or left out by a coding of its own); and a stored value
    /// lacking any one member, or holding one of another kind, is not read back (no member optional, no kind read
    /// more leniently than written). Such a type reads back exactly the values of its shape (its own checks aside,
    /// such as a range in `init(from:)`).
    static func checked(_ value: Any, stored: Any, decodes: (Any) -> Bool) -> (shape: Self?, checked: Bool) {
        guard let shape = Self(of: stored) else { return (nil, false) }
        guard !shape.hasUnknownElements, reflects(value, as: stored) else { return (shape, false) }
        for variant in variants(of: stored) where decodes(variant) { return (shape, false) }
        return (shape, true)
    }

    /// Whether `value`, reflected, has exactly the members `stored` holds under the same names (recursively), none
    /// of them `nil`.
    private static func reflects(_ value: Any, as stored: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return false }
            return reflects(wrapped, as: stored)
        }
        switch PlistValue.normalized(stored) {
        case let dictionary as [String: Any]:
            // A dictionary type (`[String: T]`) takes any keys, which the default's do not tell.
            guard mirror.displayStyle == .struct || mirror.displayStyle == .class else { return false }
            guard mirror.superclassMirror == nil || mirror.superclassMirror?.children.isEmpty == true,
                mirror.children.count == dictionary.count
            else { return false }
            for child in mirror.children {
                guard let label = child.label, let member = dictionary[label], reflects(child.value, as: member) else { return false }
            }
            return true
        case let array as [Any]:
            guard mirror.displayStyle == .collection || mirror.displayStyle == .set else { return true }
            let elements = mirror.children.map(\.value)
            return elements.count == array.count && zip(elements, array).allSatisfy { reflects($0, as: $1) }
        default:
            // A leaf: a number, string or boolean, or a struct stored as one value (`Date`, `Data`). An enum reads
            // back only its own cases, which its raw value's kind does not tell; a `nil` is a member a value may lack.
            return mirror.displayStyle == nil || mirror.displayStyle == .struct
        }
    }

    /// The stored default with one change each: a member removed, or a member's value (at any depth) replaced by one
    /// of another kind.
    private static func variants(of stored: Any) -> [Any] {
        guard let normalized = PlistValue.normalized(stored) else { return [] }
        var found: [Any] = []
        switch normalized {
        case let dictionary as [String: Any]:
            for (name, member) in dictionary {
                var without = dictionary
                without[name] = nil
                found.append(without)
                for changed in [otherKind(than: member)] + variants(of: member) {
                    var with = dictionary
                    with[name] = changed
                    found.append(with)
                }
            }
        case let array as [Any]:
            for (index, element) in array.enumerated() {
                for changed in [otherKind(than: element)] + variants(of: element) {
                    var with = array
                    with[index] = changed
                    found.append(with)
                }
            }
        default:
            break
        }
        return found
    }

    /// A value of another kind than `value`: a dictionary for a string, else a string.
    private static func otherKind(than value: Any) -> Any {
        PrefsSchema.kind(of: value) == "string" ? [String: Any]() : "§"
    }
}

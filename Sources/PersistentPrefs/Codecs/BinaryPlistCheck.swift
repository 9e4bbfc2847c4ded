import Foundation

/// A structural check of a binary property list (`bplist00`), run before Foundation parses one: Foundation's parser
/// trusts the file, and a set marker (`0xC_`, two flipped bits from an array), a reference out of range or a cycle
/// can crash the process, so a damaged file would crash every launch. This walks the object graph without recursion
/// and refuses, with a reason: a trailer, offset table, offsets or lengths outside the data; markers other than
/// booleans, integers (1–16 bytes), reals (4 or 8 bytes), dates, data, ASCII and UTF-16 strings, arrays and
/// dictionaries; non-string keys, references past the table, cycles; nesting deeper than ``maximumDepth``, or a graph
/// that expands (shared objects counted per use, as Foundation converts) past ``maximumExpandedObjects``.
enum BinaryPlistCheck {
    /// Deeper than any file Foundation's XML parser accepts (about 512 levels).
    static let maximumDepth = 512
    /// Bounds the work of converting a graph whose objects are shared many times over.
    static let maximumExpandedObjects = 10_000_000

    /// Why `data` (which starts with `bplist00`) must not be parsed, or `nil` when it may be.
    static func problem(in data: Data) -> String? {
        data.withUnsafeBytes { buffer in
            Walker(bytes: buffer).problem()
        }
    }

    private struct Walker {
        let bytes: UnsafeRawBufferPointer

        /// The trailer's fields.
        private struct Layout {
            var offsetSize = 0
            var referenceSize = 0
            var objectCount = 0
            var topObject = 0
            var tableOffset = 0
        }

        func problem() -> String? {
            let count = bytes.count
            guard count >= 8 + 32, bytes.starts(with: Array("bplist00".utf8)) else { return "a binary property list too short for its trailer" }
            var layout = Layout()
            let trailer = count - 32
            layout.offsetSize = Int(bytes[trailer + 6])
            layout.referenceSize = Int(bytes[trailer + 7])
            guard let objects = integer(at: trailer + 8, size: 8), let top = integer(at: trailer + 16, size: 8),
                let table = integer(at: trailer + 24, size: 8)
            else { return "an unreadable trailer" }
            layout.objectCount = objects
            layout.topObject = top
            layout.tableOffset = table
            guard (1...8).contains(layout.offsetSize), (1...8).contains(layout.referenceSize) else {
                return "offset or reference sizes out of range"
            }
            guard layout.objectCount > 0, layout.topObject < layout.objectCount, layout.tableOffset >= 8,
                layout.objectCount <= (trailer - layout.tableOffset) / layout.offsetSize
            else { return "an object table outside the file" }
            return walk(layout)
        }

        /// Visits every object reachable from the top one, depth first, with an explicit stack.
        private func walk(_ layout: Layout) -> String? {
            enum Mark: UInt8 { case unseen, open, done }
            var marks = [Mark](repeating: .unseen, count: layout.objectCount)
            /// Objects in the tree Foundation builds from each object, once it is done.
            var expanded = [Int](repeating: 0, count: layout.objectCount)
            var heights = [Int](repeating: 0, count: layout.objectCount)
            // Each frame: an object and the references it holds, with the next one to visit.
            var stack: [(object: Int, references: [Int], next: Int)] = []

            func open(_ object: Int) -> String? {
                guard let references = self.references(of: object, layout) else {
                    return "object \(object) is damaged or of a kind the library never writes"
                }
                marks[object] = .open
                stack.append((object, references, 0))
                return stack.count > BinaryPlistCheck.maximumDepth ? "nesting deeper than \(BinaryPlistCheck.maximumDepth) levels" : nil
            }

            guard isDictionary(layout.topObject, layout) else { return "the top level is not a dictionary" }
            if let problem = open(layout.topObject) { return problem }
            while let frame = stack.last {
                if frame.next < frame.references.count {
                    stack[stack.count - 1].next += 1
                    let child = frame.references[frame.next]
                    guard child < layout.objectCount else { return "a reference past the object table" }
                    switch marks[child] {
                    case .open: return "a cycle of references"
                    case .done: continue
                    case .unseen: if let problem = open(child) { return problem }
                    }
                } else {
                    stack.removeLast()
                    var total = 1
                    var height = 0
                    for child in frame.references {
                        total = min(total + expanded[child], BinaryPlistCheck.maximumExpandedObjects + 1)
                        height = max(height, heights[child] + 1)
                    }
                    guard total <= BinaryPlistCheck.maximumExpandedObjects else { return "more than \(BinaryPlistCheck.maximumExpandedObjects) objects once expanded" }
                    guard height <= BinaryPlistCheck.maximumDepth else { return "nesting deeper than \(BinaryPlistCheck.maximumDepth) levels" }
                    expanded[frame.object] = total
                    heights[frame.object] = height
                    marks[frame.object] = .done
                }
            }
            return nil
        }

        /// The start of `object`, or `nil` when its offset is outside the objects' area.
        private func start(of object: Int, _ layout: Layout) -> Int? {
            guard let offset = integer(at: layout.tableOffset + object * layout.offsetSize, size: layout.offsetSize),
                offset >= 8, offset < layout.tableOffset
            else { return nil }
            return offset
        }

        private func isDictionary(_ object: Int, _ layout: Layout) -> Bool {
            guard let offset = start(of: object, layout) else { return false }
            return bytes[offset] >> 4 == 0xD
        }

        /// The references `object` holds (dictionary keys first), `[]` for scalars, or `nil` when the object is
        /// damaged or of a kind the library never writes.
        private func references(of object: Int, _ layout: Layout) -> [Int]? {
            guard let offset = start(of: object, layout) else { return nil }
            let marker = bytes[offset]
            let low = Int(marker & 0x0F)
            let end = layout.tableOffset
            switch marker >> 4 {
            case 0x0:
                return marker == 0x08 || marker == 0x09 ? [] : nil  // false, true
            case 0x1:
                return low <= 4 && offset + 1 + (1 << low) <= end ? [] : nil
            case 0x2:
                return (low == 2 || low == 3) && offset + 1 + (1 << low) <= end ? [] : nil
            case 0x3:
                return marker == 0x33 && offset + 9 <= end ? [] : nil
            case 0x4, 0x5, 0x6:
                guard let (count, body) = length(at: offset, layout) else { return nil }
                let size = marker >> 4 == 0x6 ? count.multipliedReportingOverflow(by: 2) : (partialValue: count, overflow: false)
                guard !size.overflow, size.partialValue <= end - body else { return nil }
                return []
            case 0xA, 0xD:
                guard let (count, body) = length(at: offset, layout) else { return nil }
                let slots = marker >> 4 == 0xD ? count.multipliedReportingOverflow(by: 2) : (partialValue: count, overflow: false)
                guard !slots.overflow, slots.partialValue <= (end - body) / layout.referenceSize else { return nil }
                var references: [Int] = []
                references.reserveCapacity(slots.partialValue)
                for slot in 0..<slots.partialValue {
                    guard let reference = integer(at: body + slot * layout.referenceSize, size: layout.referenceSize),
                        reference < layout.objectCount
                    else { return nil }
                    references.append(reference)
                }
                if marker >> 4 == 0xD {
                    for key in references.prefix(count) {
                        guard let keyOffset = start(of: key, layout), [0x5, 0x6].contains(bytes[keyOffset] >> 4) else { return nil }
                    }
                }
                return references
            default:
                return nil  // UIDs (0x8_), sets (0xC_) and unassigned markers
            }
        }

        /// The element count of the object at `offset` (the marker's low nibble, or for `0xF` an integer object that
        /// follows) and where its body starts.
        private func length(at offset: Int, _ layout: Layout) -> (count: Int, body: Int)? {
            let low = Int(bytes[offset] & 0x0F)
            guard low == 0x0F else { return (low, offset + 1) }
            guard offset + 1 < layout.tableOffset else { return nil }
            let marker = bytes[offset + 1]
            guard marker >> 4 == 0x1, marker & 0x0F <= 3 else { return nil }
            let size = 1 << Int(marker & 0x0F)
            guard offset + 2 + size <= layout.tableOffset, let count = integer(at: offset + 2, size: size) else { return nil }
            return (count, offset + 2 + size)
        }

        /// The big-endian unsigned integer of `size` bytes at `offset`; `nil` outside the data or past `Int`.
        private func integer(at offset: Int, size: Int) -> Int? {
            guard offset >= 0, size > 0, offset <= bytes.count - size else { return nil }
            var value: UInt64 = 0
            for index in offset..<(offset + size) {
                value = value << 8 | UInt64(bytes[index])
            }
            return value <= UInt64(Int.max) ? Int(value) : nil
        }
    }
}

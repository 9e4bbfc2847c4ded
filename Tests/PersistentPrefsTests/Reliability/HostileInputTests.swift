import Foundation
import PersistentPrefs
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Values and files that used to crash the host or lose data (issue #8). Crash cases run in a
/// child process, so a crash fails the test, not the test runner.
@Suite("Hostile values and files")
struct HostileInputTests {
    final class DeepPrefs: PersistentPrefs {
        override var keys: [String] { ["Deep", "Date", "Other"] }
    }

    @Test(
        "nesting up to the limit is stored, read back and written over, in both durable stores; one level more is refused, naming the key",
        arguments: StoreFixture.durable)
    func depthLimit(fixture: StoreFixture) throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        for dictionaries in [false, true] {
            let prefs = DeepPrefs(key: "deep", store: store)
            prefs.values = ["Deep": TreeMaker.chain(depth: 100, dictionaries: dictionaries)]
            #expect(prefs.lastError == nil)
            // Read back from the store (a suite file holds the set one level deeper than a set's file)...
            var value = try #require(try prefs.reload()["Deep"])
            #expect(prefs.lastError == nil)
            var depth = 0
            while true {
                if let array = value as? [Any], let first = array.first {
                    value = first
                } else if let dictionary = value as? [String: Any], let inner = dictionary["k"] {
                    value = inner
                } else {
                    break
                }
                depth += 1
            }
            #expect(depth == 100 && value as? String == "leaf", "dictionaries: \(dictionaries)")
            // ...and written over: the store reads the file it wrote before changing it.
            prefs["Other"] = 1
            #expect(prefs.lastError == nil, "dictionaries: \(dictionaries)")
            #expect(try DeepPrefs(key: "deep", store: store).reload()["Other"] as? Int == 1)
        }
        let prefs = DeepPrefs(key: "deep", store: store)
        prefs.values = ["Deep": TreeMaker.chain(depth: 101, dictionaries: false), "Other": 2]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["Deep"]))
        #expect(prefs["Other"] as? Int == 1)
    }

    @Test(
        "a value nested 100,000 deep is refused without a crash, on every kind of thread", waitLimit,
        arguments: ["main", "thread", "dispatch", "task"])
    func deepValueOnEveryThread(thread: String) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let output = try child.run("prefs-test-helper", ["deep-write", "-", thread, "100000"])
        #expect(output.status == 0, "the helper crashed: \(output.stderr.prefix(300))")
        #expect(output.stdout.contains("refused") && output.stdout.contains("\"Deep\""))
    }

    @Test("dates a store cannot read back as written are refused, naming the key", arguments: [
        Double.nan, .infinity, -.infinity, 1e300, -1e300, -1e17, 252_423_993_600, -63_113_904_001,
    ])
    func unstorableDates(seconds: Double) {
        let prefs = DeepPrefs(key: "dates", store: InMemoryStore())
        prefs["Date"] = Date(timeIntervalSinceReferenceDate: seconds)
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["Date"]))
        prefs["Date"] = ["nested": Date(timeIntervalSinceReferenceDate: seconds)]
        #expect(prefs.lastError == .valuesNotPlistCompatible(invalidElements: ["Date"]))
    }

    @Test("the first and last storable dates, and non-finite numbers, read back equal in both durable stores", arguments: StoreFixture.durable)
    func edgeValuesRoundTrip(fixture: StoreFixture) throws {
        let (store, cleanUp) = fixture.make()
        defer { cleanUp() }
        let first = Date(timeIntervalSinceReferenceDate: -63_113_904_000)
        let last = Date(timeIntervalSinceReferenceDate: 252_423_993_599)
        let prefs = DeepPrefs(key: "edges", store: store)
        prefs.values = ["Date": [first, last], "Other": [Double.nan, Double.infinity, -Double.infinity]]
        #expect(prefs.lastError == nil)
        let reloaded = try prefs.reload()
        #expect(reloaded["Date"] as? [Date] == [first, last])
        let numbers = try #require(reloaded["Other"] as? [Double])
        #expect(numbers.count == 3 && numbers[0].isNaN && numbers[1] == .infinity && numbers[2] == -.infinity)
    }

    @Test("a stored NaN date is described, not trapped on, when it is read as another type")
    func describingNaNDate() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let file = try store.fileURL(forRoot: "typed")
        let data = try PropertyListSerialization.data(
            fromPropertyList: ["Count": Date(timeIntervalSinceReferenceDate: .nan)], format: .binary, options: 0)
        try data.write(to: file)
        final class Typed: PersistentPrefs {
            @Pref("Count") var launches = 3
        }
        let prefs = Typed(key: "typed", store: store)
        #expect(prefs.launches == 3)
        guard case .typeMismatch(let key, _, let found)? = prefs.lastError else {
            Issue.record("expected a type mismatch, got \(String(describing: prefs.lastError))")
            return
        }
        #expect(key == "Count")
        #expect(found.contains("Date"))
    }

    /// A set file the library wrote, with every object marker byte replaced by every high
    /// nibble in turn: none may crash the process that loads them.
    @Test("binary files with mutated object markers (sets, UIDs, bad lengths) never crash a load", waitLimit)
    func mutatedMarkers() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let source = PlistFileStore(directory: URL(fileURLWithPath: directory.path + "/source"))
        try source.save(["Array": [1, "two", [3.5, Date(timeIntervalSinceReferenceDate: 0)]], "Map": ["k": Data([1, 2])], "Flag": true], root: "R")
        let original = try Data(contentsOf: try source.fileURL(forRoot: "R"))
        let bytes = [UInt8](original)
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let objects = bytes[(trailer + 8)..<(trailer + 16)].reduce(0) { $0 << 8 | Int($1) }
        let table = bytes[(trailer + 24)..<(trailer + 32)].reduce(0) { $0 << 8 | Int($1) }
        let offsets = (0..<objects).map { index in
            bytes[(table + index * offsetSize)..<(table + (index + 1) * offsetSize)].reduce(0) { $0 << 8 | Int($1) }
        }
        let mutated = URL(fileURLWithPath: directory.path + "/mutated")
        try FileManager.default.createDirectory(at: mutated, withIntermediateDirectories: true)
        var count = 0
        for offset in offsets {
            for nibble in UInt8(0)..<16 {
                var copy = bytes
                copy[offset] = nibble << 4 | (copy[offset] & 0x0F)
                guard copy != bytes else { continue }
                try Data(copy).write(to: mutated.appendingPathComponent("m\(count).plist"))
                count += 1
            }
        }
        let (child, config) = ChildProcess.inTemporaryConfigHome()
        defer { config.remove() }
        let output = try child.run("prefs-test-helper", ["load-files", "-", mutated.path])
        print("[reliability] PlistFileStore: \(count) files with a mutated object marker: \(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), exit \(output.status)")
        #expect(output.status == 0, "the loading process crashed: \(output.stderr.prefix(300))")
        #expect(output.stdout.hasPrefix("loaded "))
    }

    @Test("XML and old-style files nested 100,000 deep are refused without a crash", waitLimit)
    func deepTextFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let depth = 100_000
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict><key>k</key>"
            + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</dict></plist>"
        let oldStyle = "{k=" + String(repeating: "(", count: depth) + String(repeating: ")", count: depth) + ";}"
        try Data(xml.utf8).write(to: URL(fileURLWithPath: directory.path + "/xml.plist"))
        try Data(oldStyle.utf8).write(to: URL(fileURLWithPath: directory.path + "/old.plist"))
        let (child, config) = ChildProcess.inTemporaryConfigHome()
        defer { config.remove() }
        let output = try child.run("prefs-test-helper", ["load-files", "-", directory.path])
        #expect(output.status == 0, "the loading process crashed: \(output.stderr.prefix(300))")
        #expect(output.stdout == "loaded 0 of 2\n")
    }

    @Test("a binary file holding a set (0xC_ marker) is reported and moved aside, not parsed")
    func setMarker() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["A": [1, 2]], root: "R")
        let url = try store.fileURL(forRoot: "R")
        var bytes = [UInt8](try Data(contentsOf: url))
        let index = try #require(bytes.firstIndex(of: 0xA2))
        bytes[index] = 0xC2
        try Data(bytes).write(to: url)
        let error = #expect(throws: PersistentPrefs.PrefsError.self) { try store.load(root: "R") }
        guard case .corruptStore(_, let reason)? = error else {
            Issue.record("expected corruptStore, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("it is damaged, a binary property list that does not read") && reason.contains("moved aside"))
    }

    @Test(
        "a file rewritten in place while it is read is waited for, not moved aside", waitLimit,
        .enabled(if: ReadHandshake.isAvailable, "needs inotify to learn when the reader has read the file")
    )
    func fileInFlux() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["A": 1], root: "R")
        let url = try store.fileURL(forRoot: "R")
        let good = try Data(contentsOf: url)
        // An empty file, as an in-place writer leaves it between truncating and writing.
        try Data().write(to: url)
        // The writer finishes the rewrite as soon as the reader has read the empty file, not after
        // a fixed sleep: the reader's whole quiet period (0.3 s) is left for one waiting thread to
        // wake, and the test knows the reader did see the file in flux.
        let handshake = try #require(ReadHandshake(url.path))
        let written = Flag()
        let writer = Thread {
            if handshake.waitForRead() {
                try? good.write(to: url)
                written.set()
            }
        }
        writer.start()
        #expect(try store.load(root: "R")?["A"] as? Int == 1)
        handshake.stop()
        #expect(written.wait(), "the reader never read the empty file: the test proves nothing then")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.contains { $0.contains(".corrupt-") })
    }

    @Test("a store in a read-only folder can still be read", .enabled(if: getuid() != 0, "root ignores permissions"))
    func readOnlyStore() throws {
        let directory = TemporaryDirectory()
        defer {
            chmod(directory.path, 0o700)
            directory.remove()
        }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        try store.save(["A": 1], root: "R")
        unlink(try store.fileURL(forRoot: "R").path + ".lock")
        chmod(directory.path, 0o500)
        #expect(try store.load(root: "R")?["A"] as? Int == 1)
    }
}

/// Tells a test's writer thread when another thread has read a file (opened it, and closed it
/// without writing: inotify's `IN_CLOSE_NOWRITE`), so the writer acts on that event instead of
/// after a sleep.
final class ReadHandshake: Sendable {
    #if canImport(Glibc)
        static let isAvailable = true
    #else
        static let isAvailable = false
    #endif

    private let descriptor: Int32
    private let stopped = Flag()

    /// Starts watching `path` (which must exist); `nil` where there is no inotify.
    init?(_ path: String) {
        #if canImport(Glibc)
            descriptor = inotify_init1(Int32(IN_CLOEXEC))
            guard descriptor >= 0, inotify_add_watch(descriptor, path, UInt32(IN_CLOSE_NOWRITE)) >= 0 else {
                return nil  // deinit closes the descriptor
            }
        #else
            return nil
        #endif
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Blocks until the file has been read since `init` (`true`), or until ``stop()`` (`false`).
    func waitForRead() -> Bool {
        #if canImport(Glibc)
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while !stopped.isSet {
                if poll(&entry, 1, 20) > 0 { return true }  // the 20 ms only bound how late `stop()` is seen
            }
        #endif
        return false
    }

    /// Ends ``waitForRead()``.
    func stop() {
        stopped.set()
    }
}

import Foundation
import PersistentPrefs
import Testing

#if canImport(Observation)
    import Observation
#endif

/// A `@Pref` read remembers its answer for the state it read: the next read of the same state
/// takes it without a look-up. These tests read each key twice (the second read is served from
/// what the first remembered) and then change what a read must see in every way there is.
@Suite("Remembered reads")
struct RememberedReadTests {
    final class Remembering: PersistentPrefs, @unchecked Sendable {  // an instance may be used from any thread
        @Pref("Volume") var volume = 5
        @Pref("Other Volume") var otherVolume = 6
        @Pref("Name") var name = "declared"
        @Pref("Ratio") var ratio = 0.5
        @Pref("Tags") var tags: [String] = []
    }

    /// Reads every key of `prefs` twice, so each has its answer remembered.
    static func readTwice(_ prefs: Remembering) -> [String] {
        var seen: [String] = []
        for _ in 0..<2 { seen = ["\(prefs.volume)", "\(prefs.otherVolume)", prefs.name, "\(prefs.ratio)", "\(prefs.tags)"] }
        return seen
    }

    @Test("each key keeps its own answer; a write by any instance of the set is read at once")
    func writesAreSeen() {
        let store = InMemoryStore()
        let prefs = Remembering(key: "R", values: ["Volume": 1, "Other Volume": 2, "Name": "one", "Ratio": 0.25, "Tags": ["a"]], store: store)
        #expect(Self.readTwice(prefs) == ["1", "2", "one", "0.25", "[\"a\"]"])
        prefs.volume = 3
        #expect(prefs.volume == 3 && prefs.otherVolume == 2)
        let other = Remembering(key: "R", store: store)
        other.name = "two"
        other.tags = ["b", "c"]
        #expect(Self.readTwice(prefs) == ["3", "2", "two", "0.25", "[\"b\", \"c\"]"])
        other.values = ["Volume": 9]  // every other key removed: the declared defaults again
        #expect(Self.readTwice(prefs) == ["9", "6", "declared", "0.5", "[]"])
    }

    @Test("a batch's pending changes, a reload and a changed root key are read, not the remembered answer")
    func batchReloadAndKey() throws {
        let store = InMemoryStore()
        let prefs = Remembering(key: "R", values: ["Volume": 1], store: store)
        let second = Remembering(key: "S", values: ["Volume": 2], store: store)
        _ = Self.readTwice(prefs)
        _ = Self.readTwice(second)
        prefs.batch { prefs in
            prefs.volume = 7
            #expect(prefs.volume == 7)
        }
        #expect(prefs.volume == 7)
        try store.save(["Volume": NSNumber(value: 8)], root: "R")  // behind the set's back
        _ = try prefs.reload()
        #expect(prefs.volume == 8)
        prefs.key = "S"
        #expect(prefs.volume == 2)
        prefs.key = "R"
        #expect(prefs.volume == 8)
    }

    @Test("damage found after an answer was remembered is reported by the next read")
    func damageIsReported() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = PlistFileStore(directory: URL(fileURLWithPath: directory.path))
        let prefs = Remembering(key: "R", values: ["Volume": 4], store: store)
        _ = Self.readTwice(prefs)
        #expect(prefs.volume == 4 && prefs.lastError == nil)
        try Data("\u{1}garbage".utf8).write(to: store.fileURL(forRoot: "R"))
        _ = try? prefs.reload()
        #expect(prefs.volume == 5)  // the damaged file was moved aside: the declared default
        guard case .corruptStore? = prefs.lastError else {
            Issue.record("expected the damage reported, got \(String(describing: prefs.lastError))")
            return
        }
    }

    @Test("a rule still sees a remembered value")
    func rulesSeeRememberedValues() {
        final class Ruled: PersistentPrefs {
            @Pref("Volume", in: 0...10) var volume = 5
        }
        let store = InMemoryStore()
        try? store.save(["Volume": NSNumber(value: 11)], root: "R")
        let prefs = Ruled(key: "R", store: store)
        #expect(prefs.volume == 5 && prefs.volume == 5)
        prefs.lastError = nil
        #expect(prefs.volume == 5)
        #expect(prefs.lastError == .invalidValue(key: "Volume", reason: "11 is outside the range 0...10"))
    }

    /// A `Codable` value that counts how often it is decoded.
    struct Counted: Codable, Equatable {
        nonisolated(unsafe) static var decodes = 0  // read and written by one test, on its own thread
        var width = 1.0

        init(width: Double = 1.0) { self.width = width }

        init(from decoder: any Decoder) throws {
            Self.decodes += 1
            width = try decoder.container(keyedBy: CodingKeys.self).decode(Double.self, forKey: .width)
        }
    }

    enum Theme: String { case light, dark }

    final class Decoding: PersistentPrefs {
        @Pref("Theme") var theme = Theme.light
        @Pref("Frame") var frame = Counted()
        @Pref("Folder") var folder: URL?
        @Pref("Unset") var unset = 42
    }

    @Test("enum, URL and Codable values are decoded once per stored value; a key at its default is answered from memory too")
    func decodedOncePerValue() {
        let store = InMemoryStore()
        let prefs = Decoding(key: "D", store: store)
        prefs.frame = Counted(width: 2)
        prefs.theme = .dark
        prefs.folder = URL(fileURLWithPath: "/tmp")
        Counted.decodes = 0
        for _ in 0..<100 {
            #expect(prefs.frame == Counted(width: 2) && prefs.theme == .dark && prefs.unset == 42)
            #expect(prefs.folder == URL(fileURLWithPath: "/tmp"))
        }
        #expect(Counted.decodes == 1, "decoded once for the stored value, then remembered")
        Decoding(key: "D", store: store).frame = Counted(width: 3)  // another instance writes the set
        for _ in 0..<100 { #expect(prefs.frame == Counted(width: 3)) }
        #expect(Counted.decodes == 2, "decoded again once, for the new value")
        Decoding(key: "D", store: store).unset = 7  // a key read at its default is then stored
        #expect(prefs.unset == 7)
        prefs.reset("Unset")
        #expect(prefs.unset == 42)
    }

    @Test("a value that reads with a problem is reported by every read, never remembered")
    func problemsAreNotRemembered() throws {
        let store = InMemoryStore()
        try store.save(["Theme": "purple" as NSString], root: "D")
        let prefs = Decoding(key: "D", store: store)
        for _ in 0..<3 {
            prefs.lastError = nil
            #expect(prefs.theme == .light)
            guard case .typeMismatch(key: "Theme", _, _)? = prefs.lastError else {
                Issue.record("expected a type mismatch reported, got \(String(describing: prefs.lastError))")
                return
            }
        }
        prefs.theme = .dark
        prefs.lastError = nil
        #expect(prefs.theme == .dark && prefs.theme == .dark && prefs.lastError == nil)
    }

    #if canImport(Observation)
        @Test("withObservationTracking hears a read served from a remembered answer")
        func observationTracking() {
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
            let store = InMemoryStore()
            let prefs = Remembering(key: "R", values: ["Volume": 1], store: store)
            _ = Self.readTwice(prefs)
            let fired = Flag()
            withObservationTracking {
                _ = prefs.volume
            } onChange: {
                fired.set()
            }
            Remembering(key: "R", store: store).otherVolume = 3
            #expect(!fired.isSet)
            Remembering(key: "R", store: store).volume = 2
            #expect(fired.isSet)
        }
    #endif

    /// Runs `writer` and `reader` on two threads at once, `rounds` times each, and returns once
    /// both are done; `writer` returns whether what it saw was right.
    static func racing(rounds: Int, writer: @escaping @Sendable (Int) -> Bool, reader: @escaping @Sendable () -> Void) -> Int {
        let wrong = RaceCounter()
        let done = DispatchGroup()
        for lane in 0..<2 {
            done.enter()
            Thread {
                for round in 1...rounds {
                    if lane == 0 { if !writer(round) { wrong.add() } } else { reader() }
                }
                done.leave()
            }.start()
        }
        done.wait()
        return wrong.value
    }

    @Test("a root key switched away and back while another thread reads never leaves the other set's answer remembered")
    func keyFlipsAreNotRemembered() {
        let store = InMemoryStore()
        let a = Remembering(key: "A", values: ["Volume": 1], store: store)  // keeps set A alive, and its stamp
        let b = Remembering(key: "B", values: ["Volume": 2], store: store)
        let prefs = Remembering(key: "A", store: store)
        let wrong = Self.racing(rounds: 10_000) { _ in
            prefs.key = "B"
            prefs.key = "A"
            _ = prefs.values
            return prefs.volume == 1  // on A, whatever the reader remembered meanwhile
        } reader: {
            _ = prefs.volume
        }
        #expect(wrong == 0)
        withExtendedLifetime((a, b)) {}
    }

    @Test("a batch abandoned while another thread reads never leaves its value remembered")
    func abandonedBatchesAreNotRemembered() {
        struct Abandoned: Error {}
        let prefs = Remembering(key: "R", values: ["Volume": 1], store: InMemoryStore())
        let wrong = Self.racing(rounds: 10_000) { round in
            prefs.otherVolume = round  // a new state: the reader's next read works its answer out
            try? prefs.batch { prefs in
                prefs.volume = 99
                throw Abandoned()  // nothing is written
            }
            return prefs.volume == 1
        } reader: {
            _ = prefs.volume
        }
        #expect(wrong == 0)
    }

    @Test("8 threads reading one instance while a ninth writes it: no read goes back, the last write is read")
    func concurrentReads() {
        let prefs = Remembering(key: "R", values: ["Volume": 0], store: InMemoryStore())
        let wentBack = Flag()
        DispatchQueue.concurrentPerform(iterations: 9) { lane in
            if lane == 0 {
                for value in 1...500 { prefs.volume = value }
                return
            }
            var last = 0
            for _ in 0..<2_000 {
                let read = prefs.volume
                // One thread writes increasing values: a read that goes back saw a stale answer.
                if read < last || read > 500 { wentBack.set() }
                last = read
            }
        }
        #expect(!wentBack.isSet)
        #expect(prefs.volume == 500)
    }
}

/// A count several threads add to.
final class RaceCounter: @unchecked Sendable {  // `count` is only touched while holding `lock`
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

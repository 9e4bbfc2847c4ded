import Foundation
import PersistentPrefs
import Testing

/// The two durable stores, as the helper process names them.
enum DurableStore: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case userDefaults = "UserDefaultsStore"
    case plistFile = "PlistFileStore"
    /// `UserDefaultsStore` through `UserDefaults` (`set`, `synchronize()`), the road Apple
    /// platforms take. Only the checks that hold for it on Linux run with it: Foundation there
    /// rewrites the file in place without a lock, so a kill mid-write or a second writer
    /// process can lose data (on Apple platforms `cfprefsd` serialises and replaces atomically).
    case applePath = "UserDefaultsStore (Apple path)"
    var testDescription: String { rawValue }

    /// The stores that must survive a kill mid-write and several writer processes: on Apple
    /// platforms `PlistFileStore` only, since a suite there goes through `cfprefsd`, which
    /// promises exactness only within one process, and a helper process's suite would be the
    /// user's real one.
    static let crashSafe: [DurableStore] = suitesAreLibraryFiles ? [.userDefaults, .plistFile] : [.plistFile]

    /// Every store a helper process can use here: on Apple platforms `PlistFileStore` only (a
    /// helper's suite would be the user's real one).
    static let here: [DurableStore] = suitesAreLibraryFiles ? allCases : [.plistFile]

    /// The helper's SUITE argument: a suite name, a directory for PlistFileStore, or
    /// `apple:NAME` for the Apple path.
    func suite(in directory: TemporaryDirectory) -> String {
        switch self {
        case .userDefaults: return "reliability"
        case .plistFile: return directory.path + "/files"
        case .applePath: return "apple:reliability"
        }
    }
}

/// Crash safety and multi-process safety, measured with real processes. Each test prints its
/// figure; the DocC article "Linux, reliability and what is measured" quotes them.
@Suite("Reliability", waitLimit)
struct ReliabilityTests {
    @Test("SIGKILL right after a setter returns: 0 of 50 writes lost", arguments: DurableStore.here)
    func killAfterSet(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        var lost = 0
        for trial in 1...50 {
            _ = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", suite, "Root", "\(trial)"])
            let read = try child.run("prefs-test-helper", ["get-int", suite, "Root"])
            if read.stdout != "\(trial)\n" { lost += 1 }
        }
        print("[reliability] \(store.rawValue): SIGKILL right after a set: \(lost) of 50 writes lost")
        #expect(lost == 0)
    }

    @Test("SIGKILL at a random moment in a write loop: the store always loads an acknowledged state", arguments: DurableStore.crashSafe)
    func killDuringWrites(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        var generator = SystemRandomNumberGenerator()
        var bad = 0
        var acknowledgedTotal = 0
        for trial in 1...50 {
            let (process, output) = try child.start("prefs-test-helper", ["loop-int", suite, "Root"])
            Thread.sleep(forTimeInterval: Double.random(in: 0.02...0.12, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let printed = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
            let acknowledged = printed.split(separator: "\n").compactMap { Int($0) }.last ?? 0
            acknowledgedTotal += acknowledged
            let read = try child.run("prefs-test-helper", ["get-int", suite, "Root"])
            let text = read.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let value = Int(text)
            // The last acknowledged write, or the one after it (written, killed before it was
            // acknowledged); before any acknowledgement, nothing or the sample defaults.
            let consistent: Bool
            if acknowledged == 0 {
                consistent = text == "nil" || value == 12345 || value == 1
            } else {
                consistent = value == acknowledged || value == acknowledged + 1
            }
            guard read.status == 0, consistent else {
                bad += 1
                print("[reliability] \(store.rawValue) trial \(trial): acknowledged \(acknowledged), loaded \(read.stdout)\(read.stderr)")
                continue
            }
            // The next trial starts from a clean set, so its numbers are its own.
            let cleared = try child.run("prefs-test-helper", ["clear", suite, "Root"])
            #expect(cleared.status == 0, "\(cleared.stderr)")
        }
        print("[reliability] \(store.rawValue): SIGKILL inside a write loop: \(bad) of 50 trials loaded an error or an unacknowledged state (\(acknowledgedTotal) writes acknowledged in all)")
        #expect(bad == 0)
    }

    @Test("4 processes × 200 writes of distinct keys of one root key: 0 lost", arguments: DurableStore.crashSafe)
    func concurrentProcessesOneRoot(store: DurableStore) throws {
        let lost = try Self.runWriters(store: store, roots: ["Shared", "Shared", "Shared", "Shared"])
        print("[reliability] \(store.rawValue): 4 processes × 200 keys of one root key: \(lost) of 800 lost")
        #expect(lost == 0)
    }

    @Test("4 processes × 200 writes to 4 distinct root keys of one store: 0 lost", arguments: DurableStore.crashSafe)
    func concurrentProcessesDistinctRoots(store: DurableStore) throws {
        let lost = try Self.runWriters(store: store, roots: ["R0", "R1", "R2", "R3"])
        print("[reliability] \(store.rawValue): 4 processes × 200 keys of 4 root keys: \(lost) of 800 lost")
        #expect(lost == 0)
    }

    /// Starts one writer per entry of `roots` (writer `i` writes keys `k(200i)`…), waits for
    /// all, and returns how many of the 800 writes are missing.
    static func runWriters(store: DurableStore, roots: [String]) throws -> Int {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        let writers = try roots.enumerated().map { index, root in
            let process = try child.process("prefs-test-helper", ["write-keys", suite, root, "\(index * 200)", "200"])
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            return process
        }
        for writer in writers { try writer.run() }
        for writer in writers { writer.waitUntilExit() }
        #expect(writers.allSatisfy { $0.terminationStatus == 0 })
        var found = 0
        for root in Set(roots) {
            let count = try child.run("prefs-test-helper", ["count-keys", suite, root])
            let fields = count.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            found += fields.count == 2 ? fields[1] : 0
        }
        return 800 - found
    }
}

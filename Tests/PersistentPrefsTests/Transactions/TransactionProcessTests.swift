import Foundation
import PersistentPrefs
import Testing

/// Transactions across real processes (the built `prefs-test-helper`), for both durable stores.
/// Each test prints its figure; the DocC article "Transactions" quotes them.
@Suite("Transactions across processes", waitLimit)
struct TransactionProcessTests {
    /// Runs one helper per argument list at once and waits for all; returns their outputs.
    static func together(_ child: ChildProcess, _ commands: [[String]]) throws -> [ChildProcess.Output] {
        let runs = try commands.map { arguments -> (Process, Pipe, Pipe) in
            let process = try child.process("prefs-test-helper", arguments)
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            return (process, out, err)
        }
        for (process, _, _) in runs { try process.run() }
        return runs.map { process, out, err in
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return ChildProcess.Output(status: process.terminationStatus, stdout: stdout, stderr: stderr)
        }
    }

    /// Starts `prefs-test-helper batch-loop` (k0…k9 = n, n = 1, 2, … as one batch or update
    /// each) and returns once its first transaction is written.
    static func startWriter(_ child: ChildProcess, suite: String, mode: String) throws -> Process {
        let (process, output) = try child.start("prefs-test-helper", ["batch-loop", suite, "Wide", mode])
        _ = output.availableData  // "started"
        return process
    }

    @Test("4 processes × 250 update increments of one key → exactly 1,000", arguments: DurableStore.crashSafe)
    func concurrentIncrements(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        let started = Date()
        let outputs = try Self.together(child, Array(repeating: ["incr", suite, "Counter", "250"], count: 4))
        let seconds = Date().timeIntervalSince(started)
        for output in outputs { #expect(output.status == 0 && output.stdout == "done\n", "\(output.stderr)") }
        let check = try child.run("prefs-test-helper", ["get-counter", suite, "Counter"])
        print("[transactions] \(store.rawValue): 4 processes × 250 increments → \(check.stdout.trimmingCharacters(in: .newlines)) in \(String(format: "%.1f", seconds)) s")
        #expect(check.stdout == "count 1000 items 0 distinct 0\n", "\(check.stderr)")
    }

    @Test("4 processes × 250 update appends to one array → 1,000 distinct elements", arguments: DurableStore.crashSafe)
    func concurrentAppends(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        let outputs = try Self.together(child, (0..<4).map { ["append", suite, "List", "p\($0)", "250"] })
        for output in outputs { #expect(output.status == 0 && output.stdout == "done\n", "\(output.stderr)") }
        let check = try child.run("prefs-test-helper", ["get-counter", suite, "List"])
        print("[transactions] \(store.rawValue): 4 processes × 250 appends → \(check.stdout.trimmingCharacters(in: .newlines))")
        #expect(check.stdout == "count 0 items 1000 distinct 1000\n", "\(check.stderr)")
    }

    @Test(
        "SIGKILL inside a batch or an update loop: the set is always as before or as after, over 50 kills each",
        arguments: DurableStore.crashSafe)
    func killInsideTransactions(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        var generator = SystemRandomNumberGenerator()
        for mode in ["batch", "update"] {
            var torn = 0
            for trial in 1...50 {
                // Killed once it is writing (after its first transaction), at a random moment.
                let process = try Self.startWriter(child, suite: suite, mode: mode)
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.03, using: &generator))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                let check = try child.run("prefs-test-helper", ["poll-consistent", suite, "Wide", "1"])
                if !check.stdout.hasPrefix("reads 1 mixed 0 ") {
                    torn += 1
                    print("[transactions] \(store.rawValue) \(mode) trial \(trial): \(check.stdout)\(check.stderr)")
                }
            }
            print("[transactions] \(store.rawValue): SIGKILL inside a \(mode) loop: \(torn) of 50 kills left a torn set")
            #expect(torn == 0)
        }
    }

    @Test(
        "a reader in another process never sees half a batch: 0 mixed states in 2,000 reads",
        arguments: DurableStore.crashSafe)
    func readersNeverSeeHalfABatch(store: DurableStore) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let suite = store.suite(in: directory)
        let writer = try Self.startWriter(child, suite: suite, mode: "batch")
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        let poll = try child.run("prefs-test-helper", ["poll-consistent", suite, "Wide", "2000"])
        print("[transactions] \(store.rawValue): reader beside a batch writer: \(poll.stdout.trimmingCharacters(in: .newlines))")
        let fields = poll.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .newlines)) }
        #expect(fields.count == 3, "\(poll.stdout)\(poll.stderr)")
        guard fields.count == 3 else { return }
        #expect(fields[0] == 2000)
        #expect(fields[1] == 0)
        #expect(fields[2] > 10, "the writer should have moved on during the reads")
    }
}

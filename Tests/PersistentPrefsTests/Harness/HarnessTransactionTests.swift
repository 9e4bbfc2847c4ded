import Foundation
import PersistentPrefs
import PrefsHarnessKit
import Testing

@Suite("Harness: batch and incr", waitLimit)
struct HarnessTransactionTests {
    static func run(_ line: [String], _ session: HarnessSession, input: [String] = []) -> (Int32, RecordingConsole) {
        HarnessCommandTests.run(line, session, input: input)
    }

    @Test("batch applies NAME VALUE lines from stdin in one store write")
    func batchWritesOnce() throws {
        let store = CountingStore()
        let session = HarnessSession(rootKey: "B", store: store)
        _ = Self.run(["set", "int", "1"], session)  // the set exists (a write puts the sample defaults in an empty set)
        let writes = store.writeCount
        let (status, console) = Self.run(
            ["batch"], session, input: ["int 42", "# a comment", "", "String Value hello world", "array a, b, c"])
        #expect(status == 0, "\(console.err)")
        #expect(console.out == "Wrote 3 changes to \"B\" in one batch.\n")
        #expect(store.writeCount == writes + 1)
        let stored = try #require(try store.load(root: "B"))
        #expect(stored["Integer Value"] as? Int == 42)
        #expect(stored["String Value"] as? String == "hello world")
        #expect(stored["Array Value"] as? [String] == ["a", "b", "c"])
    }

    @Test(
        "a batch with one bad line writes nothing and exits 1, naming the line",
        arguments: [
            (["int 7", "string x", "int notanumber"], "line 3"),
            (["int 7", "bogus 3"], "line 2: unknown key 'bogus'"),
            (["int"], "line 1: Integer Value has no value"),
            ([], "no changes on stdin"),
        ])
    func batchRefusesBadLines(lines: [String], message: String) throws {
        let store = CountingStore()
        let session = HarnessSession(rootKey: "B", store: store)
        _ = Self.run(["set", "int", "1"], session)
        let writes = store.writeCount
        let (status, console) = Self.run(["batch"], session, input: lines)
        #expect(status == 1)
        #expect(console.err.contains(message), "\(console.err)")
        #expect(store.writeCount == writes)
        #expect(try store.load(root: "B")?["Integer Value"] as? Int == 1)
    }

    @Test("incr adds 1 or BY under the lock; refuses non-integers, overflow and bad steps")
    func incr() throws {
        let store = InMemoryStore()
        let session = HarnessSession(rootKey: "I", store: store)
        #expect(Self.run(["incr", "int"], session).1.out == "Integer Value = 12346\n")
        #expect(Self.run(["incr", "Integer Value", "-346"], session).1.out == "Integer Value = 12000\n")
        let notInt = Self.run(["incr", "string"], session)
        #expect(notInt.0 == 2)
        #expect(notInt.1.err.contains("integer keys"))
        #expect(Self.run(["incr", "int", "x"], session).0 == 2)
        _ = Self.run(["set", "int", "\(Int.max)"], session)
        let overflow = Self.run(["incr", "int"], session)
        #expect(overflow.0 == 1)
        #expect(overflow.1.err.contains("does not fit"))
        #expect(try store.load(root: "I")?["Integer Value"] as? Int == Int.max)
        try store.save(["Integer Value": "text"], root: "Odd")
        let odd = Self.run(["--key", "Odd", "incr", "int"], HarnessSession(rootKey: "Odd", store: store))
        #expect(odd.0 == 1)
        #expect(odd.1.err.contains("not an integer"))
    }

    @Test("4 harness processes × 20 incr at once: exactly 80 added")
    func incrAcrossProcesses() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let folder = directory.path + "/store"
        _ = try child.run("prefs-harness", ["--store-dir", folder, "set", "int", "0"])
        let loops = try (0..<4).map { _ -> Process in
            let process = try child.process("/bin/sh", [])
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            let harness = try ChildProcess.executable("prefs-harness").path
            process.arguments = ["-c", "for i in $(seq 20); do '\(harness)' --store-dir '\(folder)' incr int >/dev/null || exit 1; done"]
            return process
        }
        for loop in loops { try loop.run() }
        for loop in loops { loop.waitUntilExit() }
        #expect(loops.allSatisfy { $0.terminationStatus == 0 })
        let read = try child.run("prefs-harness", ["--store-dir", folder, "get", "int"])
        #expect(read.stdout == "80\n", "\(read.stderr)")
    }
}

import Foundation
import PersistentPrefs
import Testing

/// Coalesced writes across real processes: the built `prefs-test-helper` drags a value through
/// a coalescing set, with `XDG_CONFIG_HOME` in a temporary directory.
@Suite("Coalesced writes across processes: exit, SIGKILL, another process's update", waitLimit)
struct CoalescedProcessTests {
    /// What `output` printed up to and including `line` (or to its end).
    static func read(_ output: FileHandle, until line: String) -> String {
        var printed = ""
        while !printed.contains(line) {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        return printed
    }

    @Test("changes still waiting when the process exits normally are written, and read by a fresh process", .linuxSuiteFiles)
    func writtenAtExit() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        // A minute's interval: only the exit can have written the last value.
        let drag = try child.run("prefs-test-helper", ["slow-drag", "exit", "Root", "1000", "0", "exit"])
        #expect(drag.status == 0 && drag.stdout.hasSuffix("done\n"), "\(drag.stderr)")
        let read = try child.run("prefs-test-helper", ["get-int", "exit", "Root"])
        #expect(read.stdout == "1000\n", "\(read.stderr)")
    }

    @Test("synchronize() makes the changes durable: another process reads them at once", .linuxSuiteFiles)
    func synchronizeIsDurable() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let printed = try child.killAfter(line: "synced", "prefs-test-helper", ["slow-drag", "sync", "Root", "500", "0", "sync"])
        #expect(printed.contains("synced"))
        let read = try child.run("prefs-test-helper", ["get-int", "sync", "Root"])
        #expect(read.stdout == "500\n", "\(read.stderr)")
    }

    @Test("SIGKILL at random moments of bursts leaves a whole file holding a value the program set", arguments: suitesAreLibraryFiles ? ["suite", "files"] : ["files"])
    func sigkillDuringBursts(store: String) throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        // A UserDefaults suite file holds the set under its root key; a PlistFileStore file is the set.
        let folder = directory.path + "/files"
        let suite = store == "suite" ? "killed" : folder
        let file = store == "suite" ? directory.path + "/killed.plist" : try PlistFileStore(directory: URL(fileURLWithPath: folder)).fileURL(forRoot: "Root").path
        var written = 0
        for trial in 1...12 {
            let (process, output) = try child.start("prefs-test-helper", ["drag", suite, "Root", "400", "1", "again"])
            let printed = Self.read(output, until: "started")
            usleep(UInt32.random(in: 20_000...450_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(printed.contains("started"), "trial \(trial): the helper did not start")
            guard let data = FileManager.default.contents(atPath: file) else { continue }  // killed before the first write
            let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
            let set = try #require(store == "suite" ? plist?["Root"] as? [String: Any] : plist, "trial \(trial): the file holds no set")
            let value = try #require(set["Integer Value"] as? Int, "trial \(trial): no value")
            #expect((1...400).contains(value), "trial \(trial): \(value) was never set")
            written += 1
        }
        print("SIGKILL during coalesced bursts (\(store)): 12 trials, \(written) files written, each whole with a value the program set")
        #expect(written > 0, "no burst lasted long enough to be written")
    }

    @Test("a read-modify-write update from another process during a burst loses nothing", .linuxSuiteFiles)
    func updateDuringBurst() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        // A drag that goes on until it is stopped, so every update runs during it.
        let (drag, output) = try child.start("prefs-test-helper", ["drag", "merge", "Root", "1500", "1", "again"])
        _ = Self.read(output, until: "started")
        let increments = try child.run("prefs-test-helper", ["incr", "merge", "Root", "150"])
        #expect(increments.status == 0, "\(increments.stderr)")
        usleep(300_000)  // a few more of the drag's writes after the last update
        kill(drag.processIdentifier, SIGKILL)
        drag.waitUntilExit()
        let counter = try child.run("prefs-test-helper", ["get-counter", "merge", "Root"])
        #expect(counter.stdout.hasPrefix("count 150 "), "\(counter.stdout)\(counter.stderr)")
        let read = try child.run("prefs-test-helper", ["get-int", "merge", "Root"])
        let position = Int(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(position.map { (1...1500).contains($0) } == true, "the drag's value: \(read.stdout)\(read.stderr)")
    }
}

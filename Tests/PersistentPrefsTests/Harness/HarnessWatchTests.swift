import Foundation
@testable import PersistentPrefs
@testable import PrefsHarnessKit
import Testing

/// `prefs-harness watch`: the line format, and the command end to end beside a writer process.
@Suite("Harness: watch", waitLimit)
struct HarnessWatchTests {
    @Test("a change prints as time, root key, key = value; --json as one object per line")
    func lineFormat() throws {
        let time = Date(timeIntervalSince1970: 1_700_000_000.25)
        let text = WatchCommand.line(time: time, root: "Main", key: "Integer Value", value: NSNumber(value: 42), json: false)
        #expect(text == "2023-11-14T22:13:20.250Z  Main  Integer Value = 42")
        let removed = WatchCommand.line(time: time, root: "Main", key: "Integer Value", value: nil, json: false)
        #expect(removed.hasSuffix("Integer Value = (removed)"))
        let json = WatchCommand.line(time: time, root: "Main", key: "Array Value", value: ["a", "b\"c"], json: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["root"] as? String == "Main")
        #expect(object["key"] as? String == "Array Value")
        #expect(object["value"] as? [String] == ["a", "b\"c"])
        #expect(object["time"] as? String == "2023-11-14T22:13:20.250Z")
        let gone = WatchCommand.line(time: time, root: "Main", key: "K", value: nil, json: true)
        #expect(gone.hasSuffix("\"value\":null}"))
    }

    @Test("watch takes any number of key names, and refuses unknown ones")
    func parsing() throws {
        let command = try CommandLineParser.parseCommand("watch", ["int", "string", "--json"], interactive: false)
        #expect(command.arguments == ["int", "string"] && command.json)
        #expect(try CommandLineParser.parseCommand("watch", [], interactive: false).arguments.isEmpty)
        #expect(CommandSpec.named("watch")?.synopsis == "watch [NAME...] [--json]")
        let session = HarnessSession(store: InMemoryStore())
        #expect(throws: HarnessError.self) {
            try WatchCommand.run(names: ["nope"], json: false, session: session, console: Console(out: { _ in }, err: { _ in }), until: {})
        }
    }

    @Test("in-process: every change of a watched key is printed while the watch runs")
    func inProcess() throws {
        let store = InMemoryStore()
        let session = HarnessSession(rootKey: "Main", store: store)
        let lines = Locked<[String]>([])
        let console = Console(out: { text in lines.withLock { $0.append(text) } }, err: { _ in })
        try WatchCommand.run(names: ["int"], json: false, session: session, console: console) {
            let prefs = SamplePrefsForWatch(key: "Main", store: store)
            prefs["Integer Value"] = 1
            prefs["String Value"] = "not watched"
            prefs["Integer Value"] = nil
        }
        let printed = lines.withLock { $0 }
        #expect(printed.count == 2, "\(printed)")
        #expect(printed.first?.hasSuffix("Main  Integer Value = 1\n") == true)
        #expect(printed.last?.hasSuffix("Main  Integer Value = (removed)\n") == true)
    }

    @Test("end to end: a writer process's changes are printed as they happen; Ctrl-C exits 0", .linuxSuiteFiles)
    func endToEnd() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.run("prefs-harness", ["--suite", "w", "set", "int", "1"])
        let watch = try child.process("prefs-harness", ["--suite", "w", "watch", "int", "--json"])
        let out = Pipe()
        let err = Pipe()
        watch.standardOutput = out
        watch.standardError = err
        try watch.run()
        let stderr = LineReader(err.fileHandleForReading)
        #expect(stderr.next(timeout: 10)?.hasPrefix("Watching Integer Value of \"SamplePrefs\"") == true)
        let stdout = LineReader(out.fileHandleForReading)
        for value in [2, 3] {
            let write = try child.run("prefs-test-helper", ["put-int", "w", "SamplePrefs", "\(value)"])
            #expect(write.status == 0, "\(write.stderr)")
            let line = try #require(stdout.next(timeout: 5))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["value"] as? Int == value && object["key"] as? String == "Integer Value")
        }
        // A plain UserDefaults writer is seen too.
        let plain = try child.run("prefs-test-helper", ["plain-put-int", "w", "SamplePrefs", "4"])
        #expect(plain.status == 0, "\(plain.stderr)")
        let line = try #require(stdout.next(timeout: 5))
        #expect(line.contains("\"value\":4"))
        kill(watch.processIdentifier, SIGINT)
        watch.waitUntilExit()
        #expect(watch.terminationReason == .exit && watch.terminationStatus == 0)
    }
}

/// A set with the sample's keys that writes no defaults.
final class SamplePrefsForWatch: PersistentPrefs {
    override var keys: [String] { ["Integer Value", "String Value"] }
}

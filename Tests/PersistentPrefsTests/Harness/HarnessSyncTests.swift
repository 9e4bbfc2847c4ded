import Foundation
@testable import PersistentPrefs
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `prefs-harness sync` and `sync-status`, run as a user runs them: each device a harness process with a config folder
/// and a state folder of its own, one sync folder between them.
@Suite("Harness: sync through a folder, from outside", .linuxSuiteFiles, waitLimit)
struct HarnessSyncTests {
    /// Two devices and the folder they share.
    struct Devices {
        let scratch = TemporaryDirectory()
        var folder: String { scratch.path + "/Sync" }

        init() throws {
            try FileManager.default.createDirectory(atPath: scratch.path + "/Sync", withIntermediateDirectories: true)
        }

        /// The device `name` (its own config and state folders; `site`: a site layer file for the suite).
        func device(_ name: String, site: String? = nil) throws -> ChildProcess {
            var child = ChildProcess(configHome: scratch.path + "/config-\(name)")
            try FileManager.default.createDirectory(atPath: child.configHome, withIntermediateDirectories: true)
            child.environment["XDG_STATE_HOME"] = scratch.path + "/state-\(name)"
            if let site {
                let folder = scratch.path + "/site-\(name)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try Data(site.utf8).write(to: URL(fileURLWithPath: folder + "/com.example.demo.plist"))
                child.environment["XDG_CONFIG_DIRS"] = folder
            }
            return child
        }
    }

    static let set = ["--suite", "com.example.demo", "--key", "Main", "--sample"]

    @Test("one pass each way: a value set on one device reaches the other; the report says what was applied; exit 0")
    func bothWays() throws {
        let devices = try Devices()
        defer { devices.scratch.remove() }
        let a = try devices.device("A")
        let b = try devices.device("B")
        let first = try a.run("prefs-harness", Self.set + ["sync", devices.folder])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("nothing new from other devices"))
        #expect(try b.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        // Set after both devices joined: a value set before a device's first pass loses to the folder's.
        #expect(try a.run("prefs-harness", Self.set + ["set", "int", "42"]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)

        let second = try b.run("prefs-harness", Self.set + ["sync", devices.folder])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("applied") && second.stdout.contains("Integer Value"), "\(second.stdout)")
        #expect(try b.run("prefs-harness", Self.set + ["get", "int"]).stdout == "42\n")

        #expect(try b.run("prefs-harness", Self.set + ["set", "string", "from B"]).status == 0)
        let json = try b.run("prefs-harness", Self.set + ["sync", devices.folder, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["applied"] as? [String] == [] && object["refused"] as? [Any] != nil, "\(json.stdout)")
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).stdout.contains("String Value"))
        #expect(try a.run("prefs-harness", Self.set + ["get", "string"]).stdout == "from B\n")

        let status = try a.run("prefs-harness", Self.set + ["sync-status", devices.folder, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let listed = try #require(shown["devices"] as? [[String: Any]])
        #expect(listed.count == 2 && listed.filter { $0["thisDevice"] as? Bool == true }.count == 1)
        let keys = try #require(shown["keys"] as? [[String: Any]])
        let string = try #require(keys.first { $0["key"] as? String == "String Value" })
        let otherDevice = listed.first { $0["thisDevice"] as? Bool == false }?["device"] as? String
        #expect(string["value"] as? String == "from B" && string["device"] as? String == otherDevice)
        let text = try b.run("prefs-harness", Self.set + ["sync-status", devices.folder])
        #expect(text.stdout.contains("(this device)") && text.stdout.contains("String Value = from B"), "\(text.stdout)")
    }

    @Test("a value the device's set refuses (a locked key) is named, not applied; exit 1; the rest is applied")
    func refusal() throws {
        let devices = try Devices()
        defer { devices.scratch.remove() }
        let a = try devices.device("A")
        let locking = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>Main</key><dict>
            <key>Integer Value</key><integer>6</integer>
            <key>PersistentPrefs.locked</key><array><string>Integer Value</string></array>
            </dict></dict></plist>
            """
        let b = try devices.device("B", site: locking)
        #expect(try b.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["set", "int", "42"]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["set", "string", "hello"]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)

        let refused = try b.run("prefs-harness", Self.set + ["sync", devices.folder])
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stdout.contains("refused Integer Value"), "\(refused.stdout)")
        #expect(refused.stderr.contains("refused (named above)"), "\(refused.stderr)")
        #expect(try b.run("prefs-harness", Self.set + ["get", "int"]).stdout == "6\n")
        #expect(try b.run("prefs-harness", Self.set + ["get", "string"]).stdout == "hello\n")
    }

    @Test("bad command lines are refused, named: no --suite, no folder, a missing folder")
    func badInput() throws {
        let devices = try Devices()
        defer { devices.scratch.remove() }
        let a = try devices.device("A")
        let noSuite = try a.run("prefs-harness", ["--key", "Main", "--sample", "sync", devices.folder])
        #expect(noSuite.status == 2 && noSuite.stderr.contains("needs --suite"), "\(noSuite.stderr)")
        let noFolder = try a.run("prefs-harness", Self.set + ["sync"])
        #expect(noFolder.status == 2 && noFolder.stderr.contains("FOLDER"), "\(noFolder.stderr)")
        let missing = try a.run("prefs-harness", Self.set + ["sync", devices.folder + "/missing"])
        #expect(missing.status == 1 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        let status = try a.run("prefs-harness", Self.set + ["sync-status", devices.folder])
        #expect(status.status == 0 && status.stdout.contains("No device has synced"), "\(status.stdout)")
    }

    @Test("sync --watch merges another device's change as it lands in the folder; Ctrl-C exits 0")
    func watch() throws {
        let devices = try Devices()
        defer { devices.scratch.remove() }
        let a = try devices.device("A")
        let b = try devices.device("B")
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        let watching = try b.process("prefs-harness", Self.set + ["sync", devices.folder, "--watch", "--json"])
        let out = Pipe()
        let err = Pipe()
        watching.standardOutput = out
        watching.standardError = err
        try watching.run()
        let stderr = LineReader(err.fileHandleForReading)
        #expect(stderr.next(timeout: 10)?.hasPrefix("Syncing \"Main\" of com.example.demo") == true)
        let stdout = LineReader(out.fileHandleForReading)
        _ = stdout.next(timeout: 10)  // the first pass
        #expect(try a.run("prefs-harness", Self.set + ["set", "int", "77"]).status == 0)
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        var applied = false
        while !applied, let line = stdout.next(timeout: 10) {
            applied = line.contains("\"applied\":[\"Integer Value\"]")
        }
        #expect(applied)
        #expect(try b.run("prefs-harness", Self.set + ["get", "int"]).stdout == "77\n")
        kill(watching.processIdentifier, SIGINT)
        watching.waitUntilExit()
        #expect(watching.terminationReason == .exit && watching.terminationStatus == 0)
    }

    @Test("passes killed with SIGKILL at random points lose nothing: every device ends with each key's last value, and the next pass of a killed device succeeds")
    func killedMidPass() throws {
        let devices = try Devices()
        defer { devices.scratch.remove() }
        let a = try devices.device("A")
        let b = try devices.device("B")
        #expect(try a.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        #expect(try b.run("prefs-harness", Self.set + ["sync", devices.folder]).status == 0)
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        var random = SeededGenerator(state: seed)
        var killed = 0
        // Each round: A sets `int`, B sets `string`, and each device makes a pass that is killed after a random delay
        // (before it starts, while it reads, merges or writes, or after it ended); then the other device's pass.
        for round in 1...16 {
            #expect(try a.run("prefs-harness", Self.set + ["set", "int", "\(round)"]).status == 0)
            #expect(try b.run("prefs-harness", Self.set + ["set", "string", "b\(round)"]).status == 0)
            for device in [a, b] {
                let pass = try device.process("prefs-harness", Self.set + ["sync", devices.folder])
                pass.standardOutput = FileHandle.nullDevice
                pass.standardError = FileHandle.nullDevice
                try pass.run()
                usleep(UInt32(random.next() % 90_000))  // a pass takes about 50 ms (debug build)
                if pass.isRunning {
                    kill(pass.processIdentifier, SIGKILL)
                    killed += 1
                }
                pass.waitUntilExit()
            }
        }
        // Whole passes until the folder settles: A, B, A (B's last value reaches A on the third).
        for device in [a, b, a, b] {
            let pass = try device.run("prefs-harness", Self.set + ["sync", devices.folder])
            #expect(pass.status == 0, "seed \(seed): \(pass.stdout) \(pass.stderr)")
        }
        for (name, device) in [("A", a), ("B", b)] {
            #expect(try device.run("prefs-harness", Self.set + ["get", "int"]).stdout == "16\n", "device \(name), seed \(seed), \(killed) passes killed")
            #expect(try device.run("prefs-harness", Self.set + ["get", "string"]).stdout == "b16\n", "device \(name), seed \(seed), \(killed) passes killed")
        }
        #expect(killed > 0, "seed \(seed): no pass was killed while it ran")
    }

    @Test(
        "two real Syncthing instances on 127.0.0.1 carry a value between harness devices and a conflict copy they make is merged and removed (Scripts/syncthing-e2e)",
        .enabled(if: isOnPath("syncthing"), "syncthing is not installed (Debian: apt-get install syncthing)"),
        .enabled(if: isOnPath("python3"), "python3, which runs Scripts/syncthing-e2e, is not installed"),
        .disabled(if: ProcessInfo.processInfo.environment["PREFS_SYNCTHING_E2E"] == "0", "PREFS_SYNCTHING_E2E=0: .ci/run runs it once, not under the sanitizers"))
    func throughSyncthing() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = ReadmeTests.root.appendingPathComponent("Scripts/syncthing-e2e").path
        process.arguments = ["python3", script, "--harness", try ChildProcess.executable("prefs-harness").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(printed)")
        #expect(printed.contains("ok: a value set with the harness on A is read on B"), "\(printed)")
        #expect(printed.contains("ok: the conflict copy was merged and removed from both folders"), "\(printed)")
    }
}

/// Whether `command` is an executable file in a folder of `PATH`.
private func isOnPath(_ command: String) -> Bool {
    (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains { access("\($0)/\(command)", X_OK) == 0 }
}

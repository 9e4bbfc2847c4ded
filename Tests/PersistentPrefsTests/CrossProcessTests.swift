import Foundation
import PersistentPrefs
import Testing

/// Durability and fresh-process reads, across real processes: the built
/// `prefs-test-helper` and `prefs-harness`, with `XDG_CONFIG_HOME` in a temporary directory.
@Suite("Across processes: durability after SIGKILL, fresh-process reads", .linuxSuiteFiles, waitLimit)
struct CrossProcessTests {
    @Test("a value set right before SIGKILL is read by a fresh process, 20 times in a row")
    func survivesSigkill() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        var lost = 0
        for trial in 1...20 {
            let printed = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", "durable", "Root", "\(trial)"])
            #expect(printed.contains("done"), "trial \(trial): the helper did not finish its write")
            let read = try child.run("prefs-test-helper", ["get-int", "durable", "Root"])
            if read.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "\(trial)" { lost += 1 }
        }
        print("SIGKILL right after a set: \(lost) of 20 writes lost")
        #expect(lost == 0)
    }

    @Test("the suite file the library writes is read by plain UserDefaults in another process")
    func plainUserDefaultsReadsIt() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", "shared", "Root", "808"])
        let read = try child.run("prefs-test-helper", ["raw-read", "shared", "Root"])
        #expect(read.stdout == "808\n", "\(read.stderr)")
    }

    @Test("a command-line argument -ROOT value does not hide the stored set")
    func argumentDomainDoesNotShadow() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", "shadow", "Root", "31"])
        let read = try child.run("prefs-test-helper", ["get-int", "shadow", "Root", "-Root", "shadowed"])
        #expect(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "31")
    }

    @Test("a fresh process reads every kind of value back with the right as? casts")
    func freshProcessCasts() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["write-mixed", "mixed", "Root"])
        let check = try child.run("prefs-test-helper", ["check-mixed", "mixed", "Root"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("ok Float as? Float"))
        #expect(!check.stdout.contains("FAIL"))
    }

    @Test("the suite file is written where UserDefaults keeps it, mode 0600")
    func suiteFileOnDisk() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["set-int", "ondisk", "Root", "5"])
        let path = directory.path + "/ondisk.plist"
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let data = try #require(FileManager.default.contents(atPath: path))
        let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        let set = plist?["Root"] as? [String: Any]
        #expect(set?["Integer Value"] as? Int == 5)
    }

    @Test("every kind of @Pref value survives SIGKILL and reads back in a fresh process")
    func prefKindsInFreshProcess() throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        _ = try child.killAfter(line: "done", "prefs-test-helper", ["pref-write", "typed", "Root"])
        let check = try child.run("prefs-test-helper", ["pref-check", "typed", "Root"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.components(separatedBy: "\n").filter { $0.hasPrefix("ok ") }.count == 15)
    }
}

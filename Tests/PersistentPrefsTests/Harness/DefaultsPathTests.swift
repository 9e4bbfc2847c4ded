import Foundation
import PersistentPrefs
import PrefsHarnessKit
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `prefs-harness defaults` on paths that are not plain files: what is there is never replaced,
/// renamed or added to; reads never wait, and never write.
@Suite("Harness: defaults on links, FIFOs, devices", waitLimit)
struct DefaultsPathTests {
    /// A domain file holding `{ k = 1; }`, in a new folder.
    static func domain(_ directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/domain.plist"
        let (status, console) = DefaultsCommandTests.run(["write", path, "k", "-int", "1"])
        #expect(status == 0, "\(console.err)")
        return path
    }

    static func kind(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    @Test("export into a FIFO writes into it (a reader gets the plist) and leaves the FIFO; with no reader it is refused at once")
    func exportToFIFO() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = try Self.domain(directory)
        let fifo = directory.path + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        let refused = finishing(within: 20) { DefaultsCommandTests.run(["export", domain, fifo]) }
        let (status, console) = try #require(refused, "export blocked on a FIFO nobody reads")
        #expect(status == 1 && console.err.contains("no process is reading it"), "\(console.err)")

        let received = Received()
        let reader = Thread {
            let handle = FileHandle(forReadingAtPath: fifo)
            received.set(handle?.readDataToEndOfFile() ?? Data())
        }
        reader.start()
        var exported: (Int32, RecordingConsole)?
        for _ in 0..<200 where exported?.0 != 0 {  // until the reader has opened its end
            exported = DefaultsCommandTests.run(["export", domain, fifo])
            if exported?.0 != 0 { usleep(10_000) }
        }
        #expect(exported?.0 == 0, "\(exported?.1.err ?? "")")
        let data = try #require(received.wait(timeout: 10))
        let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        #expect(plist?["k"] as? Int == 1)
        #expect(Self.kind(fifo) == S_IFIFO)
    }

    @Test("export through a symbolic link writes the file it points to; the link stays; a link to nothing is refused")
    func exportToLink() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = try Self.domain(directory)
        let target = directory.path + "/target.plist"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        let link = directory.path + "/link.plist"
        #expect(symlink(target, link) == 0)
        let (status, console) = DefaultsCommandTests.run(["export", domain, link])
        #expect(status == 0, "\(console.err)")
        #expect(Self.kind(link) == S_IFLNK)
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: target)), format: nil)
        #expect((plist as? [String: Any])?["k"] as? Int == 1)

        let dangling = directory.path + "/dangling.plist"
        #expect(symlink(directory.path + "/nowhere.plist", dangling) == 0)
        let (danglingStatus, danglingConsole) = DefaultsCommandTests.run(["export", domain, dangling])
        #expect(danglingStatus == 1 && danglingConsole.err.contains("symbolic link to nothing"), "\(danglingConsole.err)")
        #expect(Self.kind(dangling) == S_IFLNK && Self.kind(directory.path + "/nowhere.plist") == nil)
    }

    @Test("export to a device writes into it and leaves it a device: /dev/null takes it, /dev/full reports it is full")
    func exportToDevice() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = try Self.domain(directory)
        let (status, console) = DefaultsCommandTests.run(["export", domain, "/dev/null"])
        #expect(status == 0, "\(console.err)")
        #expect(Self.kind("/dev/null") == S_IFCHR)
        if Self.kind("/dev/full") == S_IFCHR {
            let (full, fullConsole) = DefaultsCommandTests.run(["export", domain, "/dev/full"])
            #expect(full == 1 && fullConsole.err.contains("/dev/full"), "\(fullConsole.err)")
            #expect(Self.kind("/dev/full") == S_IFCHR)
        }
    }

    @Test("a FIFO or a device named as the domain is refused at once by every command, and left as it is",
          arguments: [["read", "DOMAIN"], ["read", "DOMAIN", "k"], ["read-type", "DOMAIN", "k"], ["write", "DOMAIN", "k", "1"],
                      ["delete", "DOMAIN", "k"], ["delete", "DOMAIN"], ["export", "DOMAIN", "-"], ["import", "DOMAIN", "-"]])
    func domainNotAFile(words: [String]) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path + "/pipe.plist"
        #expect(mkfifo(fifo, 0o600) == 0)
        for domain in [fifo, "/dev/null"] {
            let outcome = finishing(within: 20) {
                DefaultsCommandTests.run(words.map { $0 == "DOMAIN" ? domain : $0 }, input: ["{ k = 1; }"])
            }
            let (status, console) = try #require(outcome, "\(words) on \(domain) blocked")
            #expect(status == 1 && console.err.contains("not a regular file"), "\(words) on \(domain): \(console.err)")
        }
        #expect(Self.kind(fifo) == S_IFIFO && Self.kind("/dev/null") == S_IFCHR)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["pipe.plist"], "something was made beside it")
    }

    @Test("defaults read shows the file as it is and never writes it, even where a stale plain save undid a library write")
    func readNeverWrites() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let domain = directory.path + "/suite.plist"
        #expect(DefaultsCommandTests.run(["write", domain, "k", "-int", "1"]).0 == 0)
        let stale = try Data(contentsOf: URL(fileURLWithPath: domain))
        #expect(DefaultsCommandTests.run(["write", domain, "k", "-int", "2"]).0 == 0)
        // A stale plain save: the file rewritten in place from the copy read before the last write.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: domain))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: stale)
        try handle.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: domain))
        let (status, console) = DefaultsCommandTests.run(["read", domain, "k"])
        #expect(status == 0 && console.out == "1\n", "\(console.out)\(console.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: domain)) == before, "the read wrote the file")
        // The next library write of the suite puts the library's value back.
        #expect(DefaultsCommandTests.run(["write", domain, "other", "x"]).0 == 0)
        #expect(DefaultsCommandTests.run(["read", domain, "k"]).1.out == "2\n")
    }

    @Test("the prompt's history file is made 0600 in a 0700 folder; a looser folder of the user's is tightened")
    func historyFileModes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = URL(fileURLWithPath: directory.path + "/state/prefs-harness/history")
        LineEditor.saveHistory(["set volume 7"], to: file)
        var info = stat()
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(file.deletingLastPathComponent().path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(LineEditor.loadHistory(file) == ["set volume 7"])

        #expect(chmod(file.deletingLastPathComponent().path, 0o755) == 0 && chmod(file.path, 0o644) == 0)
        LineEditor.saveHistory(["set volume 7", "get volume"], to: file)
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(file.deletingLastPathComponent().path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(LineEditor.loadHistory(file) == ["set volume 7", "get volume"])
    }
}

/// Data handed over from another thread.
final class Received: @unchecked Sendable {  // `data` is only touched while holding `lock`
    private let lock = NSLock()
    private var data: Data?

    func set(_ value: Data) {
        lock.lock()
        data = value
        lock.unlock()
    }

    /// Waits up to `timeout` seconds for the data.
    func wait(timeout: TimeInterval) -> Data? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            lock.lock()
            let value = data
            lock.unlock()
            if let value { return value }
            usleep(2_000)
        }
        return nil
    }
}

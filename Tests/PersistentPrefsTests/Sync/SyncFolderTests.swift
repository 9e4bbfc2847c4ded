import Foundation
import PersistentPrefs
import Testing

@testable import PersistentPrefsSync

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Sync values")
struct SyncValueTests {
    @Test("every kind a set stores goes to a sync value and back as the same stored value")
    func roundTrip() throws {
        let date = Date(timeIntervalSinceReferenceDate: 123_456.5)
        let stored: [String: Any] = [
            "string": "Hé", "integer": NSNumber(value: -42), "large": NSNumber(value: UInt64.max), "real": NSNumber(value: 1.5),
            "bool": NSNumber(value: true), "date": date, "data": Data([0, 1, 2]),
            "array": [NSNumber(value: 1), "two"] as [Any], "dictionary": ["nested": [NSNumber(value: false)] as [Any]] as [String: Any],
        ]
        for (key, value) in stored {
            let synced = try #require(SyncValue(plist: value), "\(key)")
            #expect(SyncValue(plist: synced.plist) == synced, "\(key)")
            #expect(PlistComparison.changedKeys([key: value], [key: synced.plist]).isEmpty, "\(key) comes back as \(synced.plist)")
        }
        #expect(SyncValue(plist: NSNumber(value: UInt64.max)) == .unsigned(UInt64.max))
        #expect(SyncValue(plist: NSNumber(value: 7 as UInt64)) == .integer(7))
    }

    @Test("1, 1.0 and true are three values; a NaN equals itself; what no property list holds has none")
    func kinds() {
        let one = SyncValue(plist: NSNumber(value: 1))
        let real = SyncValue(plist: NSNumber(value: 1.0))
        let yes = SyncValue(plist: NSNumber(value: true))
        #expect(one != real && real != yes && one != yes)
        #expect(SyncValue(plist: NSNumber(value: Double.nan)) == SyncValue(plist: NSNumber(value: Double.nan)))
        #expect(SyncValue(plist: URL(fileURLWithPath: "/tmp")) == nil)
        #expect(SyncValue(plist: ["a": URL(fileURLWithPath: "/tmp")] as [String: Any]) == nil)
    }
}

/// A set's folder in a new temporary sync folder.
private struct Folder {
    let temporary = TemporaryDirectory()
    let folder: SyncFolder
    let set: URL

    init() throws {
        folder = SyncFolder(url: URL(fileURLWithPath: temporary.path + "/Sync"))
        set = try folder.setFolder(suite: "com.example.app", root: "Main Prefs")
        try FileManager.default.createDirectory(at: set, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { set.appendingPathComponent(name).path }

    /// Writes `text` as the file `name`.
    func plant(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
    }
}

/// A log of `device` with one value, one tombstone and one device seen.
private func sampleLog(_ device: String, wall: Int64 = 2_000) -> DeviceLog<SyncValue> {
    var log = DeviceLog<SyncValue>(device: device)
    log.entries["Volume"] = SyncEntry(value: .integer(7), stamp: SyncStamp(wall: wall - 10, counter: 0, device: device))
    log.entries["Name"] = SyncEntry(value: .string("Ann"), stamp: SyncStamp(wall: 900, counter: 2, device: "OTHER-1"))
    log.entries["Gone"] = SyncEntry(value: nil, stamp: SyncStamp(wall: wall - 5, counter: 1, device: device))
    log.seen["OTHER-1"] = SyncStamp(wall: 950, counter: 0, device: "OTHER-1")
    log.published = SyncStamp(wall: wall, counter: 0, device: device)
    return log
}

@Suite("The sync folder's device files")
struct SyncFolderTests {
    @Test("a device file is a property list any reader reads, and another device reads back the log written")
    func roundTrip() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        let log = sampleLog("DEVICE-A")
        try folder.folder.write(log, in: folder.set)

        let scan = try folder.folder.scan(folder.set, me: "DEVICE-B", lastWritten: nil)
        #expect(scan.others == [SyncFolder.Found(path: folder.path("DEVICE-A.plist"), log: log, copy: nil)])
        #expect(scan.skipped.isEmpty && scan.clone == nil && scan.own == nil)

        let data = try Data(contentsOf: URL(fileURLWithPath: folder.path("DEVICE-A.plist")))
        #expect(String(decoding: data.prefix(5), as: UTF8.self) == "<?xml")
        let plain = try #require(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(plain["device"] as? String == "DEVICE-A")
        let entries = try #require(plain["entries"] as? [String: Any])
        #expect((entries["Gone"] as? [String: Any])?["value"] == nil, "a tombstone has no value")
        #expect(((entries["Volume"] as? [String: Any])?["value"] as? NSNumber)?.intValue == 7)
    }

    @Test("files that are not device logs this version merges are skipped, each with why, and left where they are")
    func refusals() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        let valid = DeviceFile.dictionary(of: sampleLog("DEVICE-A"))
        func planted(_ name: String, _ change: (inout [String: Any]) -> Void) throws {
            var dictionary = valid
            change(&dictionary)
            try PlistWriting.data(dictionary, format: .xml).write(to: URL(fileURLWithPath: folder.path(name)))
        }
        try planted("plain.plist") { $0 = ["Volume": NSNumber(value: 3)] }
        try planted("newer.plist") { $0["PersistentPrefsSync"] = NSNumber(value: 2) }
        try planted("identity.plist") { $0["device"] = "../../etc" }
        try planted("future.plist") {
            $0["published"] = [NSNumber(value: 100), NSNumber(value: 0)] as [Any]
            $0["seen"] = [String: Any]()
        }
        try planted("seen.plist") { $0["seen"] = ["OTHER-1": [NSNumber(value: 3_000), NSNumber(value: 0)] as [Any]] }
        try planted("bounds.plist") { $0["published"] = [NSNumber(value: 2_000), NSNumber(value: 1 << 40)] as [Any] }
        try planted("format.plist") { $0["PersistentPrefsSync"] = NSNumber(value: 0) }
        try planted("negative.plist") { $0["published"] = [NSNumber(value: -1), NSNumber(value: 0)] as [Any] }
        try planted("value.plist") {
            $0["entries"] = ["K": ["stamp": [NSNumber(value: 1), NSNumber(value: 0), "DEVICE-A"] as [Any], "value": NSNumber(value: 1)]]
            $0["published"] = [NSNumber(value: 1), NSNumber(value: 0)] as [Any]
            $0["seen"] = "nobody"
        }
        try folder.plant("truncated.plist", String(String(decoding: PlistWriting.data(valid, format: .xml), as: UTF8.self).prefix(200)))
        try folder.plant("merged.plist", "<<<<<<< HEAD\n<plist/>\n=======\n<plist/>\n>>>>>>> theirs\n")
        try folder.plant("empty.plist", "")
        try FileManager.default.createDirectory(atPath: folder.path("folder.plist"), withIntermediateDirectories: false)
        try folder.folder.write(sampleLog("DEVICE-C"), in: folder.set)
        try FileManager.default.createSymbolicLink(atPath: folder.path("link.plist"), withDestinationPath: folder.path("DEVICE-C.plist"))
        try folder.plant(".DEVICE-D.plist.1234.tmp", "partial")
        try folder.plant(".hidden.plist", "not looked at")
        try folder.plant("notes.txt", "not looked at")

        let scan = try folder.folder.scan(folder.set, me: "DEVICE-B", lastWritten: nil)
        #expect(scan.others.map(\.log.device) == ["DEVICE-C"])
        let reasons = Dictionary(uniqueKeysWithValues: scan.skipped.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        #expect(reasons.keys.sorted() == [
            "bounds.plist", "empty.plist", "folder.plist", "format.plist", "future.plist", "identity.plist", "link.plist", "merged.plist",
            "negative.plist", "newer.plist", "plain.plist", "seen.plist", "truncated.plist", "value.plist",
        ])
        #expect(reasons["seen.plist"]?.contains("after the file was published") == true)
        #expect(reasons["bounds.plist"]?.contains("published stamp") == true)
        #expect(reasons["format.plist"]?.contains("format number 0") == true)
        #expect(reasons["plain.plist"]?.contains("not a PersistentPrefsSync device file") == true)
        #expect(reasons["newer.plist"]?.contains("newer PersistentPrefsSync (format 2") == true)
        #expect(reasons["identity.plist"]?.contains("device identity") == true)
        #expect(reasons["future.plist"]?.contains("stamped after the file was published") == true)
        #expect(reasons["negative.plist"]?.contains("published stamp") == true)
        #expect(reasons["value.plist"]?.contains("devices seen") == true)
        #expect(reasons["truncated.plist"]?.contains("damaged") == true)
        #expect(reasons["merged.plist"]?.contains("damaged") == true)
        #expect(reasons["empty.plist"]?.contains("empty") == true)
        #expect(reasons["folder.plist"]?.contains("a directory") == true)
        #expect(reasons["link.plist"]?.contains("symbolic link") == true)
        for name in reasons.keys { #expect(FileManager.default.fileExists(atPath: folder.path(name)), "\(name) was left") }
    }

    @Test("a file another user owns is skipped", .enabled(if: geteuid() == 0, "needs root to give a file away"))
    func anotherOwner() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        try folder.folder.write(sampleLog("DEVICE-A"), in: folder.set)
        #expect(chown(folder.path("DEVICE-A.plist"), 65534, 65534) == 0)
        let scan = try folder.folder.scan(folder.set, me: "DEVICE-B", lastWritten: nil)
        #expect(scan.others.isEmpty)
        #expect(scan.skipped.map(\.reason) == ["it belongs to user 65534, not to this user"])
    }

    @Test("conflict copies are merged under their contents' identity and removed after, unless changed since")
    func conflictCopies() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        let newer = sampleLog("DEVICE-A", wall: 3_000)
        let older = sampleLog("DEVICE-A", wall: 2_000)
        try folder.folder.write(newer, in: folder.set)
        let copies = [
            "DEVICE-A.sync-conflict-20261206-233224-GUKTGD7.plist": "a Syncthing conflict copy",
            "DEVICE-A (laptop's conflicted copy 2026-12-06).plist": "a conflicted copy (Dropbox or Nextcloud)",
            "DEVICE-A 2.plist": "a numbered copy (iCloud Drive or a file manager)",
            "renamed.plist": "a copy under another name",
        ]
        for name in copies.keys {
            try PlistWriting.data(DeviceFile.dictionary(of: older), format: .xml).write(to: URL(fileURLWithPath: folder.path(name)))
        }
        let scan = try folder.folder.scan(folder.set, me: "DEVICE-B", lastWritten: nil)
        #expect(scan.others.count == 5)
        #expect(scan.others.allSatisfy { $0.log.device == "DEVICE-A" })
        for found in scan.others {
            let name = (found.path as NSString).lastPathComponent
            #expect(found.copy == copies[name], "\(name)")
            #expect(found.log == (name == "DEVICE-A.plist" ? newer : older))
        }

        // One copy changes after the scan: it is left for the next pass.
        try PlistWriting.data(DeviceFile.dictionary(of: sampleLog("DEVICE-A", wall: 2_500)), format: .xml)
            .write(to: URL(fileURLWithPath: folder.path("renamed.plist")))
        #expect(folder.folder.removeCopies(scan.others).isEmpty)
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.set.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(left == ["DEVICE-A.plist", "renamed.plist"])
    }

    @Test("a device finds its identity in a file it did not write (a cloned home folder); its own file, its older copies, and any file when it lost its record are not that")
    func clone() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        let mine = sampleLog("DEVICE-A", wall: 2_000)
        try folder.folder.write(mine, in: folder.set)
        try PlistWriting.data(DeviceFile.dictionary(of: sampleLog("DEVICE-A", wall: 1_500)), format: .xml)
            .write(to: URL(fileURLWithPath: folder.path("DEVICE-A.sync-conflict-20261206-233224-GUKTGD7.plist")))

        var scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: mine)
        #expect(scan.clone == nil)
        #expect(scan.own == mine)
        #expect(scan.others.map(\.copy) == ["a Syncthing conflict copy"], "an older copy of its own log, to remove")

        // The record was kept before a write the crash cut short: the file is older than what the device last wrote.
        scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: sampleLog("DEVICE-A", wall: 2_500))
        #expect(scan.clone == nil)

        // The other machine wrote the file since: newer than anything this device wrote, or as new and different.
        scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: sampleLog("DEVICE-A", wall: 1_800))
        #expect(scan.clone == folder.path("DEVICE-A.plist"))
        var different = mine
        different.entries["Volume"]?.value = .integer(8)
        scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: different)
        #expect(scan.clone == folder.path("DEVICE-A.plist"))
        // A device with no record of the file it wrote (lost) takes none for a clone: it may rebuild its record from its own.
        scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: nil)
        #expect(scan.clone == nil && scan.own == mine)
    }

    @Test("a device's own file is never written through a link planted at its name")
    func linkAtOwnFile() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        let elsewhere = folder.temporary.path + "/elsewhere.plist"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: elsewhere))
        try FileManager.default.createSymbolicLink(atPath: folder.path("DEVICE-A.plist"), withDestinationPath: elsewhere)
        #expect(throws: PersistentPrefs.PrefsError.self) { try folder.folder.write(sampleLog("DEVICE-A"), in: folder.set) }
        #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == "keep")
    }

    @Test("suite and root key names become one path component each, alike on every system, distinct names distinct")
    func names() throws {
        let cases = [
            "com.example.app": "com.example.app", "main prefs": "main prefs", "a/b": "a%2Fb", "a%2fb": "a%252fb",
            ".hidden": "%2Ehidden", "..": "%2E%2E", "trailing.": "trailing%2E", "end ": "end%20", "ü": "%C3%BC", "c:d": "c%3Ad",
            "a~b": "a%7Eb",
        ]
        for (name, component) in cases { #expect(try SyncFolder.component(name) == component, "\(name)") }
        for (name, component) in ["con": "%63on", "nul.txt": "%6Eul.txt", "com1": "%63om1", "console": "console", "lpt": "lpt"] {
            #expect(try SyncFolder.component(name) == component, "a name Windows reserves: \(name)")
        }
        // A capital letter adds `~` and 8 hex digits of the name's hash: names that differ only in case stay apart
        // where the file system ignores case, and the name is still read at a glance.
        #expect(try SyncFolder.component("Main Prefs").hasPrefix("Main Prefs~") && SyncFolder.component("Main Prefs").count == 19)
        #expect(try SyncFolder.component("NUL.txt").hasPrefix("%4EUL.txt~"), "a reserved name is escaped before its case is marked")
        let variants = ["main", "Main", "MAIN", "mAIN", "com.Example.app", "com.example.App", "com.example.app"]
        let folded = try variants.map { try SyncFolder.component($0).lowercased() }
        #expect(Set(folded).count == variants.count, "\(folded)")
        #expect(throws: PersistentPrefs.PrefsError.self) { try SyncFolder.component("") }
        #expect(throws: PersistentPrefs.PrefsError.self) { try SyncFolder.component(String(repeating: "x", count: 201)) }
    }

    @Test("two devices sync a set through device files: a fresh install takes the folder's values, a reset travels")
    func twoDevicesThroughFiles() throws {
        let folder = try Folder()
        defer { folder.temporary.remove() }
        var first = SyncReplica<SyncValue>(device: "DEVICE-A")
        var pass = first.pass(local: ["Volume": .integer(3), "Name": .string("Ann")], others: [], now: 1_000)
        try folder.folder.write(try #require(pass.log), in: folder.set)
        pass = first.pass(local: ["Volume": .integer(4), "Name": .string("Ann")], others: [], now: 2_000)
        try folder.folder.write(try #require(pass.log), in: folder.set)

        var second = SyncReplica<SyncValue>(device: "DEVICE-B")
        var scan = try folder.folder.scan(folder.set, me: "DEVICE-B", lastWritten: nil)
        pass = second.pass(local: ["Volume": .integer(9)], others: scan.others.map(\.log), now: 1_500)
        #expect(pass.changes == ["Volume": .some(.integer(4)), "Name": .some(.string("Ann"))], "the fresh install takes the folder's values")
        try folder.folder.write(try #require(pass.log), in: folder.set)
        _ = second.applied()
        pass = second.pass(local: ["Volume": .integer(4)], others: scan.others.map(\.log), now: 3_000)
        try folder.folder.write(try #require(pass.log), in: folder.set)

        scan = try folder.folder.scan(folder.set, me: "DEVICE-A", lastWritten: first.log)
        #expect(scan.clone == nil && scan.own == first.log)
        pass = first.pass(local: ["Volume": .integer(4), "Name": .string("Ann")], others: scan.others.map(\.log), now: 4_000)
        #expect(pass.changes == ["Name": SyncValue?.none], "the reset made on the second device")
    }
}

// A helper process for the cross-process tests. Not part of the library.
//
//   prefs-test-helper write-mixed SUITE ROOT      write one value of every kind, print "done", wait
//   prefs-test-helper check-mixed SUITE ROOT      read them back and check every `as?` cast
//   prefs-test-helper container-write SUITE -     UserDefaultsContainer: age 20, name Ann, planet mars
//   prefs-test-helper container-read SUITE -      print them back
//   prefs-test-helper settings-write - DIR        AppSettings and PlayerSettings: change and update
//   prefs-test-helper settings-read - DIR         load them and print
//   prefs-test-helper pref-write SUITE ROOT       TypedPrefs: set every @Pref, print "done", wait
//   prefs-test-helper pref-check SUITE ROOT       read them back and check each
//   (below, SUITE starting with "/" is a PlistFileStore directory; "apple:NAME" the suite NAME
//    through UserDefaults, the Apple code path; otherwise a suite, via groupID)
//   prefs-test-helper set-int SUITE ROOT N        SamplePrefs.int = N, print "done", wait to be killed
//   prefs-test-helper get-int SUITE ROOT          print it, or fail with the error
//   prefs-test-helper loop-int SUITE ROOT         int = 1, 2, 3, … printing each once it returned
//   prefs-test-helper clear SUITE ROOT            remove the set
//   prefs-test-helper put-int SUITE ROOT N        SamplePrefs.int = N, print "done", exit
//   prefs-test-helper put-int-watchers SUITE ROOT N   as a one-shot program, ROOT's "Integer Value" = N, print "inotify=… threads=…", exit
//   prefs-test-helper burst-int SUITE ROOT COUNT  int = 1 … COUNT as fast as it goes, print "done", exit
//   prefs-test-helper plain-put-int SUITE ROOT N  plain UserDefaults: ROOT's "Integer Value" = N, synchronize()
//   prefs-test-helper watch-int SUITE ROOT        print "ready", then the int after each change of it
//   prefs-test-helper write-keys SUITE ROOT FIRST COUNT   write keys kFIRST… one at a time
//   prefs-test-helper count-keys SUITE ROOT       print how many keys the set holds, and how many are right
//   prefs-test-helper raw-read SUITE ROOT         read the set with plain UserDefaults, print "Integer Value"
//   prefs-test-helper plain-write-keys SUITE sync|nosync FIRST COUNT   plain UserDefaults writes pFIRST…
//   prefs-test-helper plain-count SUITE - FIRST COUNT                  how many pFIRST… plain UserDefaults reads back
//   prefs-test-helper plain-count-root SUITE ROOT FIRST COUNT          how many of ROOT's kFIRST… plain UserDefaults reads back
//   prefs-test-helper mixed-threads SUITE ROOT FIRST COUNT             library and plain threads in one process
//   prefs-test-helper unsaved-then-library SUITE ROOT FIRST COUNT      plain set (no synchronize) + library write, COUNT times
//                                                  (a sixth argument "named": the library's store opened by name)
//   (SUITE "standard" is UserDefaults.standard, for the library and plain code alike)
//   prefs-test-helper deep-write - main|thread|dispatch|task DEPTH    write a value nested DEPTH deep
//   prefs-test-helper load-files - DIR                                load every .plist in DIR, never crashing
//   prefs-test-helper incr SUITE ROOT COUNT         COUNT × update(\.counter) { $0 += 1 }, print "done"
//   prefs-test-helper append SUITE ROOT TAG COUNT   COUNT × update(\.items) { append "TAG-i" }, print "done"
//   prefs-test-helper get-counter SUITE ROOT        print "count N items M distinct D"
//   prefs-test-helper batch-loop SUITE ROOT batch|update   k0…k9 = n for n = 1, 2, … as one batch (or one
//                                                  update) each, printing "started" after the first
//   prefs-test-helper poll-consistent SUITE ROOT COUNT     COUNT fresh reads of k0…k9: "reads R mixed M distinct D"
//   prefs-test-helper soak SUITE ROOT SECONDS OTHER…  for SECONDS: ROOT's "k0" = 1, 2, … and the shared set
//                                                  "Shared"'s "k1" += 1 by update, observing "k0" of ROOT and
//                                                  each OTHER root; print "writes W stepbacks S ownback O"
//                                                  (a value seen lower than one seen before; own key lower
//                                                  than the last own write that returned)
//   prefs-test-helper plain-set-kinds SUITE -      plain UserDefaults: one value of every kind, synchronize()
//   prefs-test-helper plain-get SUITE KEY          plain UserDefaults: print "TYPE VALUE" for KEY (synchronize() first)
//   prefs-test-helper migrate-open SUITE ROOT LOG AT       at the time AT (seconds since 1970) open MigratingPrefs,
//                                                  whose steps append a line to LOG; print the migrated set
//   prefs-test-helper migrate-wide SUITE ROOT              print "opening", open WideMigratingPrefs (k… → m…), print "done"
//   prefs-test-helper hold-lock - FILE             take FILE's writers' lock (flock on FILE.lock), print "held PID", wait
//   prefs-test-helper hold-inotify - -             take inotify instances until none is left, print "held N", wait
//   prefs-test-helper put-int-within SUITE ROOT N SECONDS  lockTimeout = SECONDS, int = N; print "ok" or "error …"
//   prefs-test-helper drag SUITE ROOT COUNT GAP_MS END   a coalescing set (interval 0.1 s; "slow-drag": 60 s):
//                                                  "Integer Value" = 1 … COUNT, GAP_MS apart, printing "started"
//                                                  after the first; END: "exit" (end normally, no synchronize),
//                                                  "sync" (synchronize(), print "synced", wait to be killed),
//                                                  "again" (start over at 1, forever)
//   prefs-test-helper watch-report SUITE ROOT      print "ready PROBLEM", "problems K lastError watchDegraded|other"
//                                                  (K: watchDegraded entries in problems), then "int N PROBLEM" after each
//                                                  change of the int (PROBLEM: the observation's problem, or "live")
//
// With PREFS_HELPER_AS_NOBODY=1 in the environment (and run as root), the helper first becomes
// the user nobody (65534), so per-user limits it exhausts are not the test runner's.
//
// The tests point XDG_CONFIG_HOME at a temporary directory, so the suite files live there.

import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// One value of every storable kind, under keys named after their types.
final class MixedPrefs: PersistentPrefs {
    static var expected: [String: Any] {
        [
        "Int": 10, "Double": 45.6, "Float": Float(12.3), "Bool": true, "String": "Ten",
        "Strings": ["a", "b"], "Ints": [1, 2, 3], "StringInt": ["One": 1, "Two": 2],
        "StringString": ["a": "x"], "Date": Date(timeIntervalSince1970: 1_700_000_000),
        "Data": Data([0, 1, 2, 255]), "Nested": ["inner": ["deep": [1, 2]]],
        ]
    }
    override var keys: [String] { Array(Self.expected.keys) }
}

/// One `@Pref` of every kind the issue names, for fresh-process round trips.
enum Mode: String { case quiet, loud }
struct Frame: Codable, Equatable { var width = 1.0, title = "t" }
struct Styles: OptionSet { let rawValue: Int; static let bold = Styles(rawValue: 1); static let wide = Styles(rawValue: 8) }

final class TypedPrefs: PersistentPrefs {
    @Pref("Int") var int = 0
    @Pref("Double") var double = 0.0
    @Pref("Float") var float: Float = 0
    @Pref("Bool") var bool = false
    @Pref("String") var string = ""
    @Pref("Date") var date = Date(timeIntervalSince1970: 0)
    @Pref("Data") var data = Data()
    @Pref("Strings") var strings: [String] = []
    @Pref("Map") var map: [String: Int] = [:]
    @Pref("Mode") var mode = Mode.quiet
    @Pref("Styles") var styles: Styles = []
    @Pref("URL") var url: URL?
    @Pref("Frame") var frame = Frame()
    @Pref("Maybe") var maybe: Int?
}

/// `Codable` values whose shapes a schema can and cannot check (see `PrefsSchema.Shape`).
struct Window: Codable, Equatable { var w = 800.0, h = 600.0 }
struct Note: Codable, Equatable { var text = "hi", tag: String? }
struct Tags: Codable, Equatable { var names: [String] = [] }

final class ShapePrefs: PersistentPrefs {
    @Pref("Window") var window = Window()
    @Pref("Note") var note = Note()
    @Pref("Tags") var tags = Tags()
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// Writes a line to stdout unbuffered, so a parent reading the pipe sees it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func waitToBeKilled() -> Never {
    say("done")
    while true { sleep(60) }
}

if ProcessInfo.processInfo.environment["PREFS_HELPER_AS_NOBODY"] == "1" {
    guard setgroups(0, nil) == 0, setgid(65534) == 0, setuid(65534) == 0 else { fail("cannot become nobody") }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3 else { fail("usage: prefs-test-helper COMMAND SUITE ROOT [ARG]") }
let (command, suite, root) = (arguments[0], arguments[1], arguments[2])
PersistentPrefs.groupID = suite == "standard" ? nil : suite

/// The store SUITE names: a PlistFileStore directory (starting with "/"), a suite through the
/// Apple code path ("apple:NAME"), or `nil` for a suite used through `groupID`, the default store.
let explicitStore: (any PrefsStore)? = {
    if suite.hasPrefix("/") { return PlistFileStore(directory: URL(fileURLWithPath: suite)) }
    if suite.hasPrefix("apple:") {
        #if DEBUG
            guard let store = UserDefaultsStore.throughUserDefaults(suiteName: String(suite.dropFirst("apple:".count))) else {
                fail("cannot open suite \(suite)")
            }
            return store
        #else
            fail("\(suite): the Apple code path is there in debug builds only")
        #endif
    }
    return nil
}()

/// Plain `UserDefaults` on SUITE: `.standard` for "standard" (the library uses it too, as
/// `groupID` is then cleared), otherwise the named suite.
@Sendable func plainDefaults() -> UserDefaults {
    if suite == "standard" {
        PersistentPrefs.groupID = nil
        return .standard
    }
    guard let defaults = UserDefaults(suiteName: suite) else { fail("cannot open suite \(suite)") }
    return defaults
}

/// A value shared between threads.
final class Shared<Value>: @unchecked Sendable {  // `value` is only touched while holding `lock`
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { lock.lock(); defer { lock.unlock() }; return body(&value) }
}

/// A thread-safe counter.
final class LockedCounter: @unchecked Sendable {  // `count` is only touched while holding `lock`
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

/// What a `soak` process saw: values lower than one seen before (per root), and its own key
/// lower than its last write that returned.
final class SoakTally: @unchecked Sendable {  // every property is only touched while holding `lock`
    private let lock = NSLock()
    private let own: String
    private var highest: [String: Int] = [:]
    private var written = 0
    private var stepBacks = 0
    private var ownBacks = 0

    init(own: String) { self.own = own }

    func wrote(_ value: Int) {
        lock.lock(); defer { lock.unlock() }
        written = value
        highest[own] = max(highest[own, default: 0], value)
    }

    func seen(_ root: String, _ value: Int?) {
        guard let value else { return }
        lock.lock(); defer { lock.unlock() }
        if value < highest[root, default: 0] {
            stepBacks += 1
            if ProcessInfo.processInfo.environment["SOAK_VERBOSE"] != nil {
                FileHandle.standardError.write(Data("\(own) saw \(root) go back from \(highest[root, default: 0]) to \(value)\n".utf8))
            }
        } else {
            highest[root] = value
        }
        if root == own, value < written { ownBacks += 1 }
    }

    var summary: String {
        lock.lock(); defer { lock.unlock() }
        return "stepbacks \(stepBacks) ownback \(ownBacks)"
    }
}

func samplePrefs() -> SamplePrefs {
    explicitStore.map { SamplePrefs(key: root, store: $0) } ?? SamplePrefs(key: root)
}

/// A base-class instance on the same store as ``samplePrefs()`` (no defaults written).
@Sendable func plainPrefs() -> PersistentPrefs {
    explicitStore.map { PersistentPrefs(key: root, store: $0) } ?? PersistentPrefs(key: root)
}

/// A counter and a list, changed with `update` by several processes at once.
final class CounterPrefs: PersistentPrefs {
    @Pref("Count") var counter = 0
    @Pref("Items") var items: [String] = []
}

func counterPrefs() -> CounterPrefs {
    explicitStore.map { CounterPrefs(key: root, store: $0) } ?? CounterPrefs(key: root)
}

/// A set that accepts the keys "k0" … "k999".
final class WidePrefs: PersistentPrefs {
    static let allKeys = (0..<1000).map { "k\($0)" }
    override var keys: [String] { Self.allKeys }
}

/// Version 2 of a set: 1 renamed "Old" to "New", 2 doubled "Count". Each step appends a line to
/// the file named by MIGRATION_LOG, so a test can count how often the steps ran in all processes.
final class MigratingPrefs: PersistentPrefs {
    @Pref("New") var new = ""
    @Pref("Count") var counter = 0
    override class var schemaVersion: Int { 2 }
    override class var migrations: [PrefsMigration] {
        [
            PrefsMigration("rename Old to New") { set in
                logStep("1")
                set["New"] = set.removeValue(forKey: "Old")
            },
            .transform("Count") { value in
                logStep("2")
                return ((value as? Int) ?? 0) * 2
            },
        ]
    }
}

/// Appends "STEP PID" to the file MIGRATION_LOG names, in one `write` (O_APPEND: whole lines).
@Sendable func logStep(_ step: String) {
    guard let path = ProcessInfo.processInfo.environment["MIGRATION_LOG"] else { return }
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    guard descriptor >= 0 else { return }
    let line = Array("\(step) \(getpid())\n".utf8)
    _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

/// Version 1 of a wide set: its one step renames k0 … k299 to m0 … m299, slowly (a short pause
/// every 50 keys), so a SIGKILL can land in the middle of a migration.
final class WideMigratingPrefs: PersistentPrefs {
    static let allKeys = (0..<300).map { "m\($0)" }
    override var keys: [String] { Self.allKeys }
    override class var schemaVersion: Int { 1 }
    override class var migrations: [PrefsMigration] {
        [
            PrefsMigration("rename k… to m…") { set in
                for n in 0..<300 {
                    if n % 50 == 0 { usleep(300) }
                    set["m\(n)"] = set.removeValue(forKey: "k\(n)")
                }
            }
        ]
    }
}

switch command {
case "migrate-open":
    setenv("MIGRATION_LOG", arguments[3], 1)
    guard let at = Double(arguments[4]) else { fail("migrate-open needs a start time") }
    let wait = at - Date().timeIntervalSince1970
    if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
    let prefs = explicitStore.map { MigratingPrefs(key: root, store: $0) } ?? MigratingPrefs(key: root)
    if let error = prefs.lastError { fail("error: \(error)") }
    say("New=\(prefs.new) Count=\(prefs.counter) keys=\(prefs.values.keys.sorted()) version=\(prefs.storedSchemaVersion ?? -1)")

case "migrate-wide":
    say("opening")
    let prefs = explicitStore.map { WideMigratingPrefs(key: root, store: $0) } ?? WideMigratingPrefs(key: root)
    if let error = prefs.lastError { fail("error: \(error)") }
    say("done")

case "write-mixed":
    let prefs = MixedPrefs(key: root)
    prefs.values = MixedPrefs.expected
    guard prefs.lastError == nil else { fail("write failed: \(prefs.lastError!)") }
    waitToBeKilled()

case "check-mixed":
    let values = MixedPrefs(key: root).values
    let checks: [(String, Bool)] = [
        ("Int as? Int", values["Int"] as? Int == 10),
        ("Int as? Double", values["Int"] as? Double == 10),
        ("Double as? Double", values["Double"] as? Double == 45.6),
        ("Float as? Float", values["Float"] as? Float == Float(12.3)),
        ("Bool as? Bool", values["Bool"] as? Bool == true),
        ("String as? String", values["String"] as? String == "Ten"),
        ("Strings as? [String]", values["Strings"] as? [String] == ["a", "b"]),
        ("Ints as? [Int]", values["Ints"] as? [Int] == [1, 2, 3]),
        ("StringInt as? [String: Int]", values["StringInt"] as? [String: Int] == ["One": 1, "Two": 2]),
        ("StringString as? [String: String]", values["StringString"] as? [String: String] == ["a": "x"]),
        ("Date as? Date", values["Date"] as? Date == Date(timeIntervalSince1970: 1_700_000_000)),
        ("Data as? Data", values["Data"] as? Data == Data([0, 1, 2, 255])),
        (
            "Nested as? [String: [String: [Int]]]",
            values["Nested"] as? [String: [String: [Int]]] == ["inner": ["deep": [1, 2]]]
        ),
    ]
    for (name, passed) in checks { print("\(passed ? "ok" : "FAIL") \(name)") }
    exit(checks.allSatisfy(\.1) ? 0 : 1)

case "container-write", "container-read":
    enum Planet: String { case earth, mars }
    enum Key: CodingKey { case age, name, planet }
    guard let defaults = UserDefaults(suiteName: suite) else { fail("cannot open suite \(suite)") }
    let container = UserDefaultsContainer(keyedBy: Key.self, userDefaults: defaults)
    if command == "container-write" {
        container[.age] = 20
        container[.name] = "Ann"
        container[.planet] = Planet.mars
        guard container.lastError == nil else { fail("write failed: \(container.lastError!)") }
    } else {
        let age: Int? = container[.age]
        let name: String? = container[.name]
        let planet: Planet? = container[.planet]
        say("age=\(age.map(String.init) ?? "nil") name=\(name ?? "nil") planet=\(planet?.rawValue ?? "nil")")
    }

case "settings-write", "settings-read":
    SettingsLocation.directory = URL(fileURLWithPath: root)
    var player = PlayerSettings()
    guard AppSettings.shared.load(), player.loadUsingSettingsFile() else {
        fail("load failed: \(String(describing: AppSettings.lastSettingsError ?? PlayerSettings.lastSettingsError))")
    }
    if command == "settings-write" {
        AppSettings.shared.fontSize = 21
        AppSettings.shared.playSFX = false
        player.gunType = 1
        guard AppSettings.shared.update(), player.update() else { fail("update failed") }
    } else {
        say(
            "fontSize=\(AppSettings.shared.fontSize) playSFX=\(AppSettings.shared.playSFX) "
                + "gunType=\(player.gunType.map(String.init) ?? "nil") team=\(player.team ?? "nil")")
    }

case "pref-write":
    let prefs = TypedPrefs(key: root)
    prefs.int = 42
    prefs.double = 45.6
    prefs.float = 12.3
    prefs.bool = true
    prefs.string = "ünï"
    prefs.date = Date(timeIntervalSince1970: 1_700_000_000)
    prefs.data = Data([9, 8])
    prefs.strings = ["a", "b"]
    prefs.map = ["k": 7]
    prefs.mode = .loud
    prefs.styles = [.bold, .wide]
    prefs.url = URL(string: "https://example.org/a?q=1")
    prefs.frame = Frame(width: 3.5, title: "T")
    prefs.maybe = 5
    guard prefs.lastError == nil else { fail("write failed: \(prefs.lastError!)") }
    waitToBeKilled()

case "pref-check":
    let prefs = TypedPrefs(key: root)
    let checks: [(String, Bool)] = [
        ("Int", prefs.int == 42), ("Double", prefs.double == 45.6), ("Float", prefs.float == 12.3),
        ("Bool", prefs.bool), ("String", prefs.string == "ünï"),
        ("Date", prefs.date == Date(timeIntervalSince1970: 1_700_000_000)), ("Data", prefs.data == Data([9, 8])),
        ("Strings", prefs.strings == ["a", "b"]), ("Map", prefs.map == ["k": 7]), ("Mode", prefs.mode == .loud),
        ("Styles", prefs.styles == [.bold, .wide]), ("URL", prefs.url == URL(string: "https://example.org/a?q=1")),
        ("Frame", prefs.frame == Frame(width: 3.5, title: "T")), ("Maybe", prefs.maybe == 5),
        ("no error", prefs.lastError == nil),
    ]
    for (name, passed) in checks { say("\(passed ? "ok" : "FAIL") \(name)") }
    exit(checks.allSatisfy(\.1) ? 0 : 1)

case "audio-set":
    // audio-set SUITE ROOT KEY VALUE: one write through AudioPrefs (the sample with a schema);
    // prints "ok" or the error.
    guard arguments.count == 5 else { fail("audio-set needs KEY VALUE") }
    let audio = explicitStore.map { AudioPrefs(key: root, store: $0) } ?? AudioPrefs(key: root)
    switch arguments[3] {
    case "volume": audio.volume = Int(arguments[4]) ?? -1
    case "theme": audio.theme = AudioPrefs.Theme(rawValue: arguments[4]) ?? .system
    case "muted": audio.muted = arguments[4] == "true"
    case "device": audio.device = arguments[4]
    default: fail("unknown audio key \(arguments[3])")
    }
    say(audio.lastError.map { "error: \($0)" } ?? "ok")

case "audio-read":
    // audio-read SUITE ROOT: the values AudioPrefs reads and its locks.
    let audio = explicitStore.map { AudioPrefs(key: root, store: $0) } ?? AudioPrefs(key: root)
    say("volume=\(audio.volume) theme=\(audio.theme.rawValue) muted=\(audio.muted) device=\(audio.device) locked=\(audio.lockedKeys) forced=\(audio.isEntirelyLocked) problems=\(audio.problems.count)")

case "shape-write":
    // shape-write SUITE ROOT: the set's first write (its schema file with it).
    let prefs = ShapePrefs(key: root)
    prefs.window = Window(w: 1024, h: 768)
    say(prefs.lastError.map { "error: \($0)" } ?? "ok")

case "shape-read":
    // shape-read SUITE ROOT: what the program reads, and how many problems the set has.
    let prefs = ShapePrefs(key: root)
    say("window=\(prefs.window.w)x\(prefs.window.h) note=\(prefs.note.text)/\(prefs.note.tag ?? "nil") tags=\(prefs.tags.names) problems=\(prefs.problems.count)")

case "set-int":
    guard arguments.count == 4, let n = Int(arguments[3]) else { fail("set-int needs an integer") }
    let prefs = samplePrefs()
    prefs.int = n
    guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
    waitToBeKilled()

case "clear":
    let prefs = samplePrefs()  // a versioned set is cleared by its own class (older code may not)
    prefs.values = [:]
    guard prefs.lastError == nil else { fail("clear failed: \(prefs.lastError!)") }

case "put-int":
    guard arguments.count == 4, let n = Int(arguments[3]) else { fail("put-int needs an integer") }
    let prefs = samplePrefs()
    prefs[SamplePrefs.Key.int.rawValue] = n
    guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
    say("done")

case "put-int-watchers":
    guard arguments.count == 4, let n = Int(arguments[3]) else { fail("put-int-watchers needs an integer") }
    // Not the sample: its own init reads the set (to write its defaults into an empty one).
    final class WriteOnlyPrefs: PersistentPrefs {
        @Pref("Integer Value") var int = 0
    }
    // A one-shot program, as prefs-harness runs its commands: sets are not watched unobserved.
    PersistentPrefs.$watchesSets.withValue(false) {
        let prefs = explicitStore.map { WriteOnlyPrefs(key: root, store: $0) } ?? WriteOnlyPrefs(key: root)
        prefs.int = n
        guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
    }
    // What the process holds for watching: inotify descriptors and threads.
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let inotify = descriptors.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == "anon_inode:inotify" }
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.count ?? -1
    say("inotify=\(inotify.count) threads=\(threads)")

case "burst-int":
    guard arguments.count == 4, let count = Int(arguments[3]) else { fail("burst-int needs a count") }
    let prefs = samplePrefs()
    for n in 1...count {
        prefs[SamplePrefs.Key.int.rawValue] = n
        guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
    }
    say("done")

case "plain-put-int":
    guard arguments.count == 4, let n = Int(arguments[3]) else { fail("plain-put-int needs an integer") }
    let defaults = plainDefaults()
    var set = defaults.dictionary(forKey: root) ?? [:]
    set[SamplePrefs.Key.int.rawValue] = n
    defaults.set(set, forKey: root)
    guard defaults.synchronize() else { fail("synchronize() failed") }
    say("done")

case "plain-set-kinds":
    let defaults = plainDefaults()
    defaults.set("hello world", forKey: "String")
    defaults.set(42, forKey: "Int")
    defaults.set(-7, forKey: "Negative")
    defaults.set(1.5, forKey: "Double")
    defaults.set(true, forKey: "Bool")
    defaults.set(Date(timeIntervalSince1970: 1_714_564_800), forKey: "Date")  // 2024-05-01 12:00:00 UTC
    defaults.set(Data([0x0f, 0xbd, 0x77]), forKey: "Data")
    defaults.set(["a", "b c"], forKey: "Array")
    defaults.set(["k": "v", "n": 1] as [String: Any], forKey: "Dict")
    guard defaults.synchronize() else { fail("synchronize() failed") }
    say("done")

case "plain-get":
    let defaults = plainDefaults()
    _ = defaults.synchronize()
    guard let value = defaults.object(forKey: root) else { say("nil"); break }
    let unwrapped: Any = (value as Any?).flatMap { $0 } ?? value
    switch unwrapped {
    case let string as String: say("string \(string)")
    case let number as NSNumber:
        let kind = String(cString: number.objCType)
        say("number(\(kind)) \(number)")
    case let date as Date: say("date \(date.timeIntervalSince1970)")
    case let data as Data: say("data \(data.map { String(format: "%02x", $0) }.joined())")
    case let array as [Any]: say("array \(array.count)")
    case let dictionary as [String: Any]: say("dictionary \(dictionary.keys.sorted())")
    default: say("other \(type(of: unwrapped))")
    }

case "watch-int":
    let prefs = plainPrefs()
    let key = SamplePrefs.Key.int.rawValue
    let observation = prefs.observeChanges(to: [key]) { _ in
        say(plainPrefs().value(forKey: key, as: Int.self).map(String.init) ?? "nil")
    }
    guard !observation.isCancelled else { fail("cannot observe: \(String(describing: prefs.lastError))") }
    say("ready")
    while true { sleep(60) }

case "get-int":
    let prefs = plainPrefs()
    if let error = prefs.lastError { fail("error: \(error)") }
    say(prefs.value(forKey: SamplePrefs.Key.int.rawValue, as: Int.self).map(String.init) ?? "nil")

case "loop-int":
    let prefs = samplePrefs()
    var n = 0
    while true {
        n += 1
        prefs.int = n
        guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
        say(String(n))
    }

case "write-keys":
    guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("write-keys needs FIRST COUNT")
    }
    let prefs = explicitStore.map { WidePrefs(key: root, store: $0) } ?? WidePrefs(key: root)
    var refused: [String] = []
    for index in first..<(first + count) {
        prefs["k\(index)"] = index
        if let error = prefs.lastError {
            refused.append("k\(index)")
            FileHandle.standardError.write(Data("write of k\(index) failed: \(error)\n".utf8))
        }
    }
    // Keys whose write was refused were never acknowledged: they are not "lost".
    for key in refused { say("refused \(key)") }
    say("done")
    if !refused.isEmpty { exit(1) }

case "count-keys":
    let prefs = explicitStore.map { WidePrefs(key: root, store: $0) } ?? WidePrefs(key: root)
    if let error = prefs.lastError { fail("error: \(error)") }
    let values = prefs.values
    let correct = values.filter { key, value in key == "k\(value as? Int ?? -1)" }.count
    say("\(values.count) \(correct)")

case "plain-write-keys":
    // Plain UserDefaults beside the library: top-level keys pFIRST… ("standard" is .standard).
    // ROOT is "sync" (set + synchronize() each) or "nosync" (set only, one synchronize() at the end).
    guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("plain-write-keys needs FIRST COUNT")
    }
    let defaults = plainDefaults()
    for index in first..<(first + count) {
        defaults.set(index, forKey: "p\(index)")
        if root == "sync" { _ = defaults.synchronize() }
    }
    _ = defaults.synchronize()
    say("done")

case "plain-count":
    // How many of the top-level keys pFIRST… plain UserDefaults reads back with the right value.
    guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("plain-count needs FIRST COUNT")
    }
    let defaults = plainDefaults()
    let found = (first..<(first + count)).filter { (defaults.object(forKey: "p\($0)") as? Int) == $0 }.count
    say("\(found)")

case "plain-count-root":
    // How many of ROOT's kFIRST… plain UserDefaults reads back (the file as it is, before any
    // library access could put back a reverted value).
    guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("plain-count-root needs FIRST COUNT")
    }
    let set = plainDefaults().dictionary(forKey: root) ?? [:]
    let found = (first..<(first + count)).filter { index in
        let value = set["k\(index)"]
        return (value as? Int ?? (value as Any?).flatMap { $0 as? Int }) == index
    }.count
    say("\(found)")

case "mixed-threads":
    // One process, two threads on one suite: the library writes kFIRST… to ROOT while plain
    // UserDefaults code sets and synchronizes pFIRST…; ARG 4 is the count.
    guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("mixed-threads needs FIRST COUNT")
    }
    let failures = LockedCounter()
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) {
        let prefs = WidePrefs(key: root)
        for index in first..<(first + count) {
            prefs["k\(index)"] = index
            if let error = prefs.lastError {
                failures.add()
                FileHandle.standardError.write(Data("write of k\(index) failed: \(error)\n".utf8))
            }
        }
    }
    DispatchQueue.global().async(group: group) {
        let defaults = plainDefaults()  // the same CF domain as the library's object for the suite
        for index in first..<(first + count) {
            defaults.set(index, forKey: "p\(index)")
            _ = defaults.synchronize()
        }
    }
    group.wait()
    say("errors \(failures.value)")

case "unsaved-then-library":
    // Plain set without synchronize(), then a library write to ROOT, COUNT times: the library
    // saves this process's unsaved plain keys under its lock.
    // "named": the library's store is opened by the suite's name, so the library has no `UserDefaults` object of its
    // own before its first write (through `groupID` it uses one made for it).
    guard arguments.count == 5 || (arguments.count == 6 && arguments[5] == "named"), let first = Int(arguments[3]),
        let count = Int(arguments[4])
    else {
        fail("unsaved-then-library needs FIRST COUNT [named]")
    }
    let defaults = plainDefaults()
    let prefs: WidePrefs
    if arguments.count == 6 {
        guard let store = UserDefaultsStore(suiteName: suite) else { fail("cannot open suite \(suite)") }
        prefs = WidePrefs(key: root, store: store)
    } else {
        prefs = WidePrefs(key: root)
    }
    var errors = 0
    for index in first..<(first + count) {
        defaults.set(index, forKey: "p\(index)")
        prefs["k\(index)"] = index
        if prefs.lastError != nil { errors += 1 }
    }
    say("errors \(errors)")

case "deep-write":
    // Writes a value nested DEPTH arrays deep (ARG 3) from ROOT's kind of thread: main, thread,
    // dispatch or task; prints the error. Exits without freeing the value (freeing a value that
    // deep recursively would overflow the stack in the Swift runtime, whoever made it).
    guard arguments.count == 4, let depth = Int(arguments[3]) else { fail("deep-write needs DEPTH") }
    final class DeepPrefs: PersistentPrefs { override var keys: [String] { ["Deep"] } }
    let attempt: @Sendable () -> Never = {
        var value: Any = "leaf"
        for _ in 0..<depth { value = [value] }
        let prefs = DeepPrefs(key: "deep", store: InMemoryStore())
        prefs["Deep"] = value
        say(prefs.lastError.map { "refused \($0)" } ?? "stored")
        exit(0)
    }
    switch root {
    case "thread": Thread { attempt() }.start()
    case "dispatch": DispatchQueue.global().async { attempt() }
    case "task": Task.detached { attempt() }
    default: attempt()
    }
    while true { sleep(60) }

case "load-files":
    // Loads every *.plist in the folder ROOT as a PlistFileStore set; prints a line per file.
    let store = PlistFileStore(directory: URL(fileURLWithPath: root))
    let roots = (try? store.roots()) ?? []
    var loaded = 0
    for name in roots where (try? store.load(root: name)) != nil { loaded += 1 }
    say("loaded \(loaded) of \(roots.count)")

case "incr", "append":
    let prefs = counterPrefs()
    let tag = command == "append" ? arguments[3] : ""
    guard let count = Int(arguments[command == "append" ? 4 : 3]) else { fail("\(command) needs a count") }
    for n in 0..<count {
        do {
            if command == "incr" {
                try prefs.update(\.counter) { $0 += 1 }
            } else {
                try prefs.update(\.items) { $0.append("\(tag)-\(n)") }
            }
        } catch {
            fail("update failed: \(error)")
        }
    }
    say("done")

case "get-counter":
    let prefs = counterPrefs()
    let items = prefs.items
    if let error = prefs.lastError { fail("error: \(error)") }
    say("count \(prefs.counter) items \(items.count) distinct \(Set(items).count)")

case "batch-loop":
    let prefs = explicitStore.map { WidePrefs(key: root, store: $0) } ?? WidePrefs(key: root)
    let keys = (0..<10).map { "k\($0)" }
    for n in 1... {
        if arguments[3] == "update" {
            do {
                try prefs.update { set in for key in keys { set[key] = n } }
            } catch {
                fail("update failed: \(error)")
            }
        } else {
            prefs.batch { prefs in for key in keys { prefs[key] = n } }
            if let error = prefs.lastError { fail("batch failed: \(error)") }
        }
        if n == 1 { say("started") }
    }

case "soak":
    guard arguments.count >= 4, let seconds = Double(arguments[3]) else { fail("soak needs SECONDS OTHER…") }
    let tally = SoakTally(own: root)
    var observations: [PrefsObservation] = []
    for watched in [root] + arguments.dropFirst(4) {
        let prefs = explicitStore.map { WidePrefs(key: watched, store: $0) } ?? WidePrefs(key: watched)
        let store = explicitStore
        observations.append(
            prefs.observeChanges(to: ["k0"]) { _ in
                let reader = store.map { WidePrefs(key: watched, store: $0) } ?? WidePrefs(key: watched)
                tally.seen(watched, reader.value(forKey: "k0", as: Int.self))
            })
    }
    let mine = explicitStore.map { WidePrefs(key: root, store: $0) } ?? WidePrefs(key: root)
    let shared = explicitStore.map { WidePrefs(key: "Shared", store: $0) } ?? WidePrefs(key: "Shared")
    let end = Date().addingTimeInterval(seconds)
    var writes = 0
    while Date() < end {
        writes += 1
        mine["k0"] = writes
        if let error = mine.lastError { fail("write failed: \(error)") }
        tally.wrote(writes)
        tally.seen(root, mine.value(forKey: "k0", as: Int.self))
        if writes % 5 == 0 {
            do { try shared.update { $0["k1"] = (($0["k1"] as? Int) ?? 0) + 1 } } catch { fail("update failed: \(error)") }
        }
    }
    Thread.sleep(forTimeInterval: 1)  // changes in flight reach the observers
    _ = observations
    say("writes \(writes) \(tally.summary)")

case "poll-consistent":
    guard let count = Int(arguments[3]) else { fail("poll-consistent needs a count") }
    let prefs = plainPrefs()
    var mixed = 0
    var seen = Set<Int>()
    for _ in 0..<count {
        prefs.flush()
        let values = prefs.values
        let numbers = (0..<10).map { values["k\($0)"] as? Int }
        if Set(numbers.map { $0 ?? -1 }).count != 1 { mixed += 1 }
        if let first = numbers[0] { seen.insert(first) }
    }
    say("reads \(count) mixed \(mixed) distinct \(seen.count)")

case "hold-lock":
    // A writer stopped while it holds the lock is what the tests play: the parent sends SIGSTOP.
    let descriptor = open(root + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0 else { fail("cannot lock \(root).lock") }
    say("held \(getpid())")
    while true { sleep(60) }

case "hold-inotify":
    #if os(Linux)
        var held = 0
        while inotify_init1(Int32(IN_CLOEXEC)) >= 0 { held += 1 }
        say("held \(held)")
        while true { sleep(60) }
    #else
        fail("hold-inotify: inotify is Linux's")
    #endif

case "put-int-within":
    guard arguments.count == 5, let n = Int(arguments[3]), let seconds = Double(arguments[4]) else {
        fail("put-int-within needs N SECONDS")
    }
    PersistentPrefs.lockTimeout = seconds
    let prefs = samplePrefs()
    prefs[SamplePrefs.Key.int.rawValue] = n
    say(prefs.lastError.map { "error \($0)" } ?? "ok")

case "watch-report":
    let prefs = plainPrefs()
    let key = SamplePrefs.Key.int.rawValue
    let problem = Shared<PrefsObservation?>(nil)
    let describe: @Sendable () -> String = { problem.withLock { $0?.problem.map { "\($0)" } } ?? "live" }
    let observation = prefs.observeChanges(to: [key]) { _ in
        say("int \(plainPrefs().value(forKey: key, as: Int.self).map(String.init) ?? "nil") \(describe())")
    }
    guard !observation.isCancelled else { fail("cannot observe: \(String(describing: prefs.lastError))") }
    problem.withLock { $0 = observation }
    let degradedProblems = prefs.problems.filter { if case .watchDegraded = $0 { return true } else { return false } }
    let degradedError = prefs.lastError.map { if case .watchDegraded = $0 { return true } else { return false } } ?? false
    say("ready \(describe())")
    say("problems \(degradedProblems.count) lastError \(degradedError ? "watchDegraded" : "other")")
    while true { sleep(60) }

case "drag", "slow-drag":
    guard arguments.count == 6, let count = Int(arguments[3]), let gap = UInt32(arguments[4]) else {
        fail("\(command) needs COUNT GAP_MS exit|sync|again")
    }
    /// State that changes many times a second: its changes coalesce.
    class DragPrefs: PersistentPrefs {
        override class var coalescingInterval: TimeInterval? { 0.1 }
        @Pref("Integer Value") var position = 0
    }
    final class SlowDragPrefs: DragPrefs {
        override class var coalescingInterval: TimeInterval? { 60 }
    }
    let prefs: DragPrefs = command == "drag" ? explicitStore.map { DragPrefs(key: root, store: $0) } ?? DragPrefs(key: root)
        : explicitStore.map { SlowDragPrefs(key: root, store: $0) } ?? SlowDragPrefs(key: root)
    repeat {
        for n in 1...count {
            prefs.position = n
            guard prefs.lastError == nil else { fail("set failed: \(prefs.lastError!)") }
            if n == 1 { say("started") }
            if gap > 0 { usleep(gap * 1000) }
        }
    } while arguments[5] == "again"
    if arguments[5] == "sync" {
        do { try prefs.synchronize() } catch { fail("synchronize failed: \(error)") }
        say("synced")
        waitToBeKilled()
    }
    say("done")
    // The instance is still in use when the process exits: the exit writes what waits.
    withExtendedLifetime(prefs) { exit(0) }

case "raw-read":
    guard let defaults = UserDefaults(suiteName: suite) else { fail("cannot open suite \(suite)") }
    let set = defaults.dictionary(forKey: root)
    let value = set?["Integer Value"].flatMap { $0 as? Int ?? ($0 as Any?).flatMap { $0 as? Int } }
    say(value.map(String.init) ?? "nil")

default:
    fail("unknown command \(command)")
}

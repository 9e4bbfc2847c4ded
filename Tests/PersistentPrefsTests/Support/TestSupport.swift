import Foundation
@testable import PersistentPrefs
import Testing

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Whether `UserDefaultsStore(suiteName:)` takes the Linux suite-file road here: the library
/// reads and replaces `<suite>.plist` itself, under `<suite>.plist.lock`, with layer files,
/// schema files and inotify. On Apple platforms a suite goes through `UserDefaults` and
/// `cfprefsd` instead, which writes the file when it likes and promises exactness only within
/// one process.
var suitesAreLibraryFiles: Bool { !PlatformChoices.current.suitesGoThroughUserDefaults }

extension Trait where Self == ConditionTrait {
    /// Runs a test or suite only where `UserDefaultsStore` suites are the library's own files
    /// (``suitesAreLibraryFiles``): tests that read or write a suite's file, its lock, ledger,
    /// layer or schema files, watch it with inotify, share it with plain `UserDefaults` writers
    /// on Linux, or need cross-process exactness on a suite from child processes (whose
    /// `XDG_CONFIG_HOME` isolates them only on Linux). The same checks on `PlistFileStore`
    /// run everywhere.
    static var linuxSuiteFiles: Self {
        .enabled(if: suitesAreLibraryFiles, "checks the Linux suite-file road of UserDefaultsStore; on Apple platforms suites go through UserDefaults and cfprefsd")
    }
}

/// A UserDefaults suite of its own for one test, removed (file and all) when the test ends.
///
/// In-process `UserDefaults` on Linux reads `XDG_CONFIG_HOME` once, at start-up, so the
/// suite file lives in the user's config folder under a unique name and is deleted by
/// `remove()`. Child processes get a temporary `XDG_CONFIG_HOME` instead (``ChildProcess``).
/// On Apple platforms the suite lives in the user's domain folder, `~/Library/Preferences`,
/// where `cfprefsd` keeps it, until `remove()` deletes it; its unique name keeps it apart from
/// every other domain.
struct TestSuite {
    let name: String
    let store: UserDefaultsStore

    /// - Parameters:
    ///   - label: Part of the suite name (the test's name by default).
    ///   - applePath: Whether the store goes through `UserDefaults` as on Apple platforms
    ///     (`set`, `synchronize()`) instead of the Linux suite-file road.
    init(_ label: String = #function, applePath: Bool = false) {
        let clean = label.filter { $0.isLetter || $0.isNumber }
        name = "PersistentPrefsTests-\(clean)-\(UUID().uuidString)"
        store = applePath ? UserDefaultsStore.throughUserDefaults(suiteName: name)! : UserDefaultsStore(suiteName: name)!
    }

    /// The suite's plist file: in the config folder on Linux, in `~/Library/Preferences` on
    /// Apple platforms.
    var path: String { Self.path(ofSuite: name) }

    /// Removes the suite from memory and disk, with its lock file and any file moved aside
    /// (on Apple platforms, its plist in `~/Library/Preferences`).
    func remove() {
        store.userDefaults.removePersistentDomain(forName: name)
        _ = store.userDefaults.synchronize()
        Self.removeFiles(of: path)
    }

    /// The file of the suite `name`: in this process's config folder on Linux, in the user's
    /// `Library/Preferences` on Apple platforms (where `cfprefsd` writes it).
    static func path(ofSuite name: String) -> String {
        #if canImport(Darwin)
            let library = FileManager.default.urls(for: .libraryDirectory, in: .userDomainMask).first
                ?? URL(fileURLWithPath: NSHomeDirectory() + "/Library", isDirectory: true)
            return library.appendingPathComponent("Preferences", isDirectory: true).path + "/\(name).plist"
        #else
            return PreferencesFile.preferencesDirectory.path + "/\(name).plist"
        #endif
    }

    /// Removes `file` and everything beside it whose name starts with its name (lock, notes,
    /// files moved aside).
    static func removeFiles(of file: String) {
        SchemaPublishing.waitForAll()  // a schema file still being written would make its folder again
        let folder = (file as NSString).deletingLastPathComponent
        let prefix = (file as NSString).lastPathComponent
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
        }
        try? FileManager.default.removeItem(atPath: (file as NSString).deletingPathExtension + ".schemas")  // a suite's schema files
    }
}

/// A temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "PersistentPrefsTests-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() {
        SchemaPublishing.waitForAll()  // a schema file still being written would make its folder again
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A built executable of this package (the test helper or the harness), run as a child
/// process with `XDG_CONFIG_HOME` pointing at a temporary directory.
///
/// That isolates the child's suites only on Linux: on Apple platforms a child using
/// `UserDefaultsStore` reaches the user's real domains through `cfprefsd`, so tests whose
/// children use suites carry ``linuxSuiteFiles`` and the others give the child a
/// `PlistFileStore` folder.
struct ChildProcess {
    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    let configHome: String
    /// More environment variables for the child (`XDG_CONFIG_DIRS`, say).
    var environment: [String: String] = [:]

    /// A child-process runner whose `XDG_CONFIG_HOME` is a new temporary directory; remove
    /// the directory when done.
    static func inTemporaryConfigHome() -> (ChildProcess, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        return (ChildProcess(configHome: directory.path), directory)
    }

    /// The directory holding the package's built products, next to the test bundle.
    ///
    /// On Linux the tests are an executable in that directory (`Bundle.main`). On Apple platforms
    /// they are a `.xctest` bundle loaded into Xcode's `xctest` or SwiftPM's testing helper, so
    /// `Bundle.main` is elsewhere: the directory is the one holding the bundle.
    static let productsDirectory: URL? = {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        let testBundles = [Bundle(for: ProductsMarker.self)] + Bundle.allBundles.filter { $0.bundleURL.pathExtension == "xctest" }
        candidates += testBundles.map { $0.bundleURL.deletingLastPathComponent() }
        #if canImport(Darwin)
            // The image holding this code, `<products>/<tests>.xctest/Contents/MacOS/<tests>`:
            // its ancestors hold the products whichever host loaded the bundle.
            var image = Dl_info()
            if dladdr(#dsohandle, &image) != 0, let name = image.dli_fname {
                var folder = URL(fileURLWithPath: String(cString: name)).deletingLastPathComponent()
                for _ in 0..<4 {
                    candidates.append(folder)
                    folder.deleteLastPathComponent()
                }
            }
        #endif
        return candidates.first {
            FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("prefs-test-helper").path)
        }
    }()

    /// The built executable `name`. `PREFS_HARNESS_EXECUTABLE` (a path) stands in for
    /// `prefs-harness`: CI runs the harness's process tests again on the statically linked
    /// build the README tells Linux users to install.
    static func executable(_ name: String) throws -> URL {
        if name == "prefs-harness", let path = ProcessInfo.processInfo.environment["PREFS_HARNESS_EXECUTABLE"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw ChildProcessError(message: "PREFS_HARNESS_EXECUTABLE=\(path) is not an executable file")
            }
            return URL(fileURLWithPath: path)
        }
        guard let directory = productsDirectory else {
            throw ChildProcessError(message: "cannot find the built products (run `swift build` first)")
        }
        return directory.appendingPathComponent(name)
    }

    func process(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = try Self.executable(executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = configHome
        environment.merge(self.environment) { _, new in new }
        process.environment = environment
        return process
    }

    /// Starts a process whose stdout the caller reads (stderr is discarded).
    func start(_ executable: String, _ arguments: [String]) throws -> (process: Process, output: FileHandle) {
        let process = try process(executable, arguments)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// Writes `text` to a child's standard input. A child that exits without reading it (a usage
    /// error, say) closes the pipe first: the write then fails with `EPIPE`, which is ignored,
    /// and the `SIGPIPE` it raises, which would end the whole test process, is blocked on this
    /// thread and taken back before the thread's mask is restored (the children started before
    /// keep the default disposition).
    static func feed(_ handle: FileHandle, _ text: String) {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer {
            var pending = sigset_t()
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var taken: Int32 = 0
                _ = sigwait(&pipeSignal, &taken)  // pending, so it returns at once
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        try? handle.write(contentsOf: Data(text.utf8))
    }

    /// Runs to completion and returns its output.
    func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> Output {
        let process = try process(executable, arguments)
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        // stderr is read on a thread of its own: a child that fills one pipe while this thread
        // waits for the end of the other would wait forever (a crash report is long).
        let errors = PipeDrain(err.fileHandleForReading)
        if let input { Self.feed(stdin.fileHandleForWriting, input) }
        try? stdin.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.wait()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }

    /// Starts a process, waits until it prints `line` on stdout (or exits), then kills it
    /// with SIGKILL. Returns everything it printed.
    func killAfter(line: String, _ executable: String, _ arguments: [String]) throws -> String {
        let process = try process(executable, arguments)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var printed = Data()
        let handle = out.fileHandleForReading
        while !String(decoding: printed, as: UTF8.self).split(separator: "\n").contains(Substring(line)) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }  // the process exited
            printed.append(chunk)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return String(decoding: printed, as: UTF8.self)
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeDrain: @unchecked Sendable {  // `data` is written before `done` is signalled, read after
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    /// Everything the pipe carried, once its writers have closed it.
    func wait() -> Data {
        done.wait()
        return data
    }
}

/// A class of the test bundle, for ``ChildProcess/productsDirectory``: `Bundle(for:)` finds the
/// bundle whose code defines it.
private final class ProductsMarker {}

struct ChildProcessError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Runs `body` on a thread of its own and waits at most `seconds` for it, so that a hang fails
/// the test instead of stalling the whole run; `nil` when it did not finish in time (the thread
/// is then left behind, still waiting).
func finishing<Result>(within seconds: TimeInterval, _ body: @escaping () -> Result) -> Result? {
    let outcome = Outcome(body)
    Thread { outcome.run() }.start()
    guard outcome.done.wait(timeout: .now() + seconds) == .success else { return nil }
    return outcome.value
}

/// What ``finishing(within:_:)`` runs and what it returned.
private final class Outcome<Result>: @unchecked Sendable {  // `value` is written before `done` is signalled, read after
    var value: Result?
    let done = DispatchSemaphore(value: 0)
    private let body: () -> Result

    init(_ body: @escaping () -> Result) { self.body = body }

    func run() {
        value = body()
        done.signal()
    }
}

/// A child process holding a file's writers' lock (`flock` on `<file>.lock`), stopped with
/// SIGSTOP as a debugger or job control would stop it; `end()` kills it.
final class StoppedLockHolder {
    let process: Process
    let pid: Int32

    /// Starts the holder on `file` and stops it once it holds the lock.
    init(_ file: String, child: ChildProcess) throws {
        process = try child.process("prefs-test-helper", ["hold-lock", "-", file])
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = LineReader(out.fileHandleForReading).next(timeout: 20)
        guard let line, line.hasPrefix("held ") else {
            kill(process.processIdentifier, SIGKILL)
            throw ChildProcessError(message: "the lock holder did not start (\(line ?? "no output"))")
        }
        pid = process.processIdentifier
        kill(pid, SIGSTOP)
    }

    func end() {
        kill(pid, SIGKILL)
        kill(pid, SIGCONT)
        process.waitUntilExit()
    }
}

/// The time limit of every test that waits for something (an observer, a stream, a child
/// process, a thread, a file): a backstop that turns a hang into a failure naming the test.
///
/// Generous on purpose: Swift Testing starts a test's clock when the test starts, not when its
/// body gets a thread, and in a parallel run the tests that block hold the cooperative threads
/// (as many as the machine has cores), so on a small machine under a sanitizer a test can wait
/// minutes before it runs at all. Time limits need macOS 13 (the package supports macOS 12):
/// there, without one, the trait changes nothing.
let waitLimit: any SuiteTrait & TestTrait = {
    if #available(macOS 13, iOS 16, tvOS 16, watchOS 9, *) { return TimeLimitTrait.timeLimit(.minutes(15)) }
    return ConditionTrait.enabled(if: true)
}()

extension PlistXML {
    /// ``read(_:)``'s dictionary, or `nil` when the library's reader declines the document.
    static func dictionary(from data: Data) -> [String: Any]? {
        try? read(data).get()
    }
}

extension PlistFile {
    /// A file the library wrote, read as the library reads it (XML, or binary when a string in
    /// it holds a character XML cannot carry); `nil` when it does not parse.
    static func dictionary(from data: Data) -> [String: Any]? {
        guard case .success(let dictionary) = parse(data) else { return nil }
        return dictionary
    }
}

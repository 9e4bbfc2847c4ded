import Foundation
import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `watch [NAME…] [--json]`: one line per change of the set, as it happens, until Ctrl-C.
///
/// Any writer counts: this library in another process, plain `UserDefaults` code that
/// synchronises, another harness. Lines go to stdout (`time  root  key = value`, or one JSON
/// object per line with `--json`); the opening note goes to stderr, so stdout holds only changes.
enum WatchCommand {
    /// Watches the set of `session` until `wait` returns.
    ///
    /// - Parameters:
    ///   - names: Keys of the set's schema (for the sample's set, also aliases) to watch; empty
    ///     for every key.
    ///   - wait: Blocks for as long as the watch runs (the command line: until SIGINT or SIGTERM).
    /// - Throws: ``HarnessError`` when a name is unknown or the set cannot be read.
    static func run(
        names: [String], json: Bool, session: HarnessSession, console: Console, until wait: () -> Void
    ) throws {
        let set = names.isEmpty ? nil : try HarnessSet.of(session)
        let keys = try Set(names.map { try set?.key($0).name ?? $0 })
        let view = PersistentPrefs(key: session.rootKey, store: session.store)
        if let error = view.lastError { throw HarnessError.refused(error) }
        let printer = SerialConsole(console)
        let (root, store) = (session.rootKey, session.store)
        let observation = view.observeChanges(to: keys.sorted()) { event in
            let current = PersistentPrefs(key: root, store: store).effectiveValues
            for key in event.keys.sorted() where keys.isEmpty || keys.contains(key) {
                printer.print(line(time: Date(), root: root, key: key, value: current[key], json: json))
            }
        }
        guard !observation.isCancelled else {
            throw HarnessError.refused(view.lastError?.description ?? "cannot observe the set \"\(root)\"")
        }
        let watched = keys.isEmpty ? "every key" : keys.sorted().joined(separator: ", ")
        console.error("Watching \(watched) of \"\(root)\" in \(session.storeDescription); Ctrl-C to stop.")
        if let problem = observation.problem { console.error("warning: \(problem)") }
        wait()
        observation.cancel()
    }

    /// Watches every set of the session's store (`watch` without `--key` and without names, as
    /// `dconf watch /`): one line per changed key of any root key, until `wait` returns.
    static func runWholeStore(json: Bool, session: HarnessSession, console: Console, until wait: () -> Void) throws {
        let printer = SerialConsole(console)
        let store = session.store
        let observation = PersistentPrefs.observeStore(store) { event in
            let current = (try? store.load(root: event.root)) ?? nil
            for key in event.keys.sorted() {
                printer.print(line(time: Date(), root: event.root, key: key, value: current?[key], json: json))
            }
        }
        guard !observation.isCancelled else { throw HarnessError.refused("\(session.storeDescription) cannot be watched") }
        console.error("Watching every set in \(session.storeDescription); Ctrl-C to stop.")
        if let problem = observation.problem { console.error("warning: \(problem)") }
        wait()
        observation.cancel()
    }

    /// One change as printed: `2026-11-23T12:00:00.123Z  Root  Integer Value = 42`, `(removed)`
    /// for a key that was removed; or a JSON object with `time`, `root`, `key` and `value`
    /// (`null` when removed).
    static func line(time: Date, root: String, key: String, value: Any?, json: Bool) -> String {
        let stamp = timestamp(time)
        guard json else {
            return "\(stamp)  \(root)  \(key) = \(value.map(ValueFormatter.text) ?? "(removed)")"
        }
        return ValueFormatter.jsonText(["time": stamp, "root": root, "key": key, "value": value ?? NSNull()])
    }

    private static func timestamp(_ time: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: time)
    }

    /// Blocks until SIGINT (Ctrl-C) or SIGTERM, then exits with status 0: stopping is how a
    /// watch ends. The signals are unblocked first (a parent may have started this process with
    /// them blocked).
    static func waitForInterrupt() -> Never {
        exitOnInterrupt()
        while true { pause() }
    }

    /// Makes SIGINT (Ctrl-C) and SIGTERM end the process with status 0, unblocked first (a parent may have started
    /// this process with them blocked).
    static func exitOnInterrupt() {
        for number in [SIGINT, SIGTERM] { _ = signal(number, exitQuietly) }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }
}

/// Ends a watch on a signal: stdout is written unbuffered, so nothing printed is lost.
private func exitQuietly(_ signal: Int32) {
    _exit(0)
}

/// A console that several threads print to, one line at a time.
final class SerialConsole: @unchecked Sendable {  // `console` is only used while holding `lock`
    private let lock = NSLock()
    private let console: Console

    init(_ console: Console) {
        self.console = console
    }

    func print(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        console.print(line)
    }
}

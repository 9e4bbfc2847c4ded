import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Holds back Ctrl-C (and SIGTERM, SIGHUP) while a write runs, so an interrupted harness
/// never leaves a half-written store: a signal that arrives during the write is delivered, to
/// the handler in place before (the default effect, or `sync --watch`'s quiet exit), as soon as
/// the last write in progress is done.
///
/// Safe to use from several threads at once (the tests do): the first writer in installs
/// the handlers, the last one out restores them.
enum SignalGuard {
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private static let lock = NSLock()
    /// Writes in progress; guarded by `lock`.
    nonisolated(unsafe) private static var depth = 0
    /// The handlers in place when the first write came in, put back when the last one leaves; guarded by `lock`.
    nonisolated(unsafe) private static var previous = Dictionary(uniqueKeysWithValues: signals.map { ($0, SIG_DFL) })

    /// Runs `body` with the signals deferred.
    static func deferringSignals<Result>(_ body: () throws -> Result) rethrows -> Result {
        enter()
        defer { leave() }
        return try body()
    }

    private static func enter() {
        lock.lock()
        defer { lock.unlock() }
        if depth == 0 {
            pendingSignal = 0
            for number in signals { previous[number] = signal(number, recordSignal) }
        }
        depth += 1
    }

    private static func leave() {
        lock.lock()
        depth -= 1
        var deferred: Int32 = 0
        if depth == 0 {
            for number in signals { _ = signal(number, previous[number] ?? SIG_DFL) }
            deferred = pendingSignal
        }
        lock.unlock()
        if deferred != 0 { raise(deferred) }
    }
}

/// The signal that arrived while signals were deferred (0: none). Set only by the handler
/// below, as C code would set a `sig_atomic_t`; read under `SignalGuard`'s lock once the
/// handlers are removed.
nonisolated(unsafe) private var pendingSignal: Int32 = 0

private func recordSignal(_ signal: Int32) {
    pendingSignal = signal
}

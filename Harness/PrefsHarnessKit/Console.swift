import Foundation
import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the harness writes: results to standard output, errors to standard error, and
/// lines read from standard input. Tests use a recording console.
public final class Console {
    /// Whether output may use ANSI colour.
    public let colour: Bool
    /// Whether standard output is a terminal (the interactive screen is cleared only then).
    public let isTerminal: Bool
    private let writeOut: (String) -> Void
    private let writeErr: (String) -> Void
    private let readInput: () -> String?
    private let measureWidth: () -> Int?

    /// The terminal's width in columns, or `nil` off a terminal (lines are then not cut).
    public var width: Int? { measureWidth() }

    /// A console with explicit sinks.
    ///
    /// - Parameters:
    ///   - colour: Whether to use ANSI colour.
    ///   - isTerminal: Whether standard output is a terminal.
    ///   - out: Receives standard-output text.
    ///   - err: Receives standard-error text.
    ///   - readLine: Returns the next input line, or `nil` at end of input.
    ///   - width: Returns the terminal's width in columns, or `nil` off a terminal.
    public init(
        colour: Bool = false, isTerminal: Bool = false, out: @escaping (String) -> Void,
        err: @escaping (String) -> Void, readLine: @escaping () -> String? = { nil }, width: @escaping () -> Int? = { nil }
    ) {
        self.colour = colour
        self.isTerminal = isTerminal
        writeOut = out
        writeErr = err
        readInput = readLine
        measureWidth = width
    }

    /// The process's own standard streams. Colour only when standard output is a terminal
    /// and `NO_COLOR` is unset or empty.
    ///
    /// - Parameter environment: The variables to look in; `nil` (the default): the process's.
    public static func standard(environment: [String: String]? = nil) -> Console {
        let terminal = isatty(STDOUT_FILENO) == 1
        let noColour = !((environment.map { $0["NO_COLOR"] } ?? ProcessEnvironment.value("NO_COLOR")) ?? "").isEmpty
        return Console(
            colour: terminal && !noColour, isTerminal: terminal,
            out: { writeAll($0, to: STDOUT_FILENO) },
            err: { writeAll($0, to: STDERR_FILENO) },
            readLine: terminal && isatty(STDIN_FILENO) == 1
                ? { [editor = LineEditor(historyFile: LineEditor.defaultHistoryFile, completions: promptCompletions)] in editor.readLine() }
                : { Swift.readLine(strippingNewline: true) },
            width: { terminal ? terminalWidth() : nil }
        )
    }

    /// Writes `text` to `descriptor` with `write(2)`, all of it (again after a partial write or
    /// an interrupted call); stops quietly at any other error, such as a closed pipe
    /// (`prefs-harness … | head`), where `FileHandle.write` would raise.
    static func writeAll(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                #if canImport(Glibc)
                    let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                #elseif canImport(Musl)
                    let written = Musl.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                #else
                    let written = Darwin.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                #endif
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// The key names Tab completes after `get`, `set`, `incr` and `describe`: those of the set
    /// the interactive session is on (the sample's aliases for the sample's set), set by
    /// ``Interactive`` whenever it opens a set.
    static let completionKeys = CompletionKeys()

    /// What Tab completes at the prompt, given the words before the one being typed: command
    /// names first, then key names, `settings` actions or `defaults` subcommands.
    static func promptCompletions(_ previous: [String]) -> [String] {
        guard let command = previous.first else {
            return CommandSpec.all.filter { !["batch", "watch"].contains($0.name) }.map(\.name)
        }
        switch (command, previous.count) {
        case ("get", 1), ("set", 1), ("incr", 1), ("describe", 1), ("range", 1), ("writable", 1): return completionKeys.names
        case ("help", 1): return CommandSpec.all.map(\.name)
        case ("settings", 1): return ["show", "set", "reset"]
        case ("settings", 2): return ["app", "player"]
        case ("defaults", 1): return DefaultsTool.subcommands
        default: return []
        }
    }

    /// The width of the terminal on standard output, from `TIOCGWINSZ`, else `$COLUMNS`.
    private static func terminalWidth() -> Int? {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return ProcessEnvironment.value("COLUMNS").flatMap(Int.init)
    }

    /// Writes a line to standard output.
    public func print(_ line: String = "") { writeOut(line + "\n") }

    /// Writes text to standard output without a newline.
    public func write(_ text: String) { writeOut(text) }

    /// Writes a line to standard error.
    public func error(_ line: String) { writeErr(line + "\n") }

    /// Reads one line of input, or `nil` at end of input (Ctrl-D).
    public func readLine() -> String? { readInput() }

    /// `text` in an ANSI style when colour is on.
    func styled(_ text: String, _ style: Style) -> String {
        colour ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// ANSI styles the harness uses.
    enum Style: String {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case cyan = "36"
    }
}

/// The key names the prompt completes, shared between the session (which sets them) and the
/// line editor (which reads them).
final class CompletionKeys: @unchecked Sendable {  // `stored` is only touched while holding `lock`
    private let lock = NSLock()
    private var stored = SampleKey.allCases.map(\.rawValue)

    /// The names; the sample's aliases until a session sets others.
    var names: [String] {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }
}

import Foundation
import PersistentPrefs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The prompt's line editor on a terminal: arrow keys, Home/End, Backspace and Delete edit the
/// line; Up and Down walk the history (kept between sessions); Tab completes commands and key
/// names; Ctrl-C clears a half-typed line, and on an empty line leaves. Ctrl-A, Ctrl-E, Ctrl-K,
/// Ctrl-U and Ctrl-D work as in a shell.
///
/// The editing itself is ``LineEditor/State``, a value the tests drive key by key; this class
/// adds the terminal: raw mode while a line is read (restored before the line is returned, on
/// every exit path, and by a handler for the signals that end the program), and the history file.
public final class LineEditor {
    /// A key, decoded from the bytes a terminal sends.
    public enum Key: Equatable, Sendable {
        case character(Character)
        case left, right, home, end, up, down
        case backspace, delete, tab, enter
        /// Ctrl-C.
        case interrupt
        /// Ctrl-D.
        case endOfInput
        /// Ctrl-A, Ctrl-E, Ctrl-K, Ctrl-U.
        case lineStart, lineEnd, killToEnd, killToStart
        /// A sequence the editor does not use.
        case ignored
    }

    /// What a key does to the line being read.
    public enum Outcome: Equatable, Sendable {
        /// Keep reading.
        case editing
        /// The line is done (Enter).
        case submit(String)
        /// Leave the prompt (Ctrl-C or Ctrl-D on an empty line).
        case leave
    }

    /// The line being edited, the cursor, and the place in the history.
    public struct State: Equatable, Sendable {
        /// The line.
        public var buffer: [Character] = []
        /// Where the cursor is, as a character offset into ``buffer``.
        public var cursor = 0
        /// The history entry shown (`nil`: the line being typed).
        var historyIndex: Int?
        /// The line being typed, kept while the history is shown.
        var draft: [Character] = []

        /// An empty line.
        public init() {}

        /// The line as text.
        public var text: String { String(buffer) }

        /// Applies `key`.
        ///
        /// - Parameters:
        ///   - history: The earlier lines, oldest first.
        ///   - completions: The words Tab may complete the word before the cursor to, given the
        ///     words before it.
        /// - Returns: What the key does; a bell is rung by the caller when Tab finds nothing.
        public mutating func apply(_ key: Key, history: [String], completions: ([String]) -> [String]) -> Outcome {
            switch key {
            case .character(let character):
                buffer.insert(character, at: cursor)
                cursor += 1
            case .left: cursor = max(cursor - 1, 0)
            case .right: cursor = min(cursor + 1, buffer.count)
            case .home, .lineStart: cursor = 0
            case .end, .lineEnd: cursor = buffer.count
            case .backspace:
                guard cursor > 0 else { break }
                buffer.remove(at: cursor - 1)
                cursor -= 1
            case .delete:
                if cursor < buffer.count { buffer.remove(at: cursor) }
            case .killToEnd: buffer.removeSubrange(cursor...)
            case .killToStart:
                buffer.removeSubrange(..<cursor)
                cursor = 0
            case .up:
                guard !history.isEmpty else { break }
                let index = max((historyIndex ?? history.count) - 1, 0)
                if historyIndex == nil { draft = buffer }
                show(Array(history[index]), at: index)
            case .down:
                guard let index = historyIndex else { break }
                if index + 1 < history.count {
                    show(Array(history[index + 1]), at: index + 1)
                } else {
                    show(draft, at: nil)
                }
            case .tab:
                complete(completions)
            case .enter:
                return .submit(text)
            case .interrupt:
                guard buffer.isEmpty else {
                    self = State()
                    break
                }
                return .leave
            case .endOfInput:
                guard buffer.isEmpty else {
                    if cursor < buffer.count { buffer.remove(at: cursor) }
                    break
                }
                return .leave
            case .ignored:
                break
            }
            return .editing
        }

        private mutating func show(_ line: [Character], at index: Int?) {
            buffer = line
            cursor = line.count
            historyIndex = index
        }

        /// Completes the word before the cursor to the longest prefix its candidates share,
        /// with a space after a single candidate.
        private mutating func complete(_ completions: ([String]) -> [String]) {
            let before = String(buffer[..<cursor])
            let wordStart = before.lastIndex(of: " ").map { before.index(after: $0) } ?? before.startIndex
            let partial = String(before[wordStart...])
            let previous = before[..<wordStart].split(separator: " ").map(String.init)
            let candidates = completions(previous).filter { $0.hasPrefix(partial) }
            guard let first = candidates.first else { return }
            var shared = first
            for candidate in candidates.dropFirst() {
                while !candidate.hasPrefix(shared) { shared.removeLast() }
            }
            var addition = Array(shared.dropFirst(partial.count))
            if candidates.count == 1 { addition.append(" ") }
            buffer.insert(contentsOf: addition, at: cursor)
            cursor += addition.count
        }
    }

    /// Decodes the keys in `bytes` (UTF-8 text and the escape sequences of common terminals).
    public static func keys(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x1B:
                keys.append(escape(bytes, &index))
            case 0x0D, 0x0A: keys.append(.enter)
            case 0x7F, 0x08: keys.append(.backspace)
            case 0x09: keys.append(.tab)
            case 0x03: keys.append(.interrupt)
            case 0x04: keys.append(.endOfInput)
            case 0x01: keys.append(.lineStart)
            case 0x05: keys.append(.lineEnd)
            case 0x0B: keys.append(.killToEnd)
            case 0x15: keys.append(.killToStart)
            case 0x02: keys.append(.left)
            case 0x06: keys.append(.right)
            case 0x10: keys.append(.up)
            case 0x0E: keys.append(.down)
            case 0..<0x20: keys.append(.ignored)
            default:
                // One UTF-8 character: its lead byte says how many bytes follow.
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                let end = min(index - 1 + length, bytes.count)
                let text = String(decoding: bytes[(index - 1)..<end], as: UTF8.self)
                index = end
                keys += text.map(Key.character)
            }
        }
        return keys
    }

    /// An escape sequence after ESC: `[A`…`[D`, `[H`, `[F`, `OH`, `OF`, `[1~`, `[3~`, `[4~`, `[7~`, `[8~`.
    private static func escape(_ bytes: [UInt8], _ index: inout Int) -> Key {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") || bytes[index] == UInt8(ascii: "O") else { return .ignored }
        index += 1
        var parameter = ""
        while index < bytes.count, (0x30...0x3F).contains(bytes[index]) {
            parameter.append(Character(Unicode.Scalar(bytes[index])))
            index += 1
        }
        guard index < bytes.count else { return .ignored }
        let final = bytes[index]
        index += 1
        switch (final, parameter) {
        case (UInt8(ascii: "A"), _): return .up
        case (UInt8(ascii: "B"), _): return .down
        case (UInt8(ascii: "C"), _): return .right
        case (UInt8(ascii: "D"), _): return .left
        case (UInt8(ascii: "H"), _): return .home
        case (UInt8(ascii: "F"), _): return .end
        case (UInt8(ascii: "~"), "1"), (UInt8(ascii: "~"), "7"): return .home
        case (UInt8(ascii: "~"), "4"), (UInt8(ascii: "~"), "8"): return .end
        case (UInt8(ascii: "~"), "3"): return .delete
        default: return .ignored
        }
    }

    // MARK: - The terminal

    private var history: [String]
    private let historyFile: URL?
    private let completions: ([String]) -> [String]
    /// The most lines the history file keeps.
    static let historyLimit = 500

    /// An editor whose history lives in `historyFile` (`nil`: this session only).
    ///
    /// - Parameters:
    ///   - historyFile: Where the history is kept between sessions.
    ///   - completions: The words Tab may complete to, given the words before the cursor's.
    public init(historyFile: URL?, completions: @escaping ([String]) -> [String]) {
        self.historyFile = historyFile
        self.completions = completions
        history = historyFile.map(Self.loadHistory) ?? []
    }

    /// The lines kept in `file`, oldest first (none when it cannot be read).
    public static func loadHistory(_ file: URL) -> [String] {
        let saved = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return saved.split(separator: "\n").map(String.init).suffix(historyLimit)
    }

    /// Replaces `file` with `lines`, privately: the history holds typed values, so the file is
    /// made mode 0600 (a new file, renamed into place) in a folder made 0700, and an existing
    /// folder of this user's is made 0700 too. A failure only loses the history.
    public static func saveHistory(_ lines: [String], to file: URL) {
        let folder = file.deletingLastPathComponent().path
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else { return }
        if info.st_mode & 0o077 != 0 { chmod(folder, 0o700) }
        let temporary = folder + "/.\(file.lastPathComponent).\(getpid()).tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
            try handle.close()
        } catch {
            unlink(temporary)
            return
        }
        if rename(temporary, file.path) != 0 { unlink(temporary) }
    }

    /// The history file: `$XDG_STATE_HOME/prefs-harness/history`, else
    /// `$HOME/.local/state/prefs-harness/history` (see ``historyFile(environment:)``).
    public static var defaultHistoryFile: URL {
        historyFile(environment: ProcessEnvironment.value)
    }

    /// The history file for the environment `environment` reads: `$XDG_STATE_HOME/prefs-harness/history`,
    /// else `$HOME/.local/state/prefs-harness/history`, as the XDG Base Directory specification
    /// says (a relative path in either is ignored); the account's home folder only when `HOME`
    /// is unset.
    public static func historyFile(environment: (String) -> String?) -> URL {
        func absolute(_ name: String) -> String? { environment(name).flatMap { $0.hasPrefix("/") ? $0 : nil } }
        let base = absolute("XDG_STATE_HOME") ?? ((absolute("HOME") ?? NSHomeDirectory()) + "/.local/state")
        return URL(fileURLWithPath: base).appendingPathComponent("prefs-harness/history")
    }

    /// Reads one line from the terminal on standard input, echoing and editing it; `nil` when
    /// the user leaves (Ctrl-D or Ctrl-C on an empty line) or input ends.
    public func readLine() -> String? {
        guard let saved = Terminal.enterRawMode() else { return Swift.readLine(strippingNewline: true) }
        defer { Terminal.restore(saved) }
        var state = State()
        var shownCursor = 0  // where the cursor is on screen, in characters from the line's start
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                write("\r\n")
                return nil
            }
            for key in Self.keys(Array(buffer[..<count])) {
                let before = state.buffer.count
                switch state.apply(key, history: history, completions: completions) {
                case .editing:
                    if key == .tab, state.buffer.count == before { write("\u{7}") }
                case .submit(let line):
                    write("\r\n")
                    remember(line)
                    return line
                case .leave:
                    write("\r\n")
                    return nil
                }
            }
            // Redraw the line in place: back to its start, the text, clear the rest, cursor back.
            var output = shownCursor > 0 ? "\u{1B}[\(shownCursor)D" : ""
            output += state.text + "\u{1B}[K"
            let back = state.buffer.count - state.cursor
            if back > 0 { output += "\u{1B}[\(back)D" }
            write(output)
            shownCursor = state.cursor
        }
    }

    /// Adds `line` to the history (not blank lines, nor the line just before it again).
    private func remember(_ line: String) {
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty, history.last != line else { return }
        history.append(line)
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
        if let historyFile { Self.saveHistory(history, to: historyFile) }
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// Raw mode for the terminal on standard input, and its restoration, including by the signals
/// that end the program while a line is read.
enum Terminal {
    /// The settings to restore, for the signal handler (set only while raw mode is on).
    nonisolated(unsafe) private static var original: termios?

    /// Switches standard input to raw mode (no echo, no line buffering, Ctrl-C as a key);
    /// returns the settings to restore, or `nil` when it is not a terminal.
    static func enterRawMode() -> termios? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        original = saved
        for number in [SIGTERM, SIGHUP, SIGQUIT] { Glue.install(number) }
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else {
            original = nil
            return nil
        }
        return saved
    }

    /// Puts back the settings `enterRawMode()` returned.
    static func restore(_ saved: termios) {
        var settings = saved
        _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        original = nil
    }

    /// The signal handler's work: restore the terminal, then end as the signal would.
    fileprivate static func restoreForSignal(_ signal: Int32) {
        if var settings = original { _ = tcsetattr(STDIN_FILENO, TCSANOW, &settings) }
        Glue.reset(signal)
        raise(signal)
    }
}

/// The C-callable signal handler (it captures nothing, as a C function pointer must).
private enum Glue {
    static func install(_ number: Int32) {
        _ = signal(number, { Terminal.restoreForSignal($0) })
    }

    static func reset(_ number: Int32) {
        _ = signal(number, SIG_DFL)
    }
}

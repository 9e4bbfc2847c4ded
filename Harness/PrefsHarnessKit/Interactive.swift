import Foundation
import PersistentPrefs

/// The interactive mode: the set as a table, a prompt, the commands without the program
/// name, plus `key ROOT` and `quit`. Reloads the set before every screen; on a terminal the
/// table also redraws by itself when anyone changes the set (see ``LiveScreen``).
public struct Interactive {
    let session: HarnessSession
    let console: Console
    private let screen: LiveScreen

    /// An interactive session on `session`'s store, reading and writing `console`.
    public init(session: HarnessSession, console: Console) {
        self.session = session
        self.console = console
        screen = LiveScreen(console: console)
    }

    /// Runs until `quit` or end of input (Ctrl-D); returns the exit code: 0, or — for a piped
    /// session (not a terminal) — 1 when any command failed.
    ///
    /// Off a terminal (input from a pipe or a file) there is no screen and no prompt: each line
    /// runs as its command does on the command line (`list` prints the table), output on
    /// stdout, errors on stderr.
    public func run() -> Int32 {
        guard console.isTerminal else { return runLines() }
        var messages = opening()
        var failed = false
        defer { screen.stop() }
        while true {
            let shown = messages
            screen.follow(session.rootKey, store: session.store) { [self] in topLines() }
            screen.draw { show(shown) }
            guard let line = console.readLine() else {
                console.print()
                return failed && !console.isTerminal ? ExitCode.refused : ExitCode.success
            }
            messages = []
            do {
                let words = try Tokenizer.words(line)
                guard let word = words.first else { continue }
                if word == "quit" || word == "exit" { return failed && !console.isTerminal ? ExitCode.refused : ExitCode.success }
                messages = try perform(word, Array(words.dropFirst()))
            } catch {
                failed = true
                messages = [console.styled((error as? HarnessError)?.message ?? String(describing: error), .red)]
            }
        }
    }

    /// A session off a terminal: one command per line, no screen, no prompt; 1 when any command
    /// (or the set named at the start) failed, else 0.
    private func runLines() -> Int32 {
        var failed = false
        var number = 0
        // A refused line is named by its number, as batch names its lines.
        func report(_ error: any Error) {
            failed = true
            let place = number > 0 ? "line \(number): " : ""
            console.error("prefs-harness: \(place)\((error as? HarnessError)?.message ?? String(describing: error))")
        }
        do {
            _ = try HarnessSet.of(session)
        } catch {
            report(error)
        }
        while let line = console.readLine() {
            number += 1
            do {
                let words = try Tokenizer.words(line)
                guard let word = words.first else { continue }
                if word == "quit" || word == "exit" { break }
                for output in try perform(word, Array(words.dropFirst()), onScreen: false) { console.print(output) }
            } catch {
                report(error)
            }
        }
        return failed ? ExitCode.refused : ExitCode.success
    }

    /// Runs one command and returns what it printed; `onScreen`, for the interactive screen
    /// (which shows the table itself and reads the new set after `key`).
    private func perform(_ word: String, _ arguments: [String], onScreen: Bool = true) throws -> [String] {
        let command = try CommandLineParser.parseCommand(word, arguments, interactive: true)
        if command.arguments == ["--help"] { return [Harness.help(command.spec)] }
        switch command.spec.name {
        case "help":
            guard let topic = try CommandLineParser.helpTopic(command.arguments.first) else { return Self.promptHelp() }
            return [Harness.help(topic)]
        case "list" where !command.json && onScreen:
            return []  // the screen shows the table
        case "key":
            // A root key that is neither a program's nor the sample's is refused, and the screen
            // stays on the set it shows.
            let previous = session.rootKey
            session.rootKey = try CommandLineParser.rootKey(command.arguments[0])
            do {
                _ = try HarnessSet.of(session)
            } catch {
                session.rootKey = previous
                throw error
            }
            return ["Now on the root key \"\(session.rootKey)\"."] + (onScreen ? opening() : [])
        case "watch":
            throw HarnessError.usage(
                onScreen
                    ? "this screen already shows changes as they happen; run 'prefs-harness watch' for a log of them"
                    : "watch runs until Ctrl-C, so not from a list of commands; run 'prefs-harness watch' for a log of changes")
        case "batch":
            throw HarnessError.usage("batch reads its changes from stdin; run it from the shell: prefs-harness batch < changes.txt")
        case "sync" where command.flags.contains("--watch"):
            throw HarnessError.usage("sync --watch runs until Ctrl-C; run it from the shell: prefs-harness --suite SUITE --key ROOT sync FOLDER --watch")
        default:
            guard onScreen else {
                try session.execute(command, console: console)
                return []
            }
            var output: [String] = []
            let recorder = Console(
                colour: console.colour, isTerminal: false,
                out: { output.append(contentsOf: $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)) },
                err: { output.append($0.hasSuffix("\n") ? String($0.dropLast()) : $0) }
            )
            try session.execute(command, console: recorder)
            while output.last == "" { output.removeLast() }
            return output
        }
    }

    /// The key names Tab completes on `set`: the sample's aliases, or a program's key names.
    static func completionNames(_ set: HarnessSet) -> [String] {
        set.isSample ? SampleKey.allCases.map(\.rawValue) : set.keys.map(\.name)
    }

    /// The commands the prompt takes, one line each (what `help` shows there).
    static func promptHelp() -> [String] {
        let specs = CommandSpec.all.filter { !["batch", "watch"].contains($0.name) }
        let width = specs.map(\.synopsis.count).max() ?? 0
        return ["Commands at this prompt (COMMAND --help for one):"]
            + specs.map { "  \($0.synopsis.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.summary)" }
            + ["Values are typed as on the command line: set array a, b, c   set string hello world"]
    }

    /// The footer's list of commands.
    static var commandList: String {
        "Commands: " + CommandSpec.all.filter { !["batch", "watch"].contains($0.name) }.map(\.name).joined(separator: ", ")
    }

    /// Reads the set under the current root key, without writing anything (an empty root key
    /// stays empty); returns an error message when it cannot be read.
    private func opening() -> [String] {
        do {
            let set = try HarnessSet.of(session)
            Console.completionKeys.names = Self.completionNames(set)
            _ = try session.storedValues()
            return []
        } catch let error as HarnessError {
            return [console.styled(error.message, .red)]
        } catch {
            return [console.styled(String(describing: error), .red)]
        }
    }

    /// Clears the screen (on a terminal) and shows the root key, the set, `messages`, and the prompt.
    private func show(_ messages: [String]) {
        if console.isTerminal { console.write("\u{1B}[H\u{1B}[2J") }
        for line in topLines() { console.print(line) }
        console.print()
        for message in messages { console.print(message) }
        if !messages.isEmpty { console.print() }
        console.print(console.styled(Self.commandList, .dim))
        console.write(console.styled("prefs [\(session.rootKey)]> ", .bold))
    }

    /// The top of the screen: the root key and store, then the set (what a live redraw replaces).
    private func topLines() -> [String] {
        var lines = [
            console.styled("PersistentPrefs harness", .bold) + "  root key: " + console.styled(session.rootKey, .cyan)
                + "  store: \(session.storeDescription)"
        ]
        do {
            let set = try HarnessSet.of(session)
            if let file = set.file { lines.append("  schema file: \(file)") }
            if try session.storedValues().isEmpty {
                lines.append(
                    set.isSample
                        ? "  (nothing is stored under this root key: the sample's defaults are shown; set or reset writes)"
                        : "  (nothing is stored under this root key: the set's defaults are shown; set writes)")
            }
            lines += session.table(try set.shown(session: session), console: console)
        } catch let error as HarnessError {
            lines.append(console.styled(error.message, .red))
        } catch {
            lines.append(console.styled(String(describing: error), .red))
        }
        return lines
    }
}

/// Keeps the interactive screen current on a terminal: when anyone changes the set shown, the
/// lines at the top (root key and table) are rewritten in place — cursor saved, rewritten from
/// the top, cursor restored — so the prompt and a half-typed command stay as they are. When the
/// table has a different number of lines, the whole screen is drawn again instead (what was
/// typed is still there, and Enter still runs it). Off a terminal (pipes, tests) the screen
/// changes only between commands, as before.
final class LiveScreen: @unchecked Sendable {  // `state` is only touched while holding `lock`
    private struct State {
        var root: String?
        var observation: PrefsObservation?
        var topCount = 0
        var redrawAll: (() -> Void)?
        var top: (() -> [String])?
    }

    /// Recursive: a redraw reads the set, and a read may report a change on this thread.
    private let lock = NSRecursiveLock()
    private var state = State()
    private let console: Console

    init(console: Console) {
        self.console = console
    }

    /// Follows the set under `root` in `store` (a no-op off a terminal, or when already following it).
    func follow(_ root: String, store: any PrefsStore, top: @escaping () -> [String]) {
        guard console.isTerminal else { return }
        lock.lock()
        state.top = top
        guard state.root != root else {
            lock.unlock()
            return
        }
        let previous = state.observation
        state.root = root
        lock.unlock()
        previous?.cancel()
        let observation = PersistentPrefs(key: root, store: store).observeChanges { [weak self] _ in self?.changed() }
        lock.lock()
        state.observation = observation
        lock.unlock()
    }

    /// Draws the whole screen (ending with the prompt) with the console to itself.
    func draw(_ body: @escaping () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        state.redrawAll = body
        body()
        state.topCount = state.top?().count ?? 0
    }

    /// Stops following the set.
    func stop() {
        lock.lock()
        let observation = state.observation
        state = State()
        lock.unlock()
        observation?.cancel()
    }

    private func changed() {
        lock.lock()
        defer { lock.unlock() }
        guard let lines = state.top?() else { return }
        guard lines.count == state.topCount else {
            state.redrawAll?()
            state.topCount = lines.count
            return
        }
        var text = "\u{1B}7\u{1B}[H"
        for line in lines { text += "\u{1B}[2K" + line + "\r\n" }
        console.write(text + "\u{1B}8")
    }
}

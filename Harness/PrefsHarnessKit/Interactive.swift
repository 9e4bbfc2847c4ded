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

    /// Runs until `quit` or end of input (Ctrl-D); returns the exit code.
    public func run() -> Int32 {
        // First use of the root key: an empty set gets the sample defaults.
        var messages = opening()
        defer { screen.stop() }
        while true {
            let shown = messages
            screen.follow(session.rootKey, store: session.store) { [self] in topLines() }
            screen.draw { show(shown) }
            guard let line = console.readLine() else {
                console.print()
                return ExitCode.success
            }
            messages = []
            do {
                let words = try Tokenizer.words(line)
                guard let word = words.first else { continue }
                if word == "quit" || word == "exit" { return ExitCode.success }
                messages = try perform(word, Array(words.dropFirst()))
            } catch let error as HarnessError {
                messages = [console.styled(error.message, .red)]
            } catch {
                messages = [console.styled(String(describing: error), .red)]
            }
        }
    }

    /// Runs one command and returns what it printed.
    private func perform(_ word: String, _ arguments: [String]) throws -> [String] {
        let command = try CommandLineParser.parseCommand(word, arguments, interactive: true)
        if command.arguments == ["--help"] { return [Harness.help(command.spec)] }
        switch command.spec.name {
        case "help":
            return [Harness.help(try CommandLineParser.helpTopic(command.arguments.first))]
        case "key":
            session.rootKey = try CommandLineParser.rootKey(command.arguments[0])
            return ["Now on the root key \"\(session.rootKey)\"."] + opening()
        case "watch":
            throw HarnessError.usage("this screen already shows changes as they happen; run 'prefs-harness watch' for a log of them")
        case "batch":
            throw HarnessError.usage("batch reads its changes from stdin; run it from the shell: prefs-harness batch < changes.txt")
        default:
            var output: [String] = []
            let recorder = Console(
                colour: console.colour, isTerminal: false,
                out: { output.append(contentsOf: $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)) },
                err: { output.append($0) }
            )
            try session.execute(command, console: recorder)
            while output.last == "" { output.removeLast() }
            return output
        }
    }

    /// Opens the sample set under the current root key (writing the defaults into an empty
    /// set); returns an error message when it cannot be opened.
    private func opening() -> [String] {
        do {
            _ = try session.prefs()
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
        console.print(console.styled("Commands: list, get NAME, set NAME VALUE, reset, delete, roots, dump, key ROOT, help, quit", .dim))
        console.write(console.styled("prefs [\(session.rootKey)]> ", .bold))
    }

    /// The top of the screen: the root key and store, then the set (what a live redraw replaces).
    private func topLines() -> [String] {
        var lines = [
            console.styled("PersistentPrefs harness", .bold) + "  root key: " + console.styled(session.rootKey, .cyan)
                + "  store: \(session.storeDescription)"
        ]
        do {
            let values = try session.storedValues()
            if values.isEmpty {
                lines.append("  (nothing is stored under this root key; get, set or list writes the defaults)")
            } else {
                lines += session.table(values, console: console)
            }
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

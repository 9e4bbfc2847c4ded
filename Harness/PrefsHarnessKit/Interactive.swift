import Foundation

/// The interactive mode: the set as a table, a prompt, the commands without the program
/// name, plus `key ROOT` and `quit`. Reloads the set before every screen, so another
/// program's writes show up at once.
public struct Interactive {
    let session: HarnessSession
    let console: Console

    /// An interactive session on `session`'s store, reading and writing `console`.
    public init(session: HarnessSession, console: Console) {
        self.session = session
        self.console = console
    }

    /// Runs until `quit` or end of input (Ctrl-D); returns the exit code.
    public func run() -> Int32 {
        // First use of the root key: an empty set gets the sample defaults.
        var messages = opening()
        while true {
            show(messages)
            console.write(console.styled("prefs [\(session.rootKey)]> ", .bold))
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

    /// Clears the screen (on a terminal) and shows the root key, the set and `messages`.
    private func show(_ messages: [String]) {
        if console.isTerminal { console.write("\u{1B}[H\u{1B}[2J") }
        console.print(console.styled("PersistentPrefs harness", .bold) + "  root key: " + console.styled(session.rootKey, .cyan)
            + "  store: \(session.storeDescription)")
        do {
            let values = try session.storedValues()
            if values.isEmpty {
                console.print("  (nothing is stored under this root key; get, set or list writes the defaults)")
            } else {
                session.show(values, json: false, console: console)
            }
        } catch let error as HarnessError {
            console.print(console.styled(error.message, .red))
        } catch {
            console.print(console.styled(String(describing: error), .red))
        }
        console.print()
        for message in messages { console.print(message) }
        if !messages.isEmpty { console.print() }
        console.print(console.styled("Commands: list, get NAME, set NAME VALUE, reset, delete, roots, dump, key ROOT, help, quit", .dim))
    }
}

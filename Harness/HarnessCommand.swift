import Foundation
import PersistentPrefs
import PersistentPrefsSample

/// Parses the command line and prints the sample set.
enum HarnessCommand {
    static let usage = """
        usage: prefs-harness [--key ROOT] [--suite NAME]

        Prints every value of the sample preference set stored under ROOT
        (default "SamplePrefs") in the UserDefaults suite NAME (default: standard).
        An empty set is filled with the sample defaults first.
        """

    /// Runs the harness; returns the process exit code.
    static func run(arguments: [String]) -> Int32 {
        var key: String?
        var suite: String?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--help", "-h":
                print(usage)
                return 0
            case "--key", "--suite":
                guard let value = rest.popFirst() else {
                    return usageError("\(argument) needs a value")
                }
                if argument == "--key" { key = value } else { suite = value }
            default:
                return usageError("unknown argument '\(argument)'")
            }
        }
        if let suite {
            guard UserDefaultsStore(suiteName: suite) != nil else {
                return usageError("the UserDefaults suite '\(suite)' cannot be opened")
            }
            PersistentPrefs.groupID = suite
        }
        let prefs = SamplePrefs(key: key)
        if let error = prefs.lastError {
            printError(error.description)
            return 1
        }
        print("Root key: \(prefs.key)")
        let rows = prefs.values.sorted { $0.key < $1.key }
        let width = rows.map(\.key.count).max() ?? 0
        for (name, value) in rows {
            print("  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(value)")
        }
        return 0
    }

    private static func usageError(_ message: String) -> Int32 {
        printError("prefs-harness: \(message)\n\n\(usage)")
        return 2
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}

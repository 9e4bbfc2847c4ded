// prefs-bench: medians and ratios for the read and write paths, in one run.
//
//   swift run -c release prefs-bench [--quick] [--reads | --transactions | --coalescing] [--no-peers]
//
// Writes go to a throwaway UserDefaults suite ("prefs-bench-<pid>"), removed at the end.

import Foundation
import PersistentPrefs
import PersistentPrefsSample

exit(Bench.run(arguments: Array(CommandLine.arguments.dropFirst())))

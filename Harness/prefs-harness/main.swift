// prefs-harness: view and edit preference sets from a terminal.
// All the logic lives in PrefsHarnessKit; `prefs-harness --help` lists the commands.

import Foundation
import PersistentPrefs
import PrefsHarnessKit

// Each command reads and writes once and exits: no change watcher for its reads. The commands
// that stay (`watch`, the interactive screen) observe their sets, which starts the watch.
let status = PersistentPrefs.$watchesSets.withValue(false) {
    Harness(console: .standard()).run(Array(CommandLine.arguments.dropFirst()))
}
exit(status)

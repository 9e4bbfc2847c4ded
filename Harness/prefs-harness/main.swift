// prefs-harness: view and edit the sample preference set from a terminal.
// All the logic lives in PrefsHarnessKit; `prefs-harness --help` lists the commands.

import Foundation
import PrefsHarnessKit

exit(Harness(console: .standard()).run(Array(CommandLine.arguments.dropFirst())))

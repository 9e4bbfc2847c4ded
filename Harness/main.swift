// prefs-harness: view the sample preference set from a terminal.
//
//   swift run prefs-harness [--key ROOT] [--suite NAME]

import Foundation
import PersistentPrefs
import PersistentPrefsSample

exit(HarnessCommand.run(arguments: Array(CommandLine.arguments.dropFirst())))

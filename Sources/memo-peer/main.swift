import Foundation
import MemoCLI

// Entry point only: everything else is in MemoCLI, where it can be tested.
setenv("AVAHI_COMPAT_NOWARN", "1", 1)
exit(
  MemoPeerCLI.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))

import FoundationEssentials
import MemoCLI

#if canImport(Glibc)
  import Glibc
#endif

// Entry point only: everything else is in MemoCLI, where it can be tested.
exit(
  MemoPeerCLI.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))

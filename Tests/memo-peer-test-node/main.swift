import Foundation
import MemoCLI

// A test-only build of memo-peer (built with the tests, never installed): the same command
// line, with the knobs of `MemoPeerCLI.Tuning` given as leading options, so no test-only
// switch lives in memo-peer itself.
//
//   memo-peer-test-node [--receipt-delay-ms N] MEMO-PEER-ARGUMENTS…
//
// --receipt-delay-ms: `serve` pauses N ms between storing a delivery and sending its
// receipt (the kill -9 lab test widens the window where a receipt gets lost).
var arguments = Array(CommandLine.arguments.dropFirst())
var tuning = MemoPeerCLI.Tuning()
while let first = arguments.first, first == "--receipt-delay-ms" {
  arguments.removeFirst()
  guard let text = arguments.first, let milliseconds = Int(text), milliseconds >= 0 else {
    FileHandle.standardError.write(Data("memo-peer-test-node: --receipt-delay-ms needs a number\n".utf8))
    exit(2)
  }
  arguments.removeFirst()
  tuning.receiptDelay = Double(milliseconds) / 1000
}
exit(MemoPeerCLI.main(arguments: arguments, environment: ProcessInfo.processInfo.environment, tuning: tuning))

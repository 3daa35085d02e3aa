import Foundation
import MemoFuzzTargets

// libFuzzer's entry point (no main.swift: libFuzzer brings `main`). Built only by `make
// fuzz` (MEMO_PEER_FUZZ=1 swift build --sanitize=fuzzer), never a product. One binary holds
// every target; MEMO_PEER_FUZZ_TARGET names the one this process runs (Tests/Fuzz/README.md).

/// The target this process fuzzes, chosen once from the environment.
private let selected: FuzzTargets.Target = {
  let name = ProcessInfo.processInfo.environment["MEMO_PEER_FUZZ_TARGET"] ?? ""
  guard let target = FuzzTargets.all[name] else {
    FileHandle.standardError.write(
      Data("memo-peer-fuzz: set MEMO_PEER_FUZZ_TARGET to one of: \(FuzzTargets.names.joined(separator: ", "))\n".utf8))
    exit(2)
  }
  return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  selected(bytes)
  return 0
}

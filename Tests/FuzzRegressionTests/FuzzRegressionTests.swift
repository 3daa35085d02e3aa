import Foundation
import MemoFuzzTargets
import XCTest

/// Runs every committed fuzz input through its target in the normal suite: the seed corpus
/// (Tests/Fuzz/Corpus/TARGET) and every input libFuzzer found crashing
/// (Tests/Fuzz/Crashes/TARGET), each fixed since. A target traps on a broken invariant, so a
/// regression fails this test run (the crash names the target and file in the log).
final class FuzzRegressionTests: XCTestCase {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fuzz").path

  func inputs(_ kind: String, _ target: String) throws -> [(name: String, bytes: [UInt8])] {
    let folder = "\(Self.root)/\(kind)/\(target)"
    guard FileManager.default.fileExists(atPath: folder) else { return [] }
    return try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { name in
      (name, Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))))
    }
  }

  func testEveryTargetHasASeedCorpus() throws {
    if ProcessInfo.processInfo.environment["MEMO_PEER_WRITE_FUZZ_CORPUS"] == "1" {
      for (name, seeds) in FuzzTargets.seeds() {
        let folder = "\(Self.root)/Corpus/\(name)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (index, seed) in seeds.enumerated() {
          try Data(seed).write(to: URL(fileURLWithPath: "\(folder)/seed-\(index + 1)"))
        }
      }
    }
    for name in FuzzTargets.names {
      XCTAssertFalse(try inputs("Corpus", name).isEmpty, "Tests/Fuzz/Corpus/\(name) is empty")
    }
    let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/Corpus")
    XCTAssertEqual(Set(folders), Set(FuzzTargets.names), "a corpus folder per target, and no other")
  }

  func testTheCorpusAndEveryCrashFoundRunCleanly() throws {
    var count = 0
    for name in FuzzTargets.names {
      let target = try XCTUnwrap(FuzzTargets.all[name])
      for input in try inputs("Corpus", name) + inputs("Crashes", name) {
        target(input.bytes)
        count += 1
      }
    }
    XCTAssertGreaterThan(count, FuzzTargets.names.count)
    print("fuzz regression: \(count) inputs through \(FuzzTargets.names.count) targets")
  }
}

import MemoCore
import XCTest

/// The record's sealing context written from a row's bytes (`search`) is, byte for byte,
/// the one made from values (sealing, signing, every other reader).
final class RecordContextTests: XCTestCase {
  func testTheContextFromStoredBytesIsTheContextFromValues() {
    let notebook = NotebookID(String(repeating: "a", count: 32))!
    let keyID = String(repeating: "b", count: 32)
    let memo = MemoID()
    let origins: [ReplicaID] = ["1", "2", "c"].map { ReplicaID(String(repeating: $0, count: 32))! }
    var buffer: [UInt8] = [9, 9, 9]
    for (seq, clock) in [
      (UInt64(0), VersionVector()), (1, VersionVector([origins[0]: 1])),
      (9_007_199_254_740_992, VersionVector([origins[0]: 3, origins[1]: 9_007_199_254_740_992, origins[2]: 10])),
      (UInt64.max, VersionVector([origins[2]: 42])),
    ] {
      let dot = Dot(origin: origins[0], seq: seq)
      let expected = SealingContext.record(notebook: notebook, keyID: keyID, memo: memo, dot: dot, clock: clock)
      let clockBytes = clock.encoded()
      let parts = [notebook.rawValue, keyID, memo.rawValue, dot.origin.rawValue].map { Array($0.utf8) }
      parts[0].withUnsafeBytes { n in
        parts[1].withUnsafeBytes { k in
          parts[2].withUnsafeBytes { m in
            parts[3].withUnsafeBytes { o in
              clockBytes.withUnsafeBytes { c in
                SealingContext.record(
                  into: &buffer, notebook: n, keyID: k, memo: m, origin: o, seq: seq, encodedClock: c)
              }
            }
          }
        }
      }
      XCTAssertEqual(buffer, expected, "seq \(seq)")
    }
  }
}

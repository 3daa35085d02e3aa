import Dispatch
import Foundation
import MemoCrypto

/// The floor of an initial sync (issue 43): what any receiver of signed records has to do,
/// measured in the same run as the sync it is compared with.
///  - store: plain SQLite inserting as many rows of 1 KiB in one transaction, on the same
///    file system as the receiver's store (`PlainSQLite`);
///  - verify: one Ed25519 verification per record, of a message the size of a record's
///    signed part, spread over every core the machine has (256 per task, as a batch), by
///    OpenSSL as the receiver verifies.
/// The floor is their sum: a receiver cannot store a record before it is checked.
struct SyncFloor {
  let store: Double
  let verify: Double
  var total: Double { store + verify }

  /// The signed part of a 1 KiB memo's record: its sealed content (padded) and its context.
  static let messageSize = 1_300

  static func measure(count: Int, body: String, in directory: String) throws -> SyncFloor {
    let path = "\(directory)/floor.sqlite"
    let store = try PlainSQLite.insert(count: count, body: body, in: path)
    unlink(path)
    for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
    let verify = try verification(count: count)
    print(
      "  floor: plain SQLite, \(count) rows of 1 KiB in one transaction \(Self.milliseconds(store)) ms; "
        + "\(count) Ed25519 verifications on \(ProcessInfo.processInfo.activeProcessorCount) cores "
        + "\(Self.milliseconds(verify)) ms")
    return SyncFloor(store: store, verify: verify)
  }

  /// Seconds to verify `count` signatures on every core. At most 4,096 distinct messages are
  /// signed (not timed) and verified in turn: each verification is the same work.
  static func verification(count: Int) throws -> Double {
    let key = try Ed25519.SigningKey.random()
    let distinct = min(count, 4_096)
    let messages = (0..<distinct).map { _ in (0..<messageSize).map { _ in UInt8.random(in: 0...255) } }
    let signatures = try messages.map { try key.signature(for: $0) }
    let publicKey = key.publicKey
    let chunk = 256
    let tasks = (count + chunk - 1) / chunk
    let failures = Counter()
    let elapsed = seconds {
      DispatchQueue.concurrentPerform(iterations: tasks) { task in
        for index in (task * chunk)..<min(count, (task + 1) * chunk) {
          let which = index % distinct
          if !Ed25519.verify(signatures[which], message: messages[which], publicKey: publicKey) { failures.add() }
        }
      }
    }
    guard failures.value == 0 else { throw BenchError("\(failures.value) signatures of the floor did not verify") }
    return elapsed
  }

  static func milliseconds(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }

  /// A count shared by the verifying threads.
  private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
  }
}

/// Figures one group leaves for another of the same run: `sync-large` compares with the
/// `sync` group's 10,000-memo figures when both run.
final class SyncFigures: @unchecked Sendable {
  static let shared = SyncFigures()
  var initialSeconds: Double?
  var initialCount: Int?
  var changeCommandMilliseconds: Double?
}

import Dispatch
import MemoCore
import MemoCrypto
import MemoProtocol

/// Signatures checked before a write transaction opens, so the transaction never waits on
/// the threads that check them.
///
/// The rule (issue 39): a write transaction of this store lasts only as long as writing
/// takes. A daemon stopped or slowed inside one (SIGSTOP, a peer, a disk) keeps every
/// person's command from writing, so nothing that waits — network I/O, D-Bus, other
/// threads — runs between BEGIN and COMMIT. A received batch's signature checks are most
/// of its CPU time and run on every core (`verifyConcurrently`); they used to run while the
/// batch was stored, and the transaction waited for them before it committed. Now they run
/// first, from read-only look-ups (the replica's binding here, else the batch's own), and
/// the transaction takes their answers; a check the look-ups inside it name differently (a
/// binding or revocation another process wrote meanwhile) is made there, on that thread.
struct PrecheckedSignatures {
  /// By record index: the key it was checked under, and whether the signature held.
  private let results: [Int: (key: [UInt8], valid: Bool)]

  /// Nothing checked in advance: every check is made inside the transaction.
  static let none = PrecheckedSignatures(results: [:])

  init(results: [Int: (key: [UInt8], valid: Bool)]) { self.results = results }

  /// Whether each of `pending`'s checks verified, in its order: the answer from before the
  /// transaction when the check is the same (same record, same key), else checked now.
  func valid(_ pending: MemoStore.SignatureChecks) -> [Bool] {
    zip(pending.checks, pending.checked).map { check, target in
      if let known = results[target.index], known.key == check.2 { return known.valid }
      return Ed25519.verify(check.0, message: check.1, publicKey: check.2)
    }
  }
}

/// Checks started on other threads (`MemoStore.startSignatureChecks`): a receiving sync
/// checks a batch's signatures there while its own thread opens the batch's records. The
/// threads touch no store; `wait()` gives their answers, and is called before the
/// transaction that takes them opens, never inside it.
///
/// `@unchecked Sendable`: `results` is written by the one task the group runs and read only
/// after `group.wait()`, which orders that write before the read.
final class PendingSignatures: @unchecked Sendable {
  private let group = DispatchGroup()
  private var results: [Int: (key: [UInt8], valid: Bool)] = [:]

  /// Verifies `checks` (for records `indices`) on every core, in the background.
  fileprivate init(checks: [([UInt8], [UInt8], [UInt8])], indices: [Int]) {
    guard !checks.isEmpty else { return }
    DispatchQueue.global(qos: .userInitiated).async(group: group) {
      let valid = MemoStore.verifyConcurrently(checks)
      var results: [Int: (key: [UInt8], valid: Bool)] = [:]
      for (position, index) in indices.enumerated() { results[index] = (checks[position].2, valid[position]) }
      self.results = results
    }
  }

  /// The answers, once every check is done.
  func wait() -> PrecheckedSignatures {
    group.wait()
    return PrecheckedSignatures(results: results)
  }
}

extension MemoStore {
  /// Checks the signatures of `records` against the key each record's replica is bound to
  /// here, or (for a replica bound to nothing yet) the key of a binding in `bindings` that
  /// verifies: what `signatureChecks` inside the transaction will almost always ask for.
  /// Read-only and outside any transaction; the checks run on every core.
  func precheckSignatures(of records: [SyncRecord], bindings: [ReplicaBinding]) throws -> PrecheckedSignatures {
    var offered = OfferedBindings()
    return try startSignatureChecks(of: records, bindings: bindings, offered: &offered).wait()
  }

  /// The replica bindings a session's batches offered so far: each verified once, here,
  /// and the answer kept for the transaction that takes them (`takeBindings`).
  struct OfferedBindings {
    /// The key of each replica whose offered binding verified.
    var keys: [ReplicaID: [UInt8]] = [:]
    /// Each binding checked, with the device it proved (nil: it did not verify).
    var verified: [ReplicaBinding: DeviceID?] = [:]
  }

  /// `precheckSignatures` without waiting: the look-ups run here, on the store's thread, and
  /// the checks start on other threads. `offered` holds the bindings seen in earlier batches
  /// of the same session (a sender sends a replica's binding once, with the first of its
  /// records that the receiver may lack), and gets this batch's; the transaction checks
  /// again only a record whose key it finds different.
  func startSignatureChecks(
    of records: [SyncRecord], bindings: [ReplicaBinding], offered: inout OfferedBindings
  ) throws -> PendingSignatures {
    for binding in bindings where offered.verified[binding] == nil {
      let device = ReplicaBindings.verify(binding)
      offered.verified[binding] = .some(device)
      if device != nil, offered.keys[binding.replica] == nil { offered.keys[binding.replica] = binding.publicKey }
    }
    var keys: [ReplicaID: [UInt8]?] = [:]
    var checks: [([UInt8], [UInt8], [UInt8])] = []
    var indices: [Int] = []
    for (index, record) in records.enumerated() {
      guard let signature = record.signature else { continue }
      let origin = record.dot.origin
      let key: [UInt8]?
      if let known = keys[origin] {
        key = known
      } else {
        key = try boundSigner(of: origin)?.key ?? offered.keys[origin]
        keys[origin] = .some(key)
      }
      guard let key else { continue }
      checks.append((signature, record.signedMessage, key))
      indices.append(index)
    }
    return PendingSignatures(checks: checks, indices: indices)
  }

  /// `authorships(of:refused:)` with the signatures checked before the transaction
  /// (`precheckSignatures`): the look-ups run here, no check waits on another thread.
  func authorships(
    of records: [SyncRecord], refused: [ReplicaID: String], prechecked: PrecheckedSignatures
  ) throws -> [Authorship] {
    let pending = try signatureChecks(of: records, refused: refused)
    return pending.settled(prechecked.valid(pending))
  }
}

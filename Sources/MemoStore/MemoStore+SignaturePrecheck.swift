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

extension MemoStore {
  /// Checks the signatures of `records` against the key each record's replica is bound to
  /// here, or (for a replica bound to nothing yet) the key of a binding in `bindings` that
  /// verifies: what `signatureChecks` inside the transaction will almost always ask for.
  /// Read-only and outside any transaction; the checks run on every core.
  func precheckSignatures(of records: [SyncRecord], bindings: [ReplicaBinding]) throws -> PrecheckedSignatures {
    var offered: [ReplicaID: [UInt8]] = [:]
    for binding in bindings where offered[binding.replica] == nil {
      if ReplicaBindings.verify(binding) != nil { offered[binding.replica] = binding.publicKey }
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
        key = try boundSigner(of: origin)?.key ?? offered[origin]
        keys[origin] = .some(key)
      }
      guard let key else { continue }
      checks.append((signature, record.signedMessage, key))
      indices.append(index)
    }
    let valid = Self.verifyConcurrently(checks)
    var results: [Int: (key: [UInt8], valid: Bool)] = [:]
    for (position, index) in indices.enumerated() { results[index] = (checks[position].2, valid[position]) }
    return PrecheckedSignatures(results: results)
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

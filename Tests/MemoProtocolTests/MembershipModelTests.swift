import Foundation
import MemoCore
import MemoCrypto
import MemoTestSupport
import XCTest

@testable import MemoProtocol

/// The membership log's model test: 3 to 5 devices, each with its own copy of one
/// notebook's log, make ops concurrently (shares as member or relay, unshares with cuts,
/// key rotations — some with a generation the device chose, some sealed to a relay — grants,
/// renames, purges) whatever their role, so non-members, relays and removed devices sign
/// ops too; copies meet at random through `missing(peerHeads:)`. Then every op made is
/// delivered to fresh logs in different random orders, with replays and ops before their
/// parents (refused, then delivered again), and:
///
/// - every log has the same state, and so has every device once all have met;
/// - every op that counts (but a genesis) was signed by a member of its causal past;
/// - every key that counts is exactly one generation more than its past, and sealed only
///   to members of its past: a relay or a non-member is never a recipient;
/// - nobody is in the notebook but a creator or the target of a share that counts.
///
/// Deterministic: `MEMO_PEER_MEMBERSHIP_MODEL_SEED` replays one run,
/// `MEMO_PEER_MEMBERSHIP_MODEL_RUNS` sets the count; 300 runs (`make model`), 20 under
/// `MEMO_PEER_MODEL_RUNS=small` (`make check`).
final class MembershipModelTests: XCTestCase {
  func testLogsAgreeWhateverTheOrderAndOnlyMembersChangeAnything() throws {
    let seeds = try ModelSeeds.seeds("MEMO_PEER_MEMBERSHIP_MODEL", full: 300, small: 20)
    var totals = MembershipRun.Totals()
    for seed in seeds {
      var run = MembershipRun(seed: seed)
      do {
        try run.play(steps: 30)
        try run.check()
      } catch {
        XCTFail("seed \(seed): \(error)\n\(run.log.joined(separator: "\n"))")
        return
      }
      totals.add(run.totals)
    }
    print("membership model: \(seeds.count) runs; \(totals)")
    // The runs must reach what the test is about.
    XCTAssertGreaterThan(totals.void, 0)
    XCTAssertGreaterThan(totals.removed, 0)
    XCTAssertGreaterThan(totals.readmitted, 0)
    XCTAssertGreaterThan(totals.twoKeysOfOneGeneration, 0)
    XCTAssertGreaterThan(totals.refusedBeforeParents, 0)
    XCTAssertGreaterThan(totals.voidKeys, 0)
  }
}

struct MembershipRun {
  struct Totals: CustomStringConvertible {
    var ops = 0
    var void = 0
    var voidKeys = 0
    var removed = 0
    var readmitted = 0
    var twoKeysOfOneGeneration = 0
    var refusedBeforeParents = 0

    mutating func add(_ other: Totals) {
      ops += other.ops
      void += other.void
      voidKeys += other.voidKeys
      removed += other.removed
      readmitted += other.readmitted
      twoKeysOfOneGeneration += other.twoKeysOfOneGeneration
      refusedBeforeParents += other.refusedBeforeParents
    }

    var description: String {
      "\(ops) ops, \(void) void (\(voidKeys) keys), \(removed) removed, \(readmitted) re-admitted, "
        + "\(twoKeysOfOneGeneration) concurrent rotations, \(refusedBeforeParents) refused before their parents"
    }
  }

  static let devices = (0..<5).map { MembershipFixtures.Device("device\($0)", seed: 100 + UInt64($0)) }
  static let replicas = (0..<4).map { ReplicaID(String(repeating: String($0 + 1), count: 32))! }

  var random: SeededRandom
  let devices: [MembershipFixtures.Device]
  var logs: [MembershipLog]
  var log: [String] = []
  var totals = Totals()

  init(seed: UInt64) {
    random = SeededRandom(state: seed)
    devices = Array(Self.devices.prefix(3 + Int(seed % 3)))
    let creator = MembershipFixtures.notebook(by: devices[0])
    logs = devices.indices.map {
      $0 == 0 ? creator : MembershipLog(notebook: creator.notebook, verifier: MembershipFixtures.crypto)
    }
  }

  // MARK: - Playing

  /// The creator shares the notebook with every other device (the last as relay when there
  /// are four or more) and they all get the log; then `steps` random steps.
  mutating func play(steps: Int) throws {
    for index in devices.indices.dropFirst() {
      let role: NotebookOp.Role = index == devices.count - 1 && devices.count > 3 ? .relay : .member
      try logs[0].insert(logs[0].share(devices[index].id, as: role, signer: devices[0].key))
    }
    for index in devices.indices.dropFirst() { try sync(0, index) }
    for _ in 0..<steps {
      if random.below(10) < 4 {
        let from = random.below(devices.count)
        let to = (from + 1 + random.below(devices.count - 1)) % devices.count
        try sync(from, to)
      } else {
        try act(random.below(devices.count))
      }
    }
  }

  /// `to` gets what it lacks of `from`'s log, as a `sync-ops` answer would carry it.
  mutating func sync(_ from: Int, _ to: Int) throws {
    let answer = logs[from].missing(peerHeads: logs[to].heads)
    guard answer.complete else { throw ModelFailure("an answer of \(answer.ops.count) ops was cut") }
    for op in answer.ops { try logs[to].insert(op) }
    log.append("sync \(from) → \(to): \(answer.ops.count) ops")
  }

  /// Device `index` signs an op on its own copy, whatever its role there.
  mutating func act(_ index: Int) throws {
    guard logs[index].count > 0 else { return }
    let device = devices[index]
    let state = logs[index].state
    let target = devices[random.below(devices.count)]
    let current = logs[index]
    let op: NotebookOp
    let choice = random.below(12)
    switch choice {
    case 0..<3:
      let role: NotebookOp.Role = random.below(3) == 0 ? .relay : .member
      op = try current.share(target.id, as: role, signer: device.key)
    case 3..<5:
      let cut = Self.replicas.filter { _ in random.below(2) == 0 }.map {
        NotebookOp.CutEntry(replica: $0, sequence: UInt64(random.below(20)))
      }
      op = try current.unshare(target.id, cut: cut, signer: device.key)
    case 5..<8:
      var recipients = state.keyRecipients
      if random.below(5) == 0 { recipients.append(target.id) }  // perhaps a relay or a stranger
      let sealed = Dictionary(recipients.map { ($0, MembershipFixtures.box(UInt8(index))) }) { first, _ in first }
      var key = try current.rotateKey(keyID: keyID(), sealed: sealed, signer: device.key)
      if random.below(6) == 0, case .key(_, let id, let boxes) = key.body {
        let chosen: [UInt64] = [1 << 53, state.generation, state.generation + 2, .max]
        key.body = .key(generation: chosen[random.below(chosen.count)], keyID: id, sealed: boxes)
        key.signature = try device.key.signature(for: key.signedMessage)
      }
      op = key
    case 8..<10:
      let known = state.keys.map(\.keyID) + [keyID()]
      let keys = Dictionary(known.filter { _ in random.below(2) == 0 }.map { ($0, MembershipFixtures.box(9)) }) {
        first, _ in first
      }
      op = try current.grant(target.id, keys: keys, signer: device.key)
    case 10:
      let keyID = random.below(4) == 0 ? keyID() : (state.currentKey?.keyID ?? keyID())
      op = try current.rename(keyID: keyID, sealedName: [UInt8(random.below(256))], signer: device.key)
    default:
      op = try current.retiredPurge(MembershipFixtures.memo, signer: device.key)
    }
    try logs[index].insert(op)
    log.append("\(device.name) (\(state.role(of: device.id).map { "\($0)" } ?? "outside")): \(describe(op))")
  }

  mutating func keyID() -> [UInt8] { (0..<16).map { _ in UInt8(random.below(256)) } }

  func describe(_ op: NotebookOp) -> String {
    let id = MembershipFixtures.crypto.id(of: op)?.short ?? "?"
    let name = { (device: DeviceID) in Self.devices.first { $0.id == device }?.name ?? "?" }
    switch op.body {
    case .create: return "\(id) create"
    case .share(let device, let role): return "\(id) share \(name(device)) as \(role)"
    case .unshare(let device, let cut): return "\(id) unshare \(name(device)) cut \(cut.count)"
    case .key(let generation, _, let sealed): return "\(id) key \(generation) to \(sealed.map { name($0.device) })"
    case .grant(let device, let keys): return "\(id) grant \(name(device)) \(keys.count) keys"
    case .rename: return "\(id) rename"
    case .retiredPurge: return "\(id) purge"
    }
  }

  // MARK: - Checking

  mutating func check() throws {
    // Every op made, in one log (all copies meet in it).
    var everything = logs[0]
    for copy in logs { for op in copy.ops { try everything.insert(op) } }
    let state = everything.state
    let ops = everything.ops
    // Fresh logs, each fed in its own random order, with replays and early arrivals.
    for _ in 0..<3 {
      var fresh = MembershipLog(notebook: everything.notebook, verifier: MembershipFixtures.crypto)
      var pending = ops
      random.shuffle(&pending)
      while !pending.isEmpty {
        var later: [NotebookOp] = []
        for op in pending {
          do {
            try fresh.insert(op)
            if random.below(8) == 0, try fresh.insert(op) == .added(MembershipFixtures.crypto.id(of: op)!) {
              throw ModelFailure("a replay was added again")
            }
          } catch MembershipLog.Refusal.missingParents {
            later.append(op)
            totals.refusedBeforeParents += 1
          }
        }
        guard later.count < pending.count else { throw ModelFailure("ops whose parents never come") }
        pending = later
        random.shuffle(&pending)
      }
      guard fresh.state == state else { throw ModelFailure("a log fed in another order disagrees") }
    }
    // Every device, once all have met, agrees too.
    for _ in 0..<2 {
      for from in devices.indices { for to in devices.indices where from != to { try sync(from, to) } }
    }
    for copy in logs where copy.state != state { throw ModelFailure("a device's copy disagrees after meeting all") }
    try checkInvariants(everything, state)
    tally(everything, state)
  }

  /// What each op that counts needed, checked against its causal past: membership is
  /// worked out again here, plainly, from the ops of that past that count in the whole log
  /// (an op voided anywhere authorizes nothing anywhere: that is the fixed point).
  func checkInvariants(_ everything: MembershipLog, _ state: MembershipState) throws {
    let ops = everything.ops
    let ids = ops.map { MembershipFixtures.crypto.id(of: $0)! }
    var pasts: [OpID: Set<OpID>] = [:]
    for (op, id) in zip(ops, ids) {  // parents first
      pasts[id] = op.parents.reduce(into: Set(op.parents)) { $0.formUnion(pasts[$1] ?? []) }
    }
    let counting = zip(ops, ids).filter { !state.void.contains($0.1) }
    /// Rule 3: a counting share (or genesis) of `device` that has every counting unshare of
    /// it in its past; of the latest such, the lesser role.
    func role(of device: DeviceID, within past: Set<OpID>) -> NotebookOp.Role? {
      let here = counting.filter { past.contains($0.1) }
      let removals = here.compactMap { op, id -> OpID? in
        if case .unshare(let target, _) = op.body, target == device { return id }
        return nil
      }
      let admitting = here.compactMap { op, id -> (OpID, NotebookOp.Role)? in
        switch op.body {
        case .share(let target, _) where target == device: break
        case .create where MembershipFixtures.crypto.device(of: op.author) == device: break
        default: return nil
        }
        guard removals.allSatisfy({ pasts[id]!.contains($0) }) else { return nil }
        if case .share(_, let role) = op.body { return (id, role) }
        return (id, .member)
      }
      let latest = admitting.filter { share in !admitting.contains { pasts[$0.0]!.contains(share.0) } }
      if latest.isEmpty { return nil }
      return latest.contains { $0.1 == .relay } ? .relay : .member
    }
    for (op, id) in counting {
      if case .create = op.body { continue }
      let past = pasts[id]!
      let author = MembershipFixtures.crypto.device(of: op.author)!
      guard role(of: author, within: past) == .member else {
        throw ModelFailure("\(id.short) counts, but its author was not a member of its past")
      }
      if case .key(let generation, _, let sealed) = op.body {
        let before = counting.filter { past.contains($0.1) }.compactMap { op, _ -> UInt64? in
          if case .key(let generation, _, _) = op.body { return generation }
          return nil
        }
        guard generation == (before.max() ?? 0) + 1 else {
          throw ModelFailure("\(id.short) counts with generation \(generation) after \(before)")
        }
        for recipient in sealed where role(of: recipient.device, within: past) != .member {
          throw ModelFailure("\(id.short) counts, but is sealed to a non-member")
        }
      }
    }
    for member in state.members.keys {
      guard let expected = role(of: member, within: Set(ids)), expected == state.members[member] else {
        throw ModelFailure("\(member.short) is in as \(state.members[member]!), rule 3 says otherwise")
      }
    }
    var admitted = state.creators
    for (op, _) in counting {
      if case .share(let device, _) = op.body { admitted.insert(device) }
    }
    for member in state.members.keys where !admitted.contains(member) {
      throw ModelFailure("\(member.short) is in without a share that counts")
    }
    for key in state.keys {
      for recipient in key.sealed.keys where !admitted.contains(recipient) {
        throw ModelFailure("a key that counts reached \(recipient.short), never admitted")
      }
    }
  }

  mutating func tally(_ everything: MembershipLog, _ state: MembershipState) {
    totals.ops += everything.count
    totals.void += state.void.count
    let byID = Dictionary(everything.ops.map { (MembershipFixtures.crypto.id(of: $0)!, $0) }) { first, _ in first }
    totals.voidKeys += state.void.filter { byID[$0]?.kind == .key }.count
    totals.removed += state.cuts.count
    let generations = state.keys.map(\.generation)
    totals.twoKeysOfOneGeneration += generations.count - Set(generations).count
    var unshared = Set<DeviceID>()
    for op in everything.ops {
      if case .unshare(let device, _) = op.body, !state.void.contains(MembershipFixtures.crypto.id(of: op)!) {
        unshared.insert(device)
      }
    }
    totals.readmitted += unshared.filter { state.members[$0] != nil }.count
  }
}

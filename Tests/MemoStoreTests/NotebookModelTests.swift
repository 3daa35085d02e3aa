import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// The sync model with notebooks: three member replicas and one blind relay, random
/// histories of creates, edits, deletes, resolutions and syncs (some cut off) between any
/// two of the four — the relay included, so memos often travel only through it — with a
/// membership change in the middle: notebook `b` is shared with replica 2 at some step and,
/// in some runs, unshared from it again (which rotates the key). Every sync is the
/// production `SyncSession` over an in-memory channel. Afterwards, once every pair has
/// synced a few times:
///
/// - the members of each notebook hold exactly the same rows of it, and the relay holds
///   exactly their heads of it, sealed (the same memo ids and dots);
/// - no replica ever holds a row of a notebook never shared with it, and the relay holds
///   no key and no memo;
/// - an unshared replica holds nothing the unsharing replica wrote after the unshare;
/// - no edit a current member made is lost.
///
/// A failure prints its seed: `MEMO_PEER_NOTEBOOK_MODEL_SEED` replays one run,
/// `MEMO_PEER_NOTEBOOK_MODEL_RUNS` changes the count. 300 runs (`make model`); 30 under
/// `MEMO_PEER_MODEL_RUNS=small` (`make check`).
final class NotebookModelTests: XCTestCase {
  func testMembersConvergeOnExactlyTheirNotebooksAndTheRelayNeverHoldsAKey() throws {
    let seeds = try ModelSeeds.seeds("MEMO_PEER_NOTEBOOK_MODEL", full: 300, small: 12)
    var totals = NotebookRun.Totals()
    for seed in seeds {
      var run = try NotebookRun(seed: seed)
      do {
        try run.play(steps: 30)
        try run.settle()
        try run.check()
      } catch {
        XCTFail("seed \(seed): \(error)\n\(run.log.joined(separator: "\n"))")
        return
      }
      totals.add(run)
    }
    print("notebook model: \(seeds.count) runs; \(totals.description); all converged")
    // The runs must reach what the test is for.
    XCTAssertGreaterThan(totals.relayedOnly, 0, "memos that reached a member only through the relay")
    XCTAssertGreaterThan(totals.unshared, 0)
    XCTAssertGreaterThan(totals.conflicts, 0)
    XCTAssertGreaterThan(totals.cut, 0)
    XCTAssertGreaterThan(totals.hostileRefused, 0, "the hostile replica's ops reached honest replicas")
  }
}

/// One run: replicas 0, 1, 2 are members, 3 is the relay.
struct NotebookRun {
  struct Totals: CustomStringConvertible {
    var relayedOnly = 0
    var unshared = 0
    var conflicts = 0
    var cut = 0
    var hostileRefused = 0

    mutating func add(_ run: NotebookRun) {
      relayedOnly += run.relayedOnly
      unshared += run.unshareSeq == nil ? 0 : 1
      conflicts += run.conflicts
      cut += run.cuts
      hostileRefused += run.hostileRefused
    }

    var description: String {
      "\(relayedOnly) memos a member first got from the relay, \(unshared) unshares, \(conflicts) conflict copies, "
        + "\(cut) syncs cut, \(hostileRefused) hostile ops kept aside"
    }
  }

  var random: SeededRandom
  let replicas: [ModelReplica]
  let a: NotebookID
  let b: NotebookID
  var log: [String] = []
  /// Whether notebook b is shared with replica 2 now, and whether it ever was.
  var bShared = false
  var bEverShared = false
  /// Replica 0's sequence when it unshared b from replica 2.
  var unshareSeq: UInt64?
  /// What replica 0 had seen of replica 2's writes then: the unshare's cut.
  var cutOfR2: UInt64 = 0
  /// Texts written by each notebook's members (while members), and those a person replaced.
  var written: [NotebookID: Set<String>] = [:]
  var replaced: Set<String> = []
  var counter = 0
  var relayedOnly = 0
  var conflicts = 0
  var cuts = 0

  static let relay = 3
  /// A fifth replica, trusted by everyone and a relay of notebook a only, that signs
  /// membership ops of its own: making itself a member, keys and grants for itself,
  /// unshares of members, renames, purges, and a notebook b of its own making.
  static let hostile = 4
  /// Ops the hostile replica sent that the honest replicas kept aside.
  var hostileRefused = 0

  init(seed: UInt64) throws {
    random = SeededRandom(state: seed)
    replicas = try (0..<5).map { _ in try ModelReplica() }
    let devices = replicas.map { ($0.store, $0.device) }
    a = try replicas[0].store.defaultNotebook().id
    try shareNotebook(a, among: devices, roles: [.member, .member, .member, .relay, .relay])
    b = try replicas[0].store.createNotebook(named: "b", now: 1).id
    try shareNotebook(b, among: [devices[0], devices[1], devices[3]], roles: [.member, .member, .relay])
  }

  /// The notebooks a replica can write in: those it holds the key of (replica 2 gets b's
  /// once a member shares it, and goes on believing it has it after an unshare).
  func notebooks(of replica: Int) throws -> [NotebookID] {
    try replicas[replica].store.notebooks().filter { $0.role == .member && ($0.id == a || $0.id == b) }.map(\.id)
  }

  mutating func play(steps: Int) throws {
    let shareAt = random.below(steps)
    let unshareAt = random.below(2) == 0 ? shareAt + 1 + random.below(steps) : nil
    for step in 0..<steps {
      if step == shareAt { try share() }
      if step == unshareAt { try unshare() }
      if random.below(4) == 0 { try hostileActs() }
      let index = random.below(4)
      if index == Self.relay || random.below(10) >= 6 {
        try syncRandom(from: index)
        continue
      }
      let store = replicas[index].store
      let writable = try notebooks(of: index)
      let memos = try store.summaries().map { try store.memo($0.id) }.filter { writable.contains($0.notebook!) }
      let originals = memos.filter { $0.conflictOf == nil }
      switch random.below(6) {
      case 0, 1:
        let notebook = writable[random.below(writable.count)]
        let text = token(index, in: notebook)
        let memo = try store.create(MemoDraft(title: "t", body: text), now: 1, in: notebook)
        log.append("r\(index) create \(memo.id.short) in \(notebook == a ? "a" : "b"): \(text)")
      case 2, 3:
        guard let memo = originals.isEmpty ? nil : originals[random.below(originals.count)] else { continue }
        let text = token(index, in: memo.notebook!)
        do {
          try store.update(memo.id, MemoChange(body: text), now: 2)
          replaced.insert(memo.body)
          log.append("r\(index) edit \(memo.id.short) \(memo.body) -> \(text)")
        } catch let error as MemoPeerError where error.code == .conflict {
          written[memo.notebook!]?.remove(text)
        }
      case 4:
        guard let memo = originals.isEmpty ? nil : originals[random.below(originals.count)] else { continue }
        if (try? store.delete(memo.id, now: 3)) != nil {
          replaced.insert(memo.body)
          log.append("r\(index) delete \(memo.id.short) \(memo.body)")
        }
      default:
        guard let copy = memos.first(where: { $0.conflictOf != nil }), let original = copy.conflictOf else { continue }
        let keep = [ConflictChoice.a, .b, .both][random.below(3)]
        let winner = try store.memo(original)
        try store.resolveConflict(copy.id, keep: keep, now: 4)
        if keep == .a { replaced.insert(copy.body) }
        if keep == .b { replaced.insert(winner.body) }
        log.append("r\(index) resolve \(copy.id.short) keep \(keep.rawValue)")
      }
    }
  }

  mutating func token(_ replica: Int, in notebook: NotebookID) -> String {
    counter += 1
    let text = "edit-\(replica)-\(counter)"
    written[notebook, default: []].insert(text)
    return text
  }

  /// Replica 0 shares b with replica 2, as a member: an op in b's log, which reaches the
  /// others at their next syncs; replica 2 takes b when a person accepts the invitation
  /// (`acceptInvitations`, after each of its syncs).
  mutating func share() throws {
    guard !bShared else { return }
    try replicas[0].store.share(b, with: replicas[2].device, as: .member, now: 10)
    bShared = true
    bEverShared = true
    log.append("r0 shares b with r2")
  }

  /// A person on replica 2 accepts b's invitation as soon as it is there (while b is
  /// shared with it).
  mutating func acceptInvitations() throws {
    guard bShared, try replicas[2].store.invitations().contains(where: { $0.notebook == b }) else { return }
    _ = try replicas[2].store.acceptInvitation(b.rawValue, now: 11)
    log.append("r2 accepts b")
  }

  /// The hostile replica signs an op of its choosing into its own copy of a log (or makes a
  /// log of b's id of its own, with a legacy genesis) and syncs with an honest replica,
  /// which must keep every such op aside and go on.
  mutating func hostileActs() throws {
    let hostile = replicas[Self.hostile]
    let target = random.below(4)
    let members = [0, 1, 2].map { replicas[$0].device }
    let box = [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: MembershipLimits.sealedKeyBytes)
    let keyID = [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: MembershipLimits.keyIDBytes)
    let choice = random.below(8)
    let notebook = choice == 7 ? b : a
    var description = ""
    _ = try hostile.store.batch {
      if choice == 7, try hostile.store.notebook(b) == nil {
        // b's id is not derived from the hostile device: only a legacy genesis can name it,
        // which no honest replica takes from a device that was not a member before.
        try hostile.store.insertNotebook(b, name: "b", role: .member, now: 30)
        try hostile.store.appendOwnOp(b, now: 30) { _, signer in try MembershipLog.legacyGenesis(of: b, signer: signer)
        }
      }
      try hostile.store.appendOwnOp(notebook, now: 30) { log, signer in
        switch choice {
        case 0:
          description = "shares itself as a member of a"
          return try log.share(hostile.device, as: .member, signer: signer)
        case 1:
          description = "unshares a member of a"
          return try log.unshare(members[self.random.below(3)], cut: [], signer: signer)
        case 2:
          description = "makes a key of a for itself"
          return try log.rotateKey(keyID: keyID, sealed: [hostile.device: box], signer: signer)
        case 3:
          description = "grants itself a key of a"
          return try log.grant(hostile.device, keys: [keyID: box], signer: signer)
        case 4:
          description = "renames a"
          return try log.rename(keyID: keyID, sealedName: box, signer: signer)
        case 5:
          description = "signs a retired purge op in a"
          var op = NotebookOp(
            notebook: log.notebook, author: signer.publicKey, parents: log.heads, body: .retiredPurge(memo: MemoID()))
          op.signature = try signer.signature(for: op.signedMessage)
          return op
        case 6:
          description = "shares a with a relay of its own choosing"
          return try log.share(members[self.random.below(3)], as: .relay, signer: signer)
        default:
          description = "shares its own b with r\(target)"
          return try log.share(replicas[target].device, as: .member, signer: signer)
        }
      }
    }
    let report = try runSync(hostile.store, as: hostile.device, with: replicas[target].node.answerer, batch: 3).report()
    hostileRefused += report.sent.quarantined
    let refused = try replicas[target].store.quarantined().filter { $0.peer == hostile.device }.reduce(0) {
      $0 + $1.count
    }
    hostileRefused = max(hostileRefused, refused)
    log.append("the hostile replica \(description) and syncs with r\(target)")
  }

  /// Replica 0 unshares b from replica 2: the key rotates; the others learn it at their
  /// next sync with replica 0, or with a device that did.
  mutating func unshare() throws {
    guard bShared else { return }
    cutOfR2 = try replicas[0].store.horizon(of: b)[replicas[2].store.replicaID]
    _ = try replicas[0].store.unshare(b, from: replicas[2].device, now: 20)
    unshareSeq = try replicas[0].store.knowledge()[replicas[0].store.replicaID]
    bShared = false
    // What replica 2 writes from now on may or may not reach the others: no edit of its
    // in b is required to survive.
    log.append("r0 unshares b from r2 (its sequence: \(unshareSeq ?? 0))")
  }

  mutating func syncRandom(from index: Int) throws {
    let other = (index + 1 + random.below(3)) % 4
    let cut = random.below(4) == 0 ? 1 + random.below(3) : nil
    let before = try memoIDs(of: index)
    try sync(index, with: other, cut: cut.map { cutAfter(batches: $0, fromAsker: random.below(2) == 0) })
    try acceptInvitations()
    if other == Self.relay && index != Self.relay {
      relayedOnly += try memoIDs(of: index).subtracting(before).count
    }
    if cut != nil { cuts += 1 }
    log.append("r\(index) syncs with r\(other)\(cut.map { " (cut after \($0) batches)" } ?? "")")
  }

  func memoIDs(of replica: Int) throws -> Set<MemoID> { Set(try replicas[replica].store.allHeadRows().map(\.id)) }

  /// `asker` syncs with `answerer` in batches of three; a sync that is not cut must succeed.
  func sync(_ asker: Int, with answerer: Int, cut: LinkFaults? = nil) throws {
    let run = runSync(
      replicas[asker].store, as: replicas[asker].device, with: replicas[answerer].node.answerer, batch: 3,
      faults: cut ?? LinkFaults())
    guard cut == nil else { return }
    do {
      _ = try run.report()
      try run.answerer.get()
    } catch {
      throw ModelError("r\(asker) syncing with r\(answerer): \(error); the answerer: \(run.answerer)")
    }
  }

  /// Every pair, both ways, three rounds: through the relay or directly, whatever is
  /// shared reaches every member.
  mutating func settle() throws {
    for _ in 0..<3 {
      for asker in 0..<4 {
        for answerer in 0..<4 where answerer != asker {
          try sync(asker, with: answerer)
          try acceptInvitations()
        }
      }
    }
    conflicts = try replicas[0].store.allHeadRows().filter { $0.conflictOf != nil && !$0.isDeleted }.count
  }

  /// The memos of b that a member holds a revision of by replica 2 beyond the unshare's cut:
  /// replica 2 made it before it learned it was removed, and a member that received it
  /// before it learned of the unshare keeps it (it cannot tell), while the others refuse it
  /// (docs/PROTOCOL.md, "What the checks do not cover"). Such a memo may differ between
  /// members until one of them edits it; every other memo must be the same everywhere.
  func raced() throws -> Set<MemoID> {
    guard unshareSeq != nil else { return [] }
    let origin = replicas[2].store.replicaID
    var memos: Set<MemoID> = []
    for member in [0, 1, Self.relay] {
      for row in try replicas[member].store.allHeadRows() where row.notebook == b {
        if let dot = row.dot, dot.origin == origin, dot.seq > cutOfR2 { memos.insert(row.conflictOf ?? row.id) }
      }
    }
    let relayed = try replicas[Self.relay].store.db.prepare(
      "SELECT memo FROM relayed WHERE notebook = ? AND dot_origin = ? AND dot_seq > ?")
    try relayed.bind([.text(b.rawValue), .text(origin.rawValue), .integer(Int64(cutOfR2))])
    while try relayed.step() { if let memo = MemoID(canonical: relayed.text(0)) { memos.insert(memo) } }
    return memos
  }

  /// A replica's rows of one notebook, in a form two replicas' rows compare in.
  func rows(_ replica: Int, in notebook: NotebookID) throws -> [String] {
    let raced = notebook == b ? try self.raced() : []
    return try replicas[replica].store.allHeadRows().filter {
      $0.notebook == notebook && !raced.contains($0.conflictOf ?? $0.id)
    }.map {
      "\($0.id) rev \($0.revision) dot \($0.dot.map(String.init(describing:)) ?? "-") "
        + "del \($0.isDeleted) copy-of \($0.conflictOf?.short ?? "-") \($0.body)|\($0.isPrivate)"
    }
  }

  /// Whatever the hostile replica signed: it holds no key an honest member holds and no
  /// readable record of b (not a member of either), every honest device and the relay
  /// agree on each log's meaning, and none of them counts the hostile replica as a member.
  func checkTheHostileReplica() throws {
    let hostile = replicas[Self.hostile].store
    for notebook in [a, b] {
      let honestKeys = Set(try replicas[0].store.keyring(notebook).keys.keys)
      let read = try hostile.db.prepare("SELECT key_id FROM notebook_keys WHERE notebook = ?")
      try read.bind(1, notebook.rawValue)
      while try read.step() {
        guard !honestKeys.contains(read.text(0)) else {
          throw ModelError("the hostile replica holds a key of \(notebook == a ? "a" : "b")")
        }
      }
      let holders = notebook == a ? [0, 1, 2, Self.relay] : (bShared ? [0, 1, 2, Self.relay] : [0, 1, Self.relay])
      let state = try replicas[holders[0]].store.membershipState(notebook)
      for holder in holders.dropFirst() where try replicas[holder].store.membershipState(notebook) != state {
        throw ModelError("r\(holder) and r\(holders[0]) disagree on \(notebook == a ? "a" : "b")'s log")
      }
      if state?.members[replicas[Self.hostile].device] == .member {
        throw ModelError("the hostile replica counts as a member of \(notebook == a ? "a" : "b")")
      }
    }
    let honest = Set((0..<4).map { replicas[$0].store.replicaID.rawValue })
    let rows = try hostile.allHeadRows().filter { $0.notebook == b && honest.contains($0.dot?.origin.rawValue ?? "") }
    let relayed = try hostile.db.scalarInt("SELECT count(*) FROM relayed WHERE notebook = '\(b)'")
    if !rows.isEmpty || relayed > 0 { throw ModelError("the hostile replica holds records of b") }
  }

  /// The relay's records of a notebook, as (memo, dot); and the members' heads the same way.
  func relayedHeads(in notebook: NotebookID) throws -> Set<String> {
    let raced = notebook == b ? try self.raced() : []
    let db = replicas[Self.relay].store.db
    let query = try db.prepare("SELECT memo, dot_origin, dot_seq FROM relayed WHERE notebook = ?")
    try query.bind(1, notebook.rawValue)
    var heads: Set<String> = []
    while try query.step() {
      guard MemoID(canonical: query.text(0)).map({ !raced.contains($0) }) ?? true else { continue }
      heads.insert("\(query.text(0)) \(query.text(1)):\(query.int64(2))")
    }
    return heads
  }

  func memberHeads(_ replica: Int, in notebook: NotebookID) throws -> Set<String> {
    let raced = notebook == b ? try self.raced() : []
    return Set(
      try replicas[replica].store.allHeadRows().filter {
        $0.notebook == notebook && !raced.contains($0.conflictOf ?? $0.id)
      }.compactMap { row in
        row.dot.map { "\(row.conflictOf ?? row.id) \($0.origin):\($0.seq)" }
      })
  }

  func check() throws {
    let relay = replicas[Self.relay].store
    guard try relay.db.scalarInt("SELECT count(*) FROM notebook_keys WHERE notebook IN ('\(a)', '\(b)')") == 0,
      try relay.db.scalarInt("SELECT count(*) FROM memos") == 0
    else { throw ModelError("the relay holds a key or a memo") }
    try checkTheHostileReplica()
    for (notebook, members) in [(a, [0, 1, 2]), (b, bShared ? [0, 1, 2] : [0, 1])] {
      let first = try rows(members[0], in: notebook)
      for member in members.dropFirst() where try rows(member, in: notebook) != first {
        throw ModelError(
          "members r\(members[0]) and r\(member) differ in \(notebook == a ? "a" : "b"):\n  "
            + first.joined(separator: "\n  ") + "\n vs\n  " + (try rows(member, in: notebook)).joined(separator: "\n  ")
        )
      }
      guard try relayedHeads(in: notebook) == memberHeads(members[0], in: notebook) else {
        throw ModelError("the relay's records of \(notebook == a ? "a" : "b") are not the members' heads")
      }
      // No edit a member made (and nobody replaced) is lost.
      let visible = Set(
        try replicas[members[0]].store.allHeadRows().filter { !$0.isDeleted && $0.notebook == notebook }.map(\.body))
      let lost = (written[notebook] ?? []).subtracting(replaced).subtracting(visible).filter {
        // Replica 2's writes in b after it lost b need not reach anyone.
        !(notebook == b && !bShared && $0.hasPrefix("edit-2-"))
      }
      if !lost.isEmpty { throw ModelError("edits lost in \(notebook == a ? "a" : "b"): \(lost.sorted())") }
    }
    let r2 = try replicas[2].store.allHeadRows().filter { $0.notebook == b }
    if !bEverShared, !r2.isEmpty { throw ModelError("replica 2 holds b, which was never shared with it") }
    if let unshareSeq {
      let origin = replicas[0].store.replicaID
      if let leaked = r2.first(where: { $0.dot?.origin == origin && ($0.dot?.seq ?? 0) > unshareSeq }) {
        throw ModelError("replica 2 holds \(leaked.id.short), written by replica 0 after the unshare")
      }
    }
  }
}

import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// Issue 38's member and relay tricks over random runs, between real stores through the
/// production `SyncSession`: honest members 0, 1 and 2 and an honest relay 3 share notebooks
/// a and b; a hostile member (4) is a member of b only, and a hostile relay (5) relays a and
/// is a member of b (so it holds a's memo ids and clocks). While the honest members create,
/// edit, delete and purge, and all four sync, at random, the hostile two now and then:
///
/// - flood a first fill: their first sync of b with an honest device brings more new memos
///   than the small bound set in its config.json (`quotas.first_fill_memos`), after a squat
///   (below) when a member's replica is not bound there yet;
/// - purge across notebooks: sign a purge naming b with the id of a memo of a (carried by
///   the hello of a real sync of their own store);
/// - squat a replica: send a legacy binding of an honest member's replica to their own key,
///   with a record under it, preferably one the target has not bound yet (that member's
///   records have not reached it);
/// - flood history: push many signed edits of an honest memo of b, beyond the small
///   per-memo history limit (`history.revisions`);
/// - or sync correctly, as the hostile device's own store would.
///
/// Afterwards, once every honest pair has synced a few times: the honest members hold the
/// same rows of each notebook and the relay holds exactly their heads; every memo an honest
/// device wrote (and no honest device deleted or purged) is on every member; each honest
/// device's own revisions of each memo are all still there up to the limit (in its history,
/// as its head, or as a conflict copy); nothing is kept aside naming an honest peer but a
/// hostile purge an honest device could not check and passed on; and nothing planted under
/// an honest replica is anywhere. Each kind of abuse by each hostile device must have reached
/// an honest replica and been refused (or, for the history flood, applied) in the runs.
///
/// A failure prints its seed: `MEMO_PEER_ABUSE_MODEL_SEED` replays one run,
/// `MEMO_PEER_ABUSE_MODEL_RUNS` changes the count. 40 runs (`make model`); 6 under
/// `MEMO_PEER_MODEL_RUNS=small` (`make check`).
final class MemberAbuseModelTests: XCTestCase {
  func testHonestMembersConvergeAndLoseNothingToAHostileMemberOrRelay() throws {
    let seeds = try ModelSeeds.seeds("MEMO_PEER_ABUSE_MODEL", full: 40, small: 6)
    var tally: [String: Int] = [:]
    for seed in seeds {
      var run = try AbuseRun(seed: seed)
      do {
        try run.play(steps: 40)
        try run.settle()
        try run.check()
      } catch {
        XCTFail("seed \(seed): \(error)\n\(run.log.joined(separator: "\n"))")
        return
      }
      tally.merge(run.tally) { $0 + $1 }
    }
    print(
      "member abuse model: \(seeds.count) runs; "
        + tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        + "; all converged")
    // The runs must reach what the test is for: every abuse by each hostile device reached
    // an honest replica.
    for who in ["member", "relay"] {
      for what in [
        "first fill refused", "purge across refused", "squat refused", "history flood applied",
      ] {
        XCTAssertGreaterThan(tally["\(who) \(what)", default: 0], 0, "the hostile \(who): \(what)")
      }
    }
  }
}

/// One run: replicas 0, 1, 2 are honest members of a and b, 3 their honest relay; 4 is a
/// hostile member of b, 5 a hostile relay of a and member of b.
struct AbuseRun {
  static let honest = [0, 1, 2, 3]
  static let members = [0, 1, 2]
  static let relay = 3
  static let hostileMember = 4
  static let hostileRelay = 5
  /// The honest devices' per-memo history limit and first-fill bound (their config.json).
  static let historyLimit = 3
  static let firstFill = 4

  var random: SeededRandom
  let replicas: [ModelReplica]
  let a: NotebookID
  let b: NotebookID
  /// The hostile devices' own keys, to sign what they script, and b as they seal it.
  let authors: [Int: TestAuthor]
  let sealing: [Int: ScriptedSyncPeer.Notebook]
  var log: [String] = []
  /// How often each hostile device's abuse reached an honest replica, by kind.
  var tally: [String: Int] = [:]
  /// Every memo an honest device created or edited, with its notebook.
  var written: [MemoID: NotebookID] = [:]
  /// Memos an honest device deleted or purged: those need not stay.
  var removed: Set<MemoID> = []
  /// The dots each honest member wrote, per memo.
  var own: [Int: [MemoID: [Dot]]] = [:]
  /// The purges the hostile devices signed, as sent: an honest device that does not hold the
  /// memo cannot check one and passes it on, so another may keep it aside naming that peer.
  var hostilePurges: Set<[UInt8]> = []
  /// The bodies of records planted under honest replicas.
  var planted: Set<String> = []
  /// Each scripted action writes under a replica of its own (derived from the hostile
  /// device's key), so each replica's dots reach a receiver in order.
  var replicaIndex = 0
  var counter = 0

  init(seed: UInt64) throws {
    random = SeededRandom(state: seed)
    replicas = try (0..<6).map { _ in try ModelReplica() }
    // Small bounds on the honest devices, for every connection to their stores.
    let config =
      #"{"history": {"revisions": \#(Self.historyLimit)}, "quotas": {"first_fill_memos": \#(Self.firstFill)}}"#
    for index in Self.honest {
      let paths = replicas[index].node.paths
      try FileManager.default.createDirectory(
        atPath: paths.configDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      try PrivateFiles.writeAtomically(Array(config.utf8), to: NodeConfig.path(paths))
      replicas[index].store.setHistoryLimits(try NodeConfig.load(paths: paths).history)
    }
    let devices = replicas.map { ($0.store, $0.device) }
    a = try replicas[0].store.defaultNotebook().id
    try shareNotebook(
      a, among: [devices[0], devices[1], devices[2], devices[3], devices[5]],
      roles: [.member, .member, .member, .relay, .relay])
    b = try replicas[0].store.createNotebook(named: "b", now: 1).id
    try shareNotebook(b, among: devices, roles: [.member, .member, .member, .relay, .member, .member])
    // Every honest pair syncs once while the notebooks are empty: no honest sync is a first
    // fill later, so the small bound holds back only the hostile devices.
    for asker in Self.honest {
      for answerer in Self.honest where answerer != asker { try Self.sync(replicas, asker, with: answerer) }
    }
    for receiver in Self.honest {
      for sender in Self.honest where sender != receiver {
        for notebook in [a, b]
        where try replicas[receiver].store.syncCursor(for: replicas[sender].device, in: notebook) == nil {
          throw ModelError("r\(receiver) has no cursor of r\(sender) after the setup")
        }
      }
    }
    var authors: [Int: TestAuthor] = [:]
    var sealing: [Int: ScriptedSyncPeer.Notebook] = [:]
    for hostile in [Self.hostileMember, Self.hostileRelay] {
      let author = TestAuthor(key: try replicas[hostile].store.signer())
      guard author.device == replicas[hostile].device else { throw ModelError("r\(hostile)'s key is not its device") }
      let notebook = try ScriptedSyncPeer.Notebook.shared(
        by: replicas[hostile].store, with: replicas[0].device, author: author)
      guard notebook.id == b else { throw ModelError("r\(hostile) seals in a notebook other than b") }
      authors[hostile] = author
      sealing[hostile] = notebook
    }
    self.authors = authors
    self.sealing = sealing
  }

  mutating func play(steps: Int) throws {
    for _ in 0..<steps {
      if random.below(2) == 0 { try hostileActs(random.below(2) == 0 ? Self.hostileMember : Self.hostileRelay) }
      let index = random.below(4)
      if index == Self.relay || random.below(10) >= 6 {
        let other = (index + 1 + random.below(3)) % 4
        try Self.sync(replicas, index, with: other)
        log.append("r\(index) syncs with r\(other)")
        continue
      }
      try honestWrite(index)
    }
  }

  // MARK: - The honest devices

  mutating func honestWrite(_ index: Int) throws {
    let store = replicas[index].store
    let originals = try store.allHeadRows().filter {
      !$0.isDeleted && $0.conflictOf == nil && ($0.notebook == a || $0.notebook == b)
    }
    let choice = random.below(12)
    guard choice >= 4, !originals.isEmpty else {
      let notebook = random.below(2) == 0 ? a : b
      let memo = try store.create(MemoDraft(title: "t", body: token(index)), now: 1, in: notebook)
      try wrote(index, memo.id, in: notebook)
      log.append("r\(index) creates \(memo.id.short) in \(name(notebook))")
      return
    }
    let memo = originals[random.below(originals.count)]
    switch choice {
    case 10:
      // A memo with a conflict copy open is not deleted (a person resolves it first).
      do { try store.delete(memo.id, now: 3) } catch let error as MemoPeerError where error.code == .conflict {
        return
      }
      removed.insert(memo.id)
      log.append("r\(index) deletes \(memo.id.short)")
    case 11:
      guard random.below(2) == 0 else { return }
      try store.purge(memo.id, now: 4)
      removed.insert(memo.id)
      log.append("r\(index) purges \(memo.id.short) of \(memo.notebook == a ? "a" : "b")")
    default:
      do {
        try store.update(memo.id, MemoChange(body: token(index)), now: 2)
      } catch let error as MemoPeerError where error.code == .conflict {
        return
      }
      try wrote(index, memo.id, in: memo.notebook!)
      log.append("r\(index) edits \(memo.id.short)")
    }
  }

  mutating func wrote(_ index: Int, _ memo: MemoID, in notebook: NotebookID) throws {
    written[memo] = notebook
    guard let dot = try replicas[index].store.memo(memo).dot else { throw ModelError("r\(index)'s write has no dot") }
    own[index, default: [:]][memo, default: []].append(dot)
  }

  mutating func token(_ replica: Int) -> String {
    counter += 1
    return "edit-\(replica)-\(counter)"
  }

  func name(_ notebook: NotebookID) -> String { notebook == a ? "a" : notebook == b ? "b" : notebook.short }

  /// `asker` syncs with `answerer` in batches of three; both sides must succeed.
  static func sync(_ replicas: [ModelReplica], _ asker: Int, with answerer: Int) throws {
    let run = runSync(
      replicas[asker].store, as: replicas[asker].device, with: replicas[answerer].node.answerer, batch: 3)
    do {
      _ = try run.report()
      try run.answerer.get()
    } catch {
      throw ModelError("r\(asker) syncing with r\(answerer): \(error); the answerer: \(run.answerer)")
    }
  }

  // MARK: - The hostile devices

  /// Hostile device `hostile` acts against a random honest device: its first contact with
  /// it (no cursor of it in b there yet) is always a first-fill flood.
  mutating func hostileActs(_ hostile: Int) throws {
    let who = hostile == Self.hostileMember ? "member" : "relay"
    let target = random.below(4)
    if try replicas[target].store.syncCursor(for: replicas[hostile].device, in: b) == nil {
      return try floodFirstFill(hostile, target: target, who: who)
    }
    switch random.below(7) {
    case 0, 1: try purgeAcross(hostile, target: target, who: who)
    case 2, 3: try squat(hostile, target: target, who: who)
    case 4, 5:
      // A relay cannot read b: its history is a member's.
      if target == Self.relay {
        try squat(hostile, target: target, who: who)
      } else {
        try floodHistory(hostile, target: target, who: who)
      }
    default:
      let outcome = syncAsItself(hostile, with: target)
      log.append("hostile \(who) syncs with r\(target): \(outcome)")
    }
  }

  /// A sync of the hostile device's own store with `target`, as its asker (its hello carries
  /// the purges it keeps). Its outcome only: the target may refuse it (a relay's first fill
  /// of a, say), which is its business.
  func syncAsItself(_ hostile: Int, with target: Int) -> String {
    let run = runSync(
      replicas[hostile].store, as: replicas[hostile].device, with: replicas[target].node.answerer, batch: 3)
    switch run.asker {
    case .success(let report): return "sent \(report.sent.applied), kept aside \(report.sent.quarantined)"
    case .failure(let error): return "\(error)"
    }
  }

  /// A fresh replica of the hostile device's, derived from its key.
  mutating func freshReplica(_ hostile: Int) -> ReplicaID {
    replicaIndex += 1
    return authors[hostile]!.replica(replicaIndex)
  }

  /// The hostile device asks `target` with `frames` as its direction in b; how it answered.
  func ask(_ hostile: Int, _ target: Int, frames: [Frame]) throws -> ScriptedSyncPeer.Answer {
    let notebook = sealing[hostile]!
    let hello = ScriptedSyncPeer.hello(replica: authors[hostile]!.replica(0), notebook: notebook)
    let answerer = replicas[target].node.answerer
    return try InMemorySession.run(
      firstID: replicas[hostile].device, secondID: answerer.device,
      first: { channel in try ScriptedSyncPeer.ask(over: channel, hello: hello, notebook: notebook) { _ in frames } },
      second: { channel in try answerer.answer(channel, batch: SyncSession.BatchLimits(revisions: 3)) }
    ).first.get()
  }

  func fresh(_ body: String, dot: Dot) -> SyncRevision {
    SyncRevision(
      memo: MemoID(),
      head: HeadSummary(dot: dot, clock: VersionVector([dot.origin: dot.seq]), revision: 1, isDeleted: false),
      created: 5, updated: 5, isPrivate: false, title: "from a hostile device", body: body, tags: [])
  }

  /// Three times the bound of new memos in b, in batches of three, in the hostile device's
  /// first sync of b with `target`: refused once over the bound.
  mutating func floodFirstFill(_ hostile: Int, target: Int, who: String) throws {
    let notebook = sealing[hostile]!
    let replica = freshReplica(hostile)
    let count = 3 * Self.firstFill
    let memos = (1...count).map { fresh("flood-\(who)-\($0)", dot: Dot(origin: replica, seq: UInt64($0))) }
    // A first contact is when most honest replicas are not bound there yet: a squat first.
    let squat = try squatBatch(hostile, target: target, who: who, position: 0)
    var frames = squat.map { [$0.frame] } ?? []
    for start in stride(from: 0, to: count, by: 3) {
      frames.append(ScriptedSyncPeer.batch(Array(memos[start..<start + 3]), position: UInt64(start + 3), in: notebook))
    }
    frames.append(ScriptedSyncPeer.done(position: UInt64(count), knowledge: [:], in: notebook))
    let before = try squatsKeptAside(target, from: hostile)
    let answer = try ask(hostile, target, frames: frames)
    switch answer {
    case .refused(.overQuota?): tally["\(who) first fill refused", default: 0] += 1
    case .acknowledged: break
    default: throw ModelError("r\(target) answered the hostile \(who)'s first fill with \(answer)")
    }
    // What the target took of the flood: the bound at most.
    let taken =
      target == Self.relay
      ? Int(
        try replicas[target].store.db.scalarInt("SELECT count(*) FROM relayed WHERE dot_origin = '\(replica.rawValue)'")
      )
      : try replicas[target].store.allHeadRows().filter { $0.dot?.origin == replica }.count
    guard taken <= Self.firstFill else {
      throw ModelError("r\(target) took \(taken) memos of the hostile \(who)'s first fill, over its bound")
    }
    if let squat, squat.unbound, try squatsKeptAside(target, from: hostile) > before {
      tally["\(who) squat refused", default: 0] += 1
    }
    log.append(
      "hostile \(who) floods its first fill of b with r\(target) (\(count) memos"
        + (squat.map { ", after squatting r\($0.victim)'s replica" } ?? "") + "): \(answer)")
  }

  /// A purge naming b, signed by the hostile device, of a memo of a: the relay takes one of
  /// those it relays, the member one of the target's (ids travel in clear).
  mutating func purgeAcross(_ hostile: Int, target: Int, who: String) throws {
    var ids = try memoIDs(target, in: a)
    if hostile == Self.hostileRelay {
      // What it relays, learned from the owner when it holds nothing of a yet.
      if try relayed(hostile, in: a).isEmpty {
        log.append("hostile \(who) syncs with r0: \(syncAsItself(hostile, with: 0))")
      }
      let known = try relayed(hostile, in: a)
      let both = ids.filter(known.contains)
      ids = both.isEmpty ? known : both
    }
    guard !ids.isEmpty else {
      log.append("hostile \(who) syncs with r\(target): \(syncAsItself(hostile, with: target))")
      return
    }
    let memo = ids[random.below(ids.count)]
    let store = replicas[hostile].store
    let signer = try store.signer()
    var purge = Purge(authorKey: signer.publicKey, notebook: b, memo: memo, made: 20, signature: [])
    purge.signature = try signer.signature(for: purge.signedMessage)
    let bytes = purge.encoded
    hostilePurges.insert(bytes)
    // Kept as the hostile device's own: its hellos carry it to every device it shares b with.
    let insert = try store.db.prepare(
      "INSERT OR IGNORE INTO purges (id, notebook, memo, author, made, bytes, received, via) "
        + "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)")
    try insert.bind([
      .text(Hex.encode(try SHA256.hash(bytes))), .text(b.rawValue), .text(memo.rawValue),
      .device(replicas[hostile].device), .integer(20), .blob(bytes), .integer(20),
    ])
    _ = try insert.step()
    let holds = try holds(target, memo)
    let before = try purgesKeptAside(target, from: hostile)
    let outcome = syncAsItself(hostile, with: target)
    let refused = try purgesKeptAside(target, from: hostile) - before
    if holds && refused > 0 { tally["\(who) purge across refused", default: 0] += 1 }
    log.append(
      "hostile \(who) purges \(memo.short) of a as b's with r\(target) (which holds it: \(holds); kept aside "
        + "\(refused)): \(outcome)")
  }

  /// A batch at `position` with a legacy binding of an honest member's replica to the
  /// hostile device's key and a memo under it: of a member whose records have not reached
  /// the target when there is one (`unbound`), else of any. Nil: the target has none but
  /// bound ones and `position` is 0 (a squat in front of a first fill only when it counts).
  mutating func squatBatch(_ hostile: Int, target: Int, who: String, position: UInt64) throws -> (
    frame: Frame, victim: Int, unbound: Bool
  )? {
    let store = replicas[target].store
    let victims = Self.members.filter { $0 != target }
    let unbound = try victims.filter { try store.boundDevice(of: replicas[$0].store.replicaID) == nil }
    guard !unbound.isEmpty || position > 0 else { return nil }
    let pool = unbound.isEmpty ? victims : unbound
    let victim = pool[random.below(pool.count)]
    let replica = replicas[victim].store.replicaID
    let seq = try store.knowledge(of: b)[replica] + 1
    counter += 1
    let body = "planted-\(who)-\(counter)"
    planted.insert(body)
    let frame = ScriptedSyncPeer.batch(
      [fresh(body, dot: Dot(origin: replica, seq: seq))], position: position, in: sealing[hostile]!)
    return (frame, victim, !unbound.isEmpty)
  }

  /// A squat on its own: the batch, then `sync-done`.
  mutating func squat(_ hostile: Int, target: Int, who: String) throws {
    guard let squat = try squatBatch(hostile, target: target, who: who, position: 1) else { return }
    let before = try squatsKeptAside(target, from: hostile)
    let answer = try ask(
      hostile, target, frames: [squat.frame, ScriptedSyncPeer.done(position: 1, knowledge: [:], in: sealing[hostile]!)])
    guard case .acknowledged = answer else {
      throw ModelError("r\(target) answered the hostile \(who)'s squat with \(answer)")
    }
    if squat.unbound, try squatsKeptAside(target, from: hostile) > before {
      tally["\(who) squat refused", default: 0] += 1
    }
    log.append(
      "hostile \(who) squats r\(squat.victim)'s replica on r\(target) (bound there: \(!squat.unbound)): \(answer)")
  }

  /// Three times the limit and more of signed edits of one honest memo of b, each after the
  /// one before, under a fresh replica of the hostile device's, one to a batch.
  mutating func floodHistory(_ hostile: Int, target: Int, who: String) throws {
    let store = replicas[target].store
    let candidates = try store.allHeadRows().filter {
      $0.notebook == b && !$0.isDeleted && $0.conflictOf == nil && written[$0.id] != nil
    }
    guard !candidates.isEmpty else { return try squat(hostile, target: target, who: who) }
    let memo = candidates[random.below(candidates.count)]
    let notebook = sealing[hostile]!
    let replica = freshReplica(hostile)
    let count = 3 * Self.historyLimit + 2
    var clock = memo.clock
    var frames: [Frame] = []
    for index in 1...count {
      let dot = Dot(origin: replica, seq: UInt64(index))
      clock.add(dot)
      let revision = SyncRevision(
        memo: memo.id,
        head: HeadSummary(dot: dot, clock: clock, revision: memo.revision + Int64(index), isDeleted: false),
        created: memo.created, updated: memo.updated + Int64(index), isPrivate: memo.isPrivate, title: memo.title,
        body: "flooded-\(who)-\(index)", tags: memo.tags)
      frames.append(ScriptedSyncPeer.batch([revision], position: UInt64(index), in: notebook))
    }
    frames.append(ScriptedSyncPeer.done(position: UInt64(count), knowledge: [:], in: notebook))
    let answer = try ask(hostile, target, frames: frames)
    guard case .acknowledged(let ack) = answer else {
      throw ModelError("r\(target) answered the hostile \(who)'s history flood with \(answer)")
    }
    let applied = ack.outcome?.applied ?? 0
    tally["\(who) history flood applied", default: 0] += applied
    log.append("hostile \(who) floods \(memo.id.short)'s history on r\(target) with \(count) edits: applied \(applied)")
  }

  func memoIDs(_ replica: Int, in notebook: NotebookID) throws -> [MemoID] {
    if replica == Self.relay { return try relayed(replica, in: notebook) }
    return try replicas[replica].store.allHeadRows().filter { $0.notebook == notebook && $0.conflictOf == nil }.map(
      \.id)
  }

  /// The memo ids a relay (honest or not) holds sealed records of in `notebook`.
  func relayed(_ replica: Int, in notebook: NotebookID) throws -> [MemoID] {
    let read = try replicas[replica].store.db.prepare(
      "SELECT DISTINCT memo FROM relayed WHERE notebook = ? ORDER BY memo")
    try read.bind(1, notebook.rawValue)
    var ids: [MemoID] = []
    while try read.step() { if let id = MemoID(canonical: read.text(0)) { ids.append(id) } }
    return ids
  }

  func holds(_ replica: Int, _ memo: MemoID) throws -> Bool { try memoIDs(replica, in: a).contains(memo) }

  func squatsKeptAside(_ replica: Int, from hostile: Int) throws -> Int {
    try replicas[replica].store.quarantined().filter {
      $0.peer == replicas[hostile].device && $0.reason.hasSuffix("(a squat)")
    }.reduce(0) { $0 + $1.count }
  }

  func purgesKeptAside(_ replica: Int, from hostile: Int) throws -> Int {
    try replicas[replica].store.quarantined().filter {
      $0.peer == replicas[hostile].device && $0.reason.hasPrefix("a purge naming notebook")
    }.reduce(0) { $0 + $1.count }
  }

  // MARK: - The end

  /// Every honest pair, both ways, three rounds.
  mutating func settle() throws {
    for _ in 0..<3 {
      for asker in Self.honest {
        for answerer in Self.honest where answerer != asker { try Self.sync(replicas, asker, with: answerer) }
      }
    }
  }

  func rows(_ replica: Int, in notebook: NotebookID) throws -> [String] {
    try replicas[replica].store.allHeadRows().filter { $0.notebook == notebook }.map {
      "\($0.id) rev \($0.revision) dot \($0.dot.map(String.init(describing:)) ?? "-") "
        + "del \($0.isDeleted) copy-of \($0.conflictOf?.short ?? "-") \($0.body)|\($0.isPrivate)"
    }
  }

  func relayedHeads(in notebook: NotebookID) throws -> Set<String> {
    let query = try replicas[Self.relay].store.db.prepare(
      "SELECT memo, dot_origin, dot_seq FROM relayed WHERE notebook = ?")
    try query.bind(1, notebook.rawValue)
    var heads: Set<String> = []
    while try query.step() { heads.insert("\(query.text(0)) \(query.text(1)):\(query.int64(2))") }
    return heads
  }

  func memberHeads(_ replica: Int, in notebook: NotebookID) throws -> Set<String> {
    Set(
      try replicas[replica].store.allHeadRows().filter { $0.notebook == notebook }.compactMap { row in
        row.dot.map { "\(row.conflictOf ?? row.id) \($0.origin):\($0.seq)" }
      })
  }

  func check() throws {
    // The honest members converge, and the relay holds their heads.
    for notebook in [a, b] {
      let first = try rows(0, in: notebook)
      for member in Self.members.dropFirst() where try rows(member, in: notebook) != first {
        throw ModelError(
          "members r0 and r\(member) differ in \(name(notebook)):\n  " + first.joined(separator: "\n  ") + "\n vs\n  "
            + (try rows(member, in: notebook)).joined(separator: "\n  "))
      }
      guard try relayedHeads(in: notebook) == memberHeads(0, in: notebook) else {
        throw ModelError("the relay's records of \(name(notebook)) are not the members' heads")
      }
    }
    for member in Self.members {
      let store = replicas[member].store
      let heads = try store.allHeadRows()
      // Every memo an honest device wrote is here, unless an honest device removed it.
      for (memo, notebook) in written where !removed.contains(memo) {
        guard let row = heads.first(where: { $0.id == memo }), row.notebook == notebook, !row.isDeleted else {
          throw ModelError("r\(member) lost \(memo.short) of \(name(notebook)), which an honest device wrote")
        }
      }
      // Its own revisions of each memo, up to the limit: in the history, the head, or a copy.
      for (memo, dots) in own[member] ?? [:] where !removed.contains(memo) {
        var kept = Set(try store.history(of: memo).compactMap(\.memo.dot))
        kept.formUnion(heads.filter { $0.conflictOf == memo }.compactMap(\.dot))
        let mine = dots.filter(kept.contains).count
        guard mine >= min(Self.historyLimit, dots.count) else {
          throw ModelError(
            "r\(member) keeps \(mine) of its \(dots.count) revisions of \(memo.short) (limit \(Self.historyLimit))")
        }
      }
      if let found = heads.first(where: { planted.contains($0.body) }) {
        throw ModelError("r\(member) holds \(found.id.short), planted under an honest replica")
      }
    }
    // Nothing is kept aside naming an honest peer, but a hostile purge passed on.
    let hostile: Set<DeviceID> = [replicas[Self.hostileMember].device, replicas[Self.hostileRelay].device]
    for index in Self.honest {
      let read = try replicas[index].store.db.prepare("SELECT peer, reason, item FROM quarantine")
      while try read.step() {
        guard let peer = read.device(0), !hostile.contains(peer), !hostilePurges.contains(read.blob(2)) else {
          continue
        }
        throw ModelError("r\(index) kept aside what honest \(peer.short) sent: \(read.text(1))")
      }
    }
  }
}

import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
@_spi(Testing) import MemoStore

/// A trusted device that misbehaves on purpose, for tests (MemoNodeTests, the sync model's
/// hostile replica, and the lab's `memo-peer-hostile`): it speaks the sync protocol as
/// correctly as needed to reach the step under test, then sends exactly the frames it is
/// given, and reports how the other side answered. Never product code.
public enum ScriptedSyncPeer {
  /// How the other side answered the scripted frames.
  public enum Answer: Equatable, Sendable {
    /// `sync-refuse` with this reason (nil: one this version does not know, or none).
    case refused(SyncMessage.RefuseReason?)
    /// The acknowledgement of the last frame (the one after `sync-done` carries the outcome).
    case acknowledged(SyncMessage.Ack)
    /// The other side closed the channel without a word.
    case closed
  }

  /// What the answerer said and sent before the scripted part.
  public struct Answerer: Sendable {
    public var hello: SyncMessage.Hello
    /// The membership ops it sent (its `sync-ops`).
    public var ops: [SyncOps.Notebook] = []
    /// Every revision it sent (its heads the asker lacked) that the scripted peer's
    /// notebook opens, to build on.
    public var revisions: [SyncRevision]
    public var donePosition: UInt64
  }

  /// The notebook the scripted peer syncs in, as a member that holds its current key (sync
  /// version 2 moves records sealed per notebook): what it sends is sealed with this key,
  /// so the receiver opens it and applies every check to what is inside.
  public struct Notebook: Sendable {
    public var id: NotebookID
    public var keyID: String
    /// The raw key (a test's copy, not locked memory: never product code).
    let key: [UInt8]
    /// Who signs what the scripted peer sends: a member of the notebook.
    public let author: TestAuthor

    func sealer() -> AES256GCMKey? { try? AES256GCMKey(SecureBytes(copying: key)) }

    /// The notebook `store` shares with `peer` (its log has both in it), with its current key,
    /// and `author` made a member of it by `store` (an op `store` signs): the records the
    /// scripted peer sends are signed by `author`, so they pass the authorship checks (a
    /// member wrote them) and every other check applies to what is inside.
    public static func shared(by store: MemoStore, with peer: DeviceID, author: TestAuthor = .shared) throws -> Notebook
    {
      for membership in try store.memberships(of: peer) where membership.role != .removed {
        guard let (keyID, key) = try store.currentNotebookKeyForTesting(membership.notebook) else { continue }
        // A store's own device is a member already (`memo-peer-hostile` signs as itself).
        if author.device != (try store.deviceID()) {
          try store.share(membership.notebook, with: author.device, as: .member, now: 1)
        }
        return Notebook(id: membership.notebook, keyID: keyID, key: key, author: author)
      }
      throw MemoPeerError(.notFound, "the store shares no notebook with a key with \(peer)")
    }

    /// `revision` as a record of this notebook, sealed as a member seals it (whatever its
    /// fields hold: the receiver's checks are under test).
    public func seal(_ revision: SyncRevision) -> SyncRecord {
      var record = SyncRecord(
        notebook: id, memo: revision.memo, dot: revision.head.dot, clock: revision.head.clock, keyID: keyID,
        sealed: [])
      record.sealed = (try? sealer()?.seal(RecordContent.encode(revision), associatedData: record.associatedData)) ?? []
      return author.sign(record)
    }

    /// The revision a record of this notebook carries; nil when it does not open.
    public func open(_ record: SyncRecord) -> SyncRevision? {
      guard record.notebook == id, record.keyID == keyID,
        let sealer = sealer(), let content = try? sealer.open(record.sealed, associatedData: record.associatedData)
      else { return nil }
      return RecordContent.decode(content, of: record)
    }

    /// This notebook as a `sync-hello` lists it (no heads: the scripted peer asks for every
    /// op, and sends none).
    var entry: NotebookEntry { NotebookEntry(id: id, heads: [], held: true, knowledge: VersionVector()) }
  }

  /// The asker's side: sends `hello` (a raw payload, so it may be anything), then, if the
  /// answerer answers with its own hello, acknowledges its batches and `sync-done` as a
  /// correct asker would, and sends `script(answerer)`'s frames one at a time, reading the
  /// answer to each batch or `sync-done`. Returns the first refusal, the last
  /// acknowledgement, or `closed`.
  public static func ask(
    over channel: any FrameChannel, hello: [UInt8], notebook: Notebook? = nil, script: (Answerer) -> [Frame]
  ) throws(TransportError) -> Answer {
    try channel.send(Frame(.syncHello, payload: hello))
    guard let first = try channel.receive() else { return .closed }
    guard first.kind == .syncHello, let answererHello = PeerMessage.decode(SyncMessage.Hello.self, from: first.payload)
    else { return .refused(SyncMessage.decodeRefuse(first.payload)) }
    // Version 3: the answerer's ops come next, and the asker answers with its own (none).
    guard let ops = try channel.receive() else { return .closed }
    guard ops.kind == .syncOps else { return .refused(SyncMessage.decodeRefuse(ops.payload)) }
    try channel.send(Frame(.syncOps, payload: SyncOps.encode([])))
    var answerer = Answerer(
      hello: answererHello, ops: (try? SyncOps.decode(ops.payload)) ?? [], revisions: [], donePosition: 0)
    receiving: while true {
      guard let frame = try channel.receive() else { return .closed }
      switch frame.kind {
      case .syncBatch:
        guard let batch = try? SyncRecordBatch.decode(frame.payload) else { return .closed }
        answerer.revisions += batch.records.compactMap { notebook?.open($0) }
        try channel.send(Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: batch.position))))
      case .syncDone:
        guard let done = PeerMessage.decode(SyncMessage.Done.self, from: frame.payload) else { return .closed }
        answerer.donePosition = done.position
        try channel.send(
          Frame(
            .syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: done.position, outcome: .init()))))
        break receiving
      case .syncRefuse:
        return .refused(SyncMessage.decodeRefuse(frame.payload))
      default:
        return .closed
      }
    }
    return try send(script(answerer), over: channel).answer
  }

  /// Sends `frames` one at a time, reading the answer to each batch and `sync-done`: the
  /// first refusal or end (and `finished` false), else the last acknowledgement. A
  /// `sync-done` that no batch precedes gets a position-only batch at its position first,
  /// as the protocol asks of every sender (a script tests what its frames hold, not that).
  static func send(_ frames: [Frame], over channel: any FrameChannel) throws(TransportError) -> (
    answer: Answer, finished: Bool
  ) {
    var last = Answer.closed
    var batched = false
    var sending: [Frame] = []
    for frame in frames {
      if frame.kind == .syncBatch { batched = true }
      if frame.kind == .syncDone, !batched, let done = PeerMessage.decode(SyncMessage.Done.self, from: frame.payload) {
        batched = true
        sending.append(Frame(.syncBatch, payload: SyncRecordBatch.encode(.init(position: done.position, records: []))))
      }
      sending.append(frame)
    }
    for frame in sending {
      try channel.send(frame)
      guard frame.kind == .syncBatch || frame.kind == .syncDone else { continue }
      guard let reply = try channel.receive() else { return (.closed, false) }
      switch reply.kind {
      case .syncRefuse: return (.refused(SyncMessage.decodeRefuse(reply.payload)), false)
      case .syncAck:
        guard let ack = PeerMessage.decode(SyncMessage.Ack.self, from: reply.payload) else { return (.closed, false) }
        last = .acknowledged(ack)
      default: return (.closed, false)
      }
    }
    return (last, true)
  }

  /// The answerer's side: reads the asker's `sync-hello` and answers with `hello` (a raw
  /// payload), then returns the asker's answer: its refusal, or `closed`.
  public static func answer(over channel: any FrameChannel, hello: [UInt8]) throws(TransportError) -> Answer {
    try answer(over: channel) { _ in (hello, []) }
  }

  /// The answerer's side, scripted: `script` gets the asker's `sync-hello` (nil when it does
  /// not decode) and returns the hello to answer with and the frames to send after it (its
  /// direction: batches and `sync-done`), each batch or `sync-done` waiting for its answer.
  /// Then it plays the asker's direction as a correct answerer would (acknowledging every
  /// batch and the `sync-done`) until the channel ends. Returns the first refusal, else the
  /// last acknowledgement of its own frames, else `closed`.
  public static func answer(
    over channel: any FrameChannel, script: (SyncMessage.Hello?) -> (hello: [UInt8], frames: [Frame])
  ) throws(TransportError) -> Answer {
    let first = try channel.receiveRequired("sync-hello")
    let (hello, frames) = script(PeerMessage.decode(SyncMessage.Hello.self, from: first.payload))
    try channel.send(Frame(.syncHello, payload: hello))
    // Version 3: no ops of its own; then the asker's ops (or its refusal of the hello).
    try channel.send(Frame(.syncOps, payload: SyncOps.encode([])))
    guard let ops = try channel.receive() else { return .closed }
    guard ops.kind == .syncOps else {
      return ops.kind == .syncRefuse ? .refused(SyncMessage.decodeRefuse(ops.payload)) : .closed
    }
    let (last, finished) = try send(frames, over: channel)
    guard finished else { return last }
    while let frame = try channel.receive() {
      switch frame.kind {
      case .syncBatch:
        guard let batch = try? SyncRecordBatch.decode(frame.payload) else { return last }
        try channel.send(Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: batch.position))))
      case .syncDone:
        guard let done = PeerMessage.decode(SyncMessage.Done.self, from: frame.payload) else { return last }
        try channel.send(
          Frame(
            .syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: done.position, outcome: .init()))))
      case .syncRefuse: return .refused(SyncMessage.decodeRefuse(frame.payload))
      default: return last
      }
    }
    return last
  }

  /// A batch frame of `revisions` at `position`, sealed in `notebook` and signed by
  /// the notebook's author (a member), with a binding of every replica they name to it:
  /// whatever the revisions claim, they pass the authorship checks, and every other check
  /// applies.
  public static func batch(_ revisions: [SyncRevision], position: UInt64, in notebook: Notebook) -> Frame {
    let records = revisions.map { notebook.seal($0) }
    return Frame(
      .syncBatch,
      payload: SyncRecordBatch.encode(
        .init(position: position, bindings: notebook.author.signed(records).bindings, records: records)))
  }

  /// A `sync-done` frame claiming `knowledge` (encoded as given, even beyond every limit):
  /// in `notebook`, or at the top level (which versions 2 and 3 leave empty, and still check).
  public static func done(position: UInt64, knowledge: [String: UInt64], in notebook: Notebook? = nil) -> Frame {
    var done = SyncMessage.Done(position: position, knowledge: VersionVector())
    if let notebook { done.notebooks = [notebook.id.rawValue: knowledge] } else { done.knowledge = knowledge }
    return Frame(.syncDone, payload: PeerMessage.encode(done))
  }

  /// `hello(replica:…)` for a replica id and knowledge of replica ids.
  public static func hello(
    replica: ReplicaID, knowledge: [ReplicaID: UInt64] = [:], cursor: FeedPosition? = nil, pending: UInt64? = nil,
    notebook: Notebook? = nil, purges: [Purge] = []
  ) -> [UInt8] {
    hello(
      replica: replica.rawValue, knowledge: VersionVector(knowledge).textEntries, cursor: cursor, pending: pending,
      notebook: notebook, purges: purges)
  }

  /// A `sync-hello` payload from `replica` with these fields as given (no checks), offering
  /// `notebook` when there is one, and carrying `purges` (each encoded as it is, signed or
  /// not: the receiver's checks are under test).
  public static func hello(
    replica: String, knowledge: [String: UInt64] = [:], cursor: FeedPosition? = nil, pending: UInt64? = nil,
    notebook: Notebook? = nil, purges: [Purge] = []
  ) -> [UInt8] {
    // A replica that is not one cannot be a `ReplicaID`: the message is made with a
    // stand-in and its text put back into the JSON, as a broken peer would send it.
    let standIn = ReplicaID(String(repeating: "0", count: 32))!
    var hello = SyncMessage.Hello(
      replica: ReplicaID(replica) ?? standIn, knowledge: VersionVector(), cursor: cursor, pending: pending,
      notebooks: notebook.map { [$0.entry] } ?? [],
      purges: purges.map { Data($0.encoded).base64EncodedString() })
    hello.knowledge = knowledge
    let encoded = PeerMessage.encode(hello)
    guard ReplicaID(replica) == nil,
      var object = (try? JSONSerialization.jsonObject(with: Data(encoded))) as? [String: Any]
    else { return encoded }
    object["replica"] = replica
    return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map(Array.init) ?? encoded
  }
}

extension SyncMessage.Hello {
  /// What the sender claims to know anywhere: the top-level knowledge (empty in version 2)
  /// merged with its knowledge in every notebook it offers (its own replica's entry is its
  /// sequence). For scripts that build on what the other side has seen.
  public var knowledgeInAll: [String: UInt64] {
    var all = knowledge
    for entry in notebooks ?? [] { all.merge(entry.knowledge ?? [:], uniquingKeysWith: max) }
    return all
  }
}

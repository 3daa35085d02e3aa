import FoundationEssentials
import MemoCore

/// Sync frame payloads (docs/PROTOCOL.md, "Sync"). Control messages are small JSON objects
/// like the other control frames; `sync-batch` is binary (`SyncRecordBatch`), because it
/// carries thousands of memos and JSON would cost more than the rest of the sync.
public enum SyncMessage {
  /// Protocol version of the sync messages; a peer speaking another refuses with `version`.
  /// Version 2 (notebooks): knowledge, cursors and records per notebook. Version 3 (signed
  /// membership): who is in a notebook and its keys come from its signed log (`sync-ops`),
  /// never from a hello; records and replicas are signed.
  public static let version = 3

  /// `sync-hello`: what the sender knows (per origin, the highest sequence it has seen
  /// all of) and where it stands in the other side's change feed.
  public struct Hello: Codable, Equatable, Sendable {
    public var version: Int
    /// The sender's replica id (its database's identity).
    public var replica: ReplicaID
    /// Per origin replica, the highest sequence number the sender has seen all of.
    public var knowledge: [String: UInt64]
    /// The sender's position in the receiver's feed (nil: never synced).
    public var cursor: FeedPosition?
    /// The answerer's upper estimate of the revisions it will send (for progress).
    public var pending: UInt64?
    /// The notebooks whose log has the receiver in it (and the sender's invitations), each
    /// with the sender's log heads and, when it syncs them, its knowledge and cursor (the
    /// top-level `knowledge` and `cursor` stay empty, there so that a version-1 peer decodes
    /// the hello and answers `version`).
    public var notebooks: [NotebookEntry]?
    /// Version 3: public keys (base64, 32 bytes) of the sender and of the devices in the
    /// notebooks it lists, so a member can seal keys to a device it never met: a relay
    /// passes on the key of a member that only ever met the relay.
    public var keys: [String]?
    /// Version 3: the revocations the sender applied or holds against itself (`Revocation`,
    /// base64), so that one device's `trust remove` reaches every device, relays included.
    public var revocations: [String]?
    /// Version 3: the purges (`Purge`, base64) of the notebooks the sender shares with the
    /// receiver, so a memo purged on one member leaves every member and relay.
    public var purges: [String]?

    public init(
      replica: ReplicaID, knowledge: VersionVector, cursor: FeedPosition?, pending: UInt64?,
      notebooks: [NotebookEntry]? = nil, keys: [String]? = nil, revocations: [String]? = nil,
      purges: [String]? = nil
    ) {
      version = SyncMessage.version
      self.replica = replica
      self.knowledge = knowledge.textEntries
      self.cursor = cursor
      self.pending = pending
      self.notebooks = notebooks
      self.keys = keys.flatMap { $0.isEmpty ? nil : $0 }
      self.revocations = revocations.flatMap { $0.isEmpty ? nil : $0 }
      self.purges = purges.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Where to start sending from the feed of `replica`: the cursor when it is in that
    /// database, else its beginning (the database was replaced, or never synced).
    public func start(in replica: ReplicaID) -> UInt64 {
      cursor.flatMap { $0.replica == replica ? $0.position : nil } ?? 0
    }
  }

  /// `sync-ack`: the receiver committed everything up to `position` of the sender's feed.
  /// The last one (after `sync-done`) carries the receiver's outcome.
  public struct Ack: Codable, Equatable, Sendable {
    public var position: UInt64
    public var outcome: Outcome?

    public init(position: UInt64, outcome: Outcome? = nil) {
      self.position = position
      self.outcome = outcome
    }
  }

  /// `sync-done`: the sender has sent every change up to `position`; the receiver may now
  /// record the sender's knowledge as its own (it holds everything the sender had seen).
  public struct Done: Codable, Equatable, Sendable {
    public var position: UInt64
    public var knowledge: [String: UInt64]
    /// Version 2: the sender's knowledge per notebook it sent, read before its first batch.
    public var notebooks: [String: [String: UInt64]]?

    public init(position: UInt64, knowledge: VersionVector, notebooks: [NotebookID: VersionVector]? = nil) {
      self.position = position
      self.knowledge = knowledge.textEntries
      self.notebooks = notebooks.map {
        Dictionary(uniqueKeysWithValues: $0.map { ($0.key.rawValue, $0.value.textEntries) })
      }
    }
  }

  /// What one direction of a sync did on the receiving side.
  public struct Outcome: Codable, Equatable, Sendable {
    /// Revisions stored (new memos, edits, deletes, conflict copies).
    public var applied: Int
    /// New conflict copies (and deletes overruled by an edit) among them.
    public var conflicts: Int
    /// Deletes held back by the mass-delete guard (nothing was deleted).
    public var heldDeletes: Int
    /// Live memos on the receiver when the guard decided.
    public var liveMemos: Int
    /// Records kept aside (quarantined): signatures that did not verify, keys missing,
    /// records that did not open.
    public var quarantined: Int

    public init(applied: Int = 0, conflicts: Int = 0, heldDeletes: Int = 0, liveMemos: Int = 0, quarantined: Int = 0) {
      self.applied = applied
      self.conflicts = conflicts
      self.heldDeletes = heldDeletes
      self.liveMemos = liveMemos
      self.quarantined = quarantined
    }

    enum CodingKeys: String, CodingKey {
      case applied, conflicts, quarantined
      case heldDeletes = "held_deletes"
      case liveMemos = "live_memos"
    }

    public init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: CodingKeys.self)
      applied = try container.decode(Int.self, forKey: .applied)
      conflicts = try container.decode(Int.self, forKey: .conflicts)
      heldDeletes = try container.decode(Int.self, forKey: .heldDeletes)
      liveMemos = try container.decode(Int.self, forKey: .liveMemos)
      quarantined = try container.decodeIfPresent(Int.self, forKey: .quarantined) ?? 0
    }
  }

  /// `sync-refuse`: the answerer will not sync now, with a stable reason code. A refusal of
  /// another version says which this side speaks (`version`, since version 3), so the
  /// person is told both.
  public struct Refuse: Codable, Equatable, Sendable {
    public var reason: String
    public var version: Int?
    public init(reason: RefuseReason) {
      self.reason = reason.rawValue
      version = reason == .version ? SyncMessage.version : nil
    }
  }

  /// Why a side ends a sync: the reasons live with the rules that raise them (MemoCore).
  public typealias RefuseReason = SyncRefuseReason

}

extension SyncMessage {
  /// A `sync-hello` payload, checked: `version` for another version (compared before
  /// anything else, so a newer peer is told about the version), `malformed` or a range
  /// reason for the rest (`SyncRules.check`).
  public static func decodeHello(_ payload: [UInt8]) throws(SyncViolation) -> Hello {
    // The version alone first: a peer of another version is told so, whatever else its
    // hello holds that this version would not decode.
    struct Versioned: Decodable { var version: Int }
    let versioned = try decode(Versioned.self, payload, "sync-hello")
    guard versioned.version == version else {
      throw SyncViolation(.version, "sync version \(versioned.version)", peerVersion: versioned.version)
    }
    let hello = try decode(Hello.self, payload, "sync-hello")
    try SyncRules.check(hello)
    return hello
  }

  public static func decodeDone(_ payload: [UInt8]) throws(SyncViolation) -> Done {
    let done = try decode(Done.self, payload, "sync-done")
    try SyncRules.check(done)
    return done
  }

  /// A `sync-ack`, which may acknowledge at most `sentUpTo`.
  public static func decodeAck(_ payload: [UInt8], sentUpTo: UInt64) throws(SyncViolation) -> Ack {
    let ack = try decode(Ack.self, payload, "sync-ack")
    try SyncRules.check(ack, sentUpTo: sentUpTo)
    return ack
  }

  /// The reason of a `sync-refuse`; nil for one this version does not know (or none).
  public static func decodeRefuse(_ payload: [UInt8]) -> RefuseReason? {
    PeerMessage.decode(Refuse.self, from: payload).flatMap { RefuseReason(rawValue: $0.reason) }
  }

  /// The sync version a `sync-refuse` of `version` says its sender speaks (nil: not said,
  /// as before version 3, or out of range).
  public static func refusingVersion(_ payload: [UInt8]) -> Int? {
    PeerMessage.decode(Refuse.self, from: payload).flatMap(\.version).flatMap { (1...1000).contains($0) ? $0 : nil }
  }

  private static func decode<T: Decodable>(_ type: T.Type, _ payload: [UInt8], _ name: String) throws(SyncViolation)
    -> T
  {
    guard let value = PeerMessage.decode(type, from: payload) else {
      throw SyncViolation(.malformed, "a \(name) that does not decode")
    }
    return value
  }
}

/// The binary `sync-batch` payload of sync version 1, which no peer sends any more (version 2
/// sends `SyncRecordBatch`). It stays as the on-disk form of the removals the mass-delete
/// guard holds (MemoStore+Held), and its clock decoder is shared with `SyncRecordBatch`.
/// All integers big-endian:
///
///     u8 version (1) · u64 feed position of the last revision · u32 count · revisions
///     revision: str memo id · str dot origin · u64 dot seq · u32 n · n × (str origin, u64 seq)
///               · i64 revision · i64 created · i64 updated · u8 flags (1 private, 2 deleted)
///               · str title · str body · u32 tag count · tags as str
///     str: u32 byte length · UTF-8 bytes
///
/// Decoding checks every length against the bytes left, so a malformed batch is refused,
/// never trusted.
public enum SyncBatchCodec {
  public static let version: UInt8 = 1

  public struct Batch: Equatable, Sendable {
    public var position: UInt64
    public var revisions: [SyncRevision]

    public init(position: UInt64, revisions: [SyncRevision]) {
      self.position = position
      self.revisions = revisions
    }
  }

  public static func encode(_ batch: Batch) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u64(batch.position)
    writer.u32(UInt32(batch.revisions.count))
    for revision in batch.revisions { encode(revision, into: &writer) }
    return writer.bytes
  }

  /// The encoded size of one revision, for filling batches up to a byte budget.
  public static func encodedSize(_ revision: SyncRevision) -> Int {
    var writer = ByteWriter()
    encode(revision, into: &writer)
    return writer.bytes.count
  }

  private static func encode(_ revision: SyncRevision, into writer: inout ByteWriter) {
    writer.string(revision.memo.rawValue)
    writer.string(revision.head.dot.origin.rawValue)
    writer.u64(revision.head.dot.seq)
    let clock = revision.head.clock.sorted
    writer.u32(UInt32(clock.count))
    for entry in clock {
      writer.string(entry.origin.rawValue)
      writer.u64(entry.seq)
    }
    writer.u64(UInt64(bitPattern: revision.head.revision))
    writer.u64(UInt64(bitPattern: revision.created))
    writer.u64(UInt64(bitPattern: revision.updated))
    writer.u8((revision.isPrivate ? 1 : 0) | (revision.head.isDeleted ? 2 : 0))
    writer.string(revision.title)
    writer.string(revision.body)
    writer.u32(UInt32(revision.tags.count))
    for tag in revision.tags { writer.string(tag) }
  }

  /// Decodes a version-1 batch, refusing anything a store would not have written: lengths
  /// that overrun, bytes left over, another version, unknown flag bits, and every revision
  /// that fails `SyncRules.checkShape` (numbers out of range, a clock that does not end at
  /// its dot, content not normalised). Nothing of a refused batch is returned.
  public static func decode(_ bytes: [UInt8]) throws(SyncViolation) -> Batch {
    var reader = ByteReader(bytes)
    guard reader.u8() == version else { throw SyncViolation(.malformed, "a sync-batch of another version") }
    guard let position = reader.u64(), let count = reader.u32() else { throw truncated }
    try SyncRules.checkNumber(position, "a batch's position")
    var revisions: [SyncRevision] = []
    // A revision takes at least 60 bytes: a count beyond what the bytes can hold is refused
    // before anything is reserved.
    guard Int(count) <= bytes.count / 60 else { throw truncated }
    revisions.reserveCapacity(Int(count))
    for _ in 0..<count {
      let revision = try decodeRevision(&reader)
      try SyncRules.checkShape(revision)
      revisions.append(revision)
    }
    guard reader.isAtEnd else { throw SyncViolation(.malformed, "bytes after the last revision of a sync-batch") }
    return Batch(position: position, revisions: revisions)
  }

  /// The entries of a clock of `count` replicas, as both batch versions encode it: at most
  /// 4,096, each named once, none 0 (the rest is `SyncRules.checkNumbers`').
  static func decodeClock(count: UInt32, from reader: inout ByteReader, truncated: SyncViolation) throws(SyncViolation)
    -> [ReplicaID: UInt64]
  {
    guard count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "a clock of \(count) replicas")
    }
    var clock: [ReplicaID: UInt64] = [:]
    for _ in 0..<count {
      guard let text = reader.string(), let seq = reader.u64() else { throw truncated }
      let origin = try SyncRules.replica(text, "a clock's replica")
      guard clock.updateValue(seq, forKey: origin) == nil else {
        throw SyncViolation(.malformed, "a clock that names a replica twice")
      }
      guard seq > 0 else { throw SyncViolation(.malformed, "a clock entry of 0") }
    }
    return clock
  }

  static let truncated = SyncViolation(
    .malformed, "a sync-batch whose lengths overrun its bytes or whose text is not UTF-8")

  private static func decodeRevision(_ reader: inout ByteReader) throws(SyncViolation) -> SyncRevision {
    guard let idText = reader.string(), let originText = reader.string(), let seq = reader.u64(),
      let clockCount = reader.u32()
    else { throw truncated }
    guard let memo = MemoID(canonical: idText) else { throw SyncViolation(.malformed, "a memo id that is not one") }
    let origin = try SyncRules.replica(originText, "a dot's replica")
    let clock = try decodeClock(count: clockCount, from: &reader, truncated: truncated)
    guard let revision = reader.u64(), let created = reader.u64(), let updated = reader.u64(),
      let flags = reader.u8(), let title = reader.string(), let body = reader.string(), let tagCount = reader.u32()
    else { throw truncated }
    guard flags & ~3 == 0 else { throw SyncViolation(.malformed, "unknown flag bits") }
    guard tagCount <= 1024 else { throw SyncViolation(.invalidRevision, "more than 1,024 tags") }
    var tags: [String] = []
    for _ in 0..<tagCount {
      guard let tag = reader.string() else { throw truncated }
      tags.append(tag)
    }
    return SyncRevision(
      memo: memo,
      head: HeadSummary(
        dot: Dot(origin: origin, seq: seq), clock: VersionVector(clock), revision: Int64(bitPattern: revision),
        isDeleted: flags & 2 != 0),
      created: Int64(bitPattern: created), updated: Int64(bitPattern: updated), isPrivate: flags & 1 != 0,
      title: title, body: body, tags: tags)
  }
}

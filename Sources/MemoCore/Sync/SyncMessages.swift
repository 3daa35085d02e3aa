import Foundation

/// Sync frame payloads (docs/PROTOCOL.md, "Sync"). Control messages are small JSON objects
/// like the other control frames; `sync-batch` is binary (`SyncBatchCodec`), because it
/// carries thousands of memos and JSON would cost more than the rest of the sync.
public enum SyncMessage {
  /// Protocol version of the sync messages; a peer speaking another refuses with `version`.
  /// Version 2 (notebooks): knowledge, cursors and records per notebook.
  public static let version = 2

  /// `sync-hello`: what the sender knows (per origin, the highest sequence it has seen
  /// all of) and where it stands in the other side's change feed.
  public struct Hello: Codable, Equatable, Sendable {
    public var version: Int
    /// The sender's replica id (its database's identity).
    public var replica: String
    /// Per origin replica, the highest sequence number the sender has seen all of.
    public var knowledge: [String: UInt64]
    /// The sender's position in the receiver's feed (nil: never synced).
    public var cursor: FeedPosition?
    /// The answerer's upper estimate of the revisions it will send (for progress).
    public var pending: UInt64?
    /// Version 2: the notebooks the sender shares with the receiver, each with the sender's
    /// knowledge and cursor in it (the top-level `knowledge` and `cursor` stay empty, there
    /// so that a version-1 peer decodes the hello and answers `version`).
    public var notebooks: [NotebookOffer]?

    public init(
      replica: String, knowledge: VersionVector, cursor: FeedPosition?, pending: UInt64?,
      notebooks: [NotebookOffer]? = nil
    ) {
      version = SyncMessage.version
      self.replica = replica
      self.knowledge = knowledge.entries
      self.cursor = cursor
      self.pending = pending
      self.notebooks = notebooks
    }

    /// Where to start sending from the feed of `replica`: the cursor when it is in that
    /// database, else its beginning (the database was replaced, or never synced).
    public func start(in replica: String) -> UInt64 {
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
      self.knowledge = knowledge.entries
      self.notebooks = notebooks.map {
        Dictionary(uniqueKeysWithValues: $0.map { ($0.key.rawValue, $0.value.entries) })
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

    public init(applied: Int = 0, conflicts: Int = 0, heldDeletes: Int = 0, liveMemos: Int = 0) {
      self.applied = applied
      self.conflicts = conflicts
      self.heldDeletes = heldDeletes
      self.liveMemos = liveMemos
    }

    enum CodingKeys: String, CodingKey {
      case applied, conflicts
      case heldDeletes = "held_deletes"
      case liveMemos = "live_memos"
    }
  }

  /// `sync-refuse`: the answerer will not sync now, with a stable reason code.
  public struct Refuse: Codable, Equatable, Sendable {
    public var reason: String
    public init(reason: RefuseReason) { self.reason = reason.rawValue }
  }

  public enum RefuseReason: String, Codable, Sendable {
    /// The answering node is locked: its memos cannot be read or written until unlocked.
    case locked
    /// The answering node speaks another sync version.
    case version
    /// The answering node's store failed (full disk, damaged database).
    case storage
  }
}

/// The binary `sync-batch` payload, version 1. All integers big-endian:
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
    writer.string(revision.head.dot.origin)
    writer.u64(revision.head.dot.seq)
    let clock = revision.head.clock.sorted
    writer.u32(UInt32(clock.count))
    for entry in clock {
      writer.string(entry.origin)
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

  /// Nil when the payload is not a well-formed version-1 batch.
  public static func decode(_ bytes: [UInt8]) -> Batch? {
    var reader = ByteReader(bytes)
    guard reader.u8() == version, let position = reader.u64(), let count = reader.u32() else { return nil }
    var revisions: [SyncRevision] = []
    revisions.reserveCapacity(min(Int(count), 4096))
    for _ in 0..<count {
      guard let revision = decodeRevision(&reader) else { return nil }
      revisions.append(revision)
    }
    guard reader.isAtEnd else { return nil }
    return Batch(position: position, revisions: revisions)
  }

  private static func decodeRevision(_ reader: inout ByteReader) -> SyncRevision? {
    guard let idText = reader.string(), let memo = MemoID(canonical: idText), let origin = reader.string(),
      !origin.isEmpty, let seq = reader.u64(), seq > 0, let clockCount = reader.u32(), clockCount <= 4096
    else { return nil }
    var clock: [String: UInt64] = [:]
    for _ in 0..<clockCount {
      guard let entryOrigin = reader.string(), let entrySeq = reader.u64() else { return nil }
      clock[entryOrigin] = entrySeq
    }
    let dot = Dot(origin: origin, seq: seq)
    guard let revision = reader.u64(), let created = reader.u64(), let updated = reader.u64(),
      let flags = reader.u8(), let title = reader.string(), let body = reader.string(),
      let tagCount = reader.u32(), tagCount <= 1024
    else { return nil }
    var tags: [String] = []
    for _ in 0..<tagCount {
      guard let tag = reader.string() else { return nil }
      tags.append(tag)
    }
    let vector = VersionVector(clock)
    // A revision's own dot is part of what it has seen; anything else is malformed.
    guard vector.contains(dot) else { return nil }
    return SyncRevision(
      memo: memo,
      head: HeadSummary(dot: dot, clock: vector, revision: Int64(bitPattern: revision), isDeleted: flags & 2 != 0),
      created: Int64(bitPattern: created), updated: Int64(bitPattern: updated), isPrivate: flags & 1 != 0,
      title: title, body: body, tags: tags)
  }
}

/// Appends big-endian integers and length-prefixed strings.
struct ByteWriter {
  var bytes: [UInt8] = []

  mutating func u8(_ value: UInt8) { bytes.append(value) }
  mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
  mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
  mutating func string(_ value: String) {
    u32(UInt32(value.utf8.count))
    bytes.append(contentsOf: value.utf8)
  }
  /// u32 length, then the bytes as they are.
  mutating func data(_ value: [UInt8]) {
    u32(UInt32(value.count))
    bytes.append(contentsOf: value)
  }
}

/// Reads what `ByteWriter` wrote; every read returns nil instead of running past the end.
struct ByteReader {
  private let bytes: [UInt8]
  private var offset = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var isAtEnd: Bool { offset == bytes.count }

  mutating func u8() -> UInt8? {
    guard offset < bytes.count else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  mutating func u32() -> UInt32? { integer(4).map { UInt32(truncatingIfNeeded: $0) } }
  mutating func u64() -> UInt64? { integer(8) }

  private mutating func integer(_ size: Int) -> UInt64? {
    guard bytes.count - offset >= size else { return nil }
    var value: UInt64 = 0
    for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
    offset += size
    return value
  }

  mutating func string() -> String? {
    guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
    defer { offset += length }
    return String(validating: bytes[offset..<offset + length], as: UTF8.self)
  }

  /// What `ByteWriter.data` wrote; nil past the end or above `maximum` bytes.
  mutating func data(maximum: Int) -> [UInt8]? {
    guard let length = u32().map(Int.init), length <= maximum, bytes.count - offset >= length else { return nil }
    defer { offset += length }
    return Array(bytes[offset..<offset + length])
  }
}

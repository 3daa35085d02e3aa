/// One memo revision as it travels in sync version 2, and as a blind relay stores it
/// (docs/PROTOCOL.md, "Records"): in clear only what the head rules need — the notebook,
/// the memo id, the dot and the version vector — and which notebook key sealed the rest.
/// Title, body, tags, the private and deleted flags, the revision number and the times are
/// inside `sealed`, AES-256-GCM under the notebook key, with additional data binding every
/// clear field (`SealingContext.record`), so a relay can keep, merge and forward records
/// but neither read nor alter one without every member noticing.
public struct SyncRecord: Equatable, Sendable {
  public var notebook: NotebookID
  public var memo: MemoID
  public var dot: Dot
  public var clock: VersionVector
  /// The id of the notebook key that sealed `sealed` (32 lowercase hex digits).
  public var keyID: String
  /// `0x01 ‖ nonce ‖ ciphertext ‖ tag` of `RecordContent`.
  public var sealed: [UInt8]

  public init(
    notebook: NotebookID, memo: MemoID, dot: Dot, clock: VersionVector, keyID: String, sealed: [UInt8]
  ) {
    self.notebook = notebook
    self.memo = memo
    self.dot = dot
    self.clock = clock
    self.keyID = keyID
    self.sealed = sealed
  }

  /// The largest sealed part a record may carry: a memo's content at its limits (64 KiB of
  /// body, 512 bytes of title, 32 tags) with room to spare; a relay refuses more.
  public static let maximumSealedBytes = 80 * 1024

  /// The additional data of this record's seal.
  public var associatedData: [UInt8] {
    SealingContext.record(notebook: notebook, keyID: keyID, memo: memo, dot: dot, clock: clock)
  }

  /// Whether `text` is a key id: 16 bytes in lowercase hex.
  public static func isKeyID(_ text: String) -> Bool { NotebookID(text) != nil }
}

/// What a record seals: the part of a revision only members may read. Version 1, all
/// integers big-endian:
///
///     u8 version (1) · i64 revision · i64 created · i64 updated · u8 flags (1 private, 2 deleted)
///     · str title · str body · u32 tag count · tags as str        (str: u32 length · UTF-8)
public enum RecordContent {
  public static let version: UInt8 = 1

  public static func encode(_ revision: SyncRevision) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u64(UInt64(bitPattern: revision.head.revision))
    writer.u64(UInt64(bitPattern: revision.created))
    writer.u64(UInt64(bitPattern: revision.updated))
    writer.u8((revision.isPrivate ? 1 : 0) | (revision.head.isDeleted ? 2 : 0))
    writer.string(revision.title)
    writer.string(revision.body)
    writer.u32(UInt32(revision.tags.count))
    for tag in revision.tags { writer.string(tag) }
    return writer.bytes
  }

  /// The revision `record` carries, from its opened content; nil when the bytes are not a
  /// well-formed version-1 content (the caller refuses the batch).
  public static func decode(_ bytes: [UInt8], of record: SyncRecord) -> SyncRevision? {
    var reader = ByteReader(bytes)
    guard reader.u8() == version, let revision = reader.u64(), let created = reader.u64(),
      let updated = reader.u64(), let flags = reader.u8(), flags & ~3 == 0, let title = reader.string(),
      let body = reader.string(), let tagCount = reader.u32(), tagCount <= 1024
    else { return nil }
    var tags: [String] = []
    for _ in 0..<tagCount {
      guard let tag = reader.string() else { return nil }
      tags.append(tag)
    }
    guard reader.isAtEnd else { return nil }
    return SyncRevision(
      memo: record.memo,
      head: HeadSummary(
        dot: record.dot, clock: record.clock, revision: Int64(bitPattern: revision), isDeleted: flags & 2 != 0),
      created: Int64(bitPattern: created), updated: Int64(bitPattern: updated), isPrivate: flags & 1 != 0,
      title: title, body: body, tags: tags, notebook: record.notebook)
  }
}

/// The binary `sync-batch` payload of sync version 2: records, not readable revisions.
/// All integers big-endian:
///
///     u8 version (2) · u64 feed position of the last row read · u32 count · records
///     record: str notebook id · str memo id · str dot origin · u64 dot seq
///             · u32 n · n × (str origin, u64 seq) · str key id · u32 length · sealed bytes
///
/// Decoding checks every length against the bytes left and every field's form, so a
/// malformed batch is refused whole, never trusted in part.
public enum SyncRecordBatch {
  public static let version: UInt8 = 2

  public struct Batch: Equatable, Sendable {
    public var position: UInt64
    public var records: [SyncRecord]

    public init(position: UInt64, records: [SyncRecord]) {
      self.position = position
      self.records = records
    }
  }

  public static func encode(_ batch: Batch) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u64(batch.position)
    writer.u32(UInt32(batch.records.count))
    for record in batch.records { encode(record, into: &writer) }
    return writer.bytes
  }

  /// The encoded size of one record, for filling batches up to a byte budget.
  public static func encodedSize(_ record: SyncRecord) -> Int {
    var size = 4 + record.notebook.rawValue.utf8.count + 4 + 36 + 4 + record.dot.origin.utf8.count + 8 + 4
    for (origin, _) in record.clock.entries { size += 4 + origin.utf8.count + 8 }
    return size + 4 + record.keyID.utf8.count + 4 + record.sealed.count
  }

  private static func encode(_ record: SyncRecord, into writer: inout ByteWriter) {
    writer.string(record.notebook.rawValue)
    writer.string(record.memo.rawValue)
    writer.string(record.dot.origin)
    writer.u64(record.dot.seq)
    let clock = record.clock.sorted
    writer.u32(UInt32(clock.count))
    for entry in clock {
      writer.string(entry.origin)
      writer.u64(entry.seq)
    }
    writer.string(record.keyID)
    writer.data(record.sealed)
  }

  /// Decodes a version-2 batch, refusing it whole when it is not well formed (lengths that
  /// overrun, bytes left over, another version, a field not of its form) or when a record's
  /// clear part breaks a rule (`SyncRules.checkNumbers`): the same checks as for a
  /// version-1 batch, which a blind relay can apply too.
  public static func decode(_ bytes: [UInt8]) throws(SyncViolation) -> Batch {
    var reader = ByteReader(bytes)
    guard reader.u8() == version else { throw SyncViolation(.malformed, "a sync-batch of another version") }
    guard let position = reader.u64(), let count = reader.u32(), Int(count) <= bytes.count / minimumRecordSize
    else { throw malformed }
    try SyncRules.checkNumber(position, "a batch's position")
    var records: [SyncRecord] = []
    records.reserveCapacity(Int(count))
    for _ in 0..<count {
      let record = try decodeRecord(&reader)
      try SyncRules.checkNumbers(record)
      records.append(record)
    }
    guard reader.isAtEnd else { throw SyncViolation(.malformed, "bytes after the last record of a sync-batch") }
    return Batch(position: position, records: records)
  }

  static let malformed = SyncViolation(
    .malformed, "a sync-batch whose lengths overrun its bytes, or with a record field not of its form")

  /// The fewest bytes a record can take (empty sealed part, one clock entry): a count the
  /// bytes cannot hold is refused before anything is reserved.
  static let minimumRecordSize = 4 + 32 + 4 + 36 + 4 + 1 + 8 + 4 + (4 + 1 + 8) + 4 + 32 + 4

  private static func decodeRecord(_ reader: inout ByteReader) throws(SyncViolation) -> SyncRecord {
    guard let notebookText = reader.string(), let idText = reader.string(), let origin = reader.string(),
      let seq = reader.u64(), let clockCount = reader.u32()
    else { throw malformed }
    guard let notebook = NotebookID(notebookText) else {
      throw SyncViolation(.malformed, "a notebook id that is not one")
    }
    guard let memo = MemoID(canonical: idText) else { throw SyncViolation(.malformed, "a memo id that is not one") }
    let clock = try SyncBatchCodec.decodeClock(count: clockCount, from: &reader, truncated: malformed)
    guard let keyID = reader.string(), let sealed = reader.data(maximum: SyncRecord.maximumSealedBytes) else {
      throw malformed
    }
    guard SyncRecord.isKeyID(keyID) else { throw SyncViolation(.malformed, "a key id that is not one") }
    // The dot, the clock's replicas and numbers, and that the clock ends at the dot are
    // `SyncRules.checkNumbers`' (the caller's) to refuse, with their reasons.
    return SyncRecord(
      notebook: notebook, memo: memo, dot: Dot(origin: origin, seq: seq), clock: VersionVector(clock), keyID: keyID,
      sealed: sealed)
  }
}

import MemoCore

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
  /// The Ed25519 signature of the device bound to the dot's replica over `signedMessage`
  /// (sync version 3); nil for a revision from before signing, accepted only within the
  /// receiver's legacy ceiling (docs/design/sync-v3.md, section 2).
  public var signature: [UInt8]?

  public init(
    notebook: NotebookID, memo: MemoID, dot: Dot, clock: VersionVector, keyID: String, sealed: [UInt8],
    signature: [UInt8]? = nil
  ) {
    self.notebook = notebook
    self.memo = memo
    self.dot = dot
    self.clock = clock
    self.keyID = keyID
    self.sealed = sealed
    self.signature = signature
  }

  /// Ed25519 signatures are 64 bytes.
  public static let signatureSize = 64

  /// What the author signs: every clear field (as the seal's additional data binds them)
  /// and the sealed bytes, so a relay verifies authorship without reading, and nobody can
  /// move a signature to other content, another memo, dot or clock.
  public var signedMessage: [UInt8] { Signing.message(.revision, associatedData, sealed) }

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

/// What a record seals: the part of a revision only members may read. All integers
/// big-endian. Version 1:
///
///     u8 version (1) · i64 revision · i64 created · i64 updated · u8 flags (1 private, 2 deleted)
///     · str title · str body · u32 tag count · tags as str        (str: u32 length · UTF-8)
///
/// Version 2 (sync version 3) pads it, so that the sealed length tells a relay only a size
/// bucket, never whether an edit was short or a memo was deleted:
///
///     u8 version (2) · u32 length · the version-1 bytes · zero bytes up to the bucket
///
/// The padded size (of the whole version-2 content) is Padmé's (Nikitin et al., "Reducing
/// Metadata Leakage from Encrypted Files and Communication with PURBs", 2019), at least 256
/// bytes: a length of 2^E is rounded up to a multiple of 2^(E − ⌊log2 E⌋ − 1), so a relay
/// learns O(log log n) bits of it and the padding costs at most 12% (powers of two, which
/// this replaced, doubled a 1 KiB memo). A receiver refuses any other length, and padding
/// that is not zero.
public enum RecordContent {
  public static let version: UInt8 = 1
  public static let paddedVersion: UInt8 = 2

  /// The smallest padded content: short memos all look alike.
  public static let minimumPaddedSize = 256
  /// The largest content a record may seal.
  public static let maximumPaddedSize = SyncRecord.maximumSealedBytes - sealOverhead

  /// The length content of `needed` bytes is padded to: Padmé's, at least
  /// `minimumPaddedSize`, at most `maximumPaddedSize` (content that needs more than that
  /// does not fit in a record, and keeps its length; the record's own limit refuses it).
  public static func paddedSize(_ needed: Int) -> Int {
    guard needed > minimumPaddedSize else { return minimumPaddedSize }
    let exponent = Int.bitWidth - 1 - needed.leadingZeroBitCount
    let exponentBits = Int.bitWidth - exponent.leadingZeroBitCount
    let mask = (1 << (exponent - exponentBits)) - 1
    let padded = (needed + mask) & ~mask
    return needed <= maximumPaddedSize ? min(padded, maximumPaddedSize) : needed
  }

  /// AES-256-GCM's version byte, nonce and tag around the content (FORMATS.md).
  static let sealOverhead = 1 + 12 + 16

  /// The padded (version 2) content of a revision: what sync version 3 seals.
  public static func encode(_ revision: SyncRevision) -> [UInt8] {
    let plain = encodeUnpadded(revision)
    let needed = 1 + 4 + plain.count
    let size = paddedSize(needed)
    var writer = ByteWriter()
    writer.u8(paddedVersion)
    writer.data(plain)
    writer.bytes.append(contentsOf: repeatElement(0, count: size - needed))
    return writer.bytes
  }

  /// The version-1 bytes (records of sync version 2, and the inside of version 2).
  public static func encodeUnpadded(_ revision: SyncRevision) -> [UInt8] {
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

  /// The revision `record` carries, from its opened content (version 1, or version 2 with
  /// zero padding); nil when the bytes are not well formed (the caller refuses it).
  public static func decode(_ bytes: [UInt8], of record: SyncRecord) -> SyncRevision? {
    guard bytes.first == paddedVersion else { return decodeUnpadded(bytes, of: record) }
    var reader = ByteReader(bytes)
    guard reader.u8() == paddedVersion, let plain = reader.data(maximum: bytes.count) else { return nil }
    let needed = 1 + 4 + plain.count
    let padding = bytes.count - needed
    // Exactly to its bucket, with zeros: any other length or byte would say something.
    guard padding >= 0, bytes.count == paddedSize(needed),
      bytes.suffix(padding).allSatisfy({ $0 == 0 })
    else { return nil }
    return decodeUnpadded(plain, of: record)
  }

  /// Where the body's UTF-8 lies in opened content (version 1, or version 2 around it),
  /// without making a string of any field: `search` looks for text in the bodies of
  /// thousands of records this store already checked when they came. Nil when the bytes do
  /// not hold a body where the format puts one.
  public static func bodyRange(in bytes: UnsafeRawBufferPointer) -> Range<Int>? {
    func u32(at offset: Int) -> Int? {
      guard offset >= 0, bytes.count - offset >= 4 else { return nil }
      return (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
    }
    var start = 0
    if bytes.first == paddedVersion {
      guard let length = u32(at: 1), bytes.count - 5 >= length else { return nil }
      start = 5
    }
    // u8 version · 3 × u64 · u8 flags, then the title and the body as (u32 length, bytes).
    guard bytes.count > start, bytes[start] == version else { return nil }
    let title = start + 1 + 3 * 8 + 1
    guard let titleLength = u32(at: title), bytes.count - (title + 4) >= titleLength else { return nil }
    let body = title + 4 + titleLength
    guard let bodyLength = u32(at: body), bytes.count - (body + 4) >= bodyLength else { return nil }
    return (body + 4)..<(body + 4 + bodyLength)
  }

  private static func decodeUnpadded(_ bytes: [UInt8], of record: SyncRecord) -> SyncRevision? {
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

/// The binary `sync-batch` payload of sync version 3: the bindings of the batch's replicas
/// the receiver may not have yet, then records. All integers big-endian:
///
///     u8 version (3) · u64 feed position of the last row read
///     · u32 b · b × binding (`ReplicaBinding`) · u32 count · records
///     record: str notebook id · str memo id · str dot origin · u64 dot seq
///             · u32 n · n × (str origin, u64 seq) · str key id · u32 length · sealed bytes
///             · u8 signed (0 or 1) · [64 bytes signature]
///
/// Decoding checks every length against the bytes left and every field's form, so a
/// malformed batch is refused whole, never trusted in part. Whether a record's signature
/// is right is the receiver's to check (it needs the replica's binding and OpenSSL); a
/// record that fails is kept aside, not the batch refused.
public enum SyncRecordBatch {
  public static let version: UInt8 = 3

  public struct Batch: Equatable, Sendable {
    public var position: UInt64
    /// Bindings of replicas the records name, each sent once per session.
    public var bindings: [ReplicaBinding]
    public var records: [SyncRecord]

    public init(position: UInt64, bindings: [ReplicaBinding] = [], records: [SyncRecord]) {
      self.position = position
      self.bindings = bindings
      self.records = records
    }
  }

  /// Bindings one batch may carry: a batch names at most 256 records' replicas.
  public static let maximumBindings = 256

  public static func encode(_ batch: Batch) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u64(batch.position)
    writer.u32(UInt32(batch.bindings.count))
    for binding in batch.bindings { binding.encode(into: &writer) }
    writer.u32(UInt32(batch.records.count))
    for record in batch.records { encode(record, into: &writer) }
    return writer.bytes
  }

  /// The encoded size of one binding (derived: with its nonce), for the byte budget.
  public static let bindingSize = 4 + 32 + 32 + 4 + 16 + 64

  /// The encoded size of one record, for filling batches up to a byte budget.
  public static func encodedSize(_ record: SyncRecord) -> Int {
    // Replica ids are 32 ASCII digits; notebook and key ids too.
    var size = 4 + 32 + 4 + 36 + 4 + 32 + 8 + 4
    size += record.clock.entries.count * (4 + 32 + 8)
    return size + 4 + record.keyID.utf8.count + 4 + record.sealed.count + 1 + (record.signature == nil ? 0 : 64)
  }

  private static func encode(_ record: SyncRecord, into writer: inout ByteWriter) {
    writer.string(record.notebook.rawValue)
    writer.string(record.memo.rawValue)
    writer.string(record.dot.origin.rawValue)
    writer.u64(record.dot.seq)
    let clock = record.clock.sorted
    writer.u32(UInt32(clock.count))
    for entry in clock {
      writer.string(entry.origin.rawValue)
      writer.u64(entry.seq)
    }
    writer.string(record.keyID)
    writer.data(record.sealed)
    if let signature = record.signature {
      writer.u8(1)
      writer.bytes.append(contentsOf: signature)
    } else {
      writer.u8(0)
    }
  }

  /// Decodes a version-2 batch, refusing it whole when it is not well formed (lengths that
  /// overrun, bytes left over, another version, a field not of its form) or when a record's
  /// clear part breaks a rule (`SyncRules.checkNumbers`): the same checks as for a
  /// version-1 batch, which a blind relay can apply too.
  public static func decode(_ bytes: [UInt8]) throws(SyncViolation) -> Batch {
    var reader = ByteReader(bytes)
    guard reader.u8() == version else { throw SyncViolation(.malformed, "a sync-batch of another version") }
    guard let position = reader.u64(), let bindingCount = reader.u32() else { throw malformed }
    try SyncRules.checkNumber(position, "a batch's position")
    guard bindingCount <= maximumBindings else {
      throw SyncViolation(.malformed, "a batch of \(bindingCount) bindings")
    }
    var bindings: [ReplicaBinding] = []
    for _ in 0..<bindingCount {
      guard let binding = ReplicaBinding.decode(&reader) else {
        throw SyncViolation(.malformed, "a replica binding that is not of its form")
      }
      bindings.append(binding)
    }
    guard let count = reader.u32(), Int(count) <= bytes.count / minimumRecordSize else { throw malformed }
    var records: [SyncRecord] = []
    records.reserveCapacity(Int(count))
    for _ in 0..<count {
      let record = try decodeRecord(&reader)
      try SyncRules.checkNumbers(record)
      records.append(record)
    }
    guard reader.isAtEnd else { throw SyncViolation(.malformed, "bytes after the last record of a sync-batch") }
    return Batch(position: position, bindings: bindings, records: records)
  }

  static let malformed = SyncViolation(
    .malformed, "a sync-batch whose lengths overrun its bytes, or with a record field not of its form")

  /// The fewest bytes a record can take (empty sealed part, one clock entry): a count the
  /// bytes cannot hold is refused before anything is reserved.
  static let minimumRecordSize = 4 + 32 + 4 + 36 + 4 + 1 + 8 + 4 + (4 + 1 + 8) + 4 + 32 + 4 + 1

  private static func decodeRecord(_ reader: inout ByteReader) throws(SyncViolation) -> SyncRecord {
    guard let notebookText = reader.string(), let idText = reader.string(), let originText = reader.string(),
      let seq = reader.u64(), let clockCount = reader.u32()
    else { throw malformed }
    guard let notebook = NotebookID(notebookText) else {
      throw SyncViolation(.malformed, "a notebook id that is not one")
    }
    guard let memo = MemoID(canonical: idText) else { throw SyncViolation(.malformed, "a memo id that is not one") }
    let origin = try SyncRules.replica(originText, "a dot's replica")
    let clock = try SyncBatchCodec.decodeClock(count: clockCount, from: &reader, truncated: malformed)
    guard let keyID = reader.string(), let sealed = reader.data(maximum: SyncRecord.maximumSealedBytes) else {
      throw malformed
    }
    guard SyncRecord.isKeyID(keyID) else { throw SyncViolation(.malformed, "a key id that is not one") }
    guard let signed = reader.u8(), signed <= 1 else { throw malformed }
    var signature: [UInt8]?
    if signed == 1 {
      guard let bytes = reader.bytes(SyncRecord.signatureSize) else { throw malformed }
      signature = bytes
    }
    // The dot, the clock's replicas and numbers, and that the clock ends at the dot are
    // `SyncRules.checkNumbers`' (the caller's) to refuse, with their reasons.
    return SyncRecord(
      notebook: notebook, memo: memo, dot: Dot(origin: origin, seq: seq), clock: VersionVector(clock), keyID: keyID,
      sealed: sealed, signature: signature)
  }
}

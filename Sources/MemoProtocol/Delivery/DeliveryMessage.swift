import FoundationEssentials
import MemoCore

extension Array where Element == UInt8 {
  /// The bytes in base64, as JSON carries them.
  var base64: String { Data(self).base64EncodedString() }
}

/// Delivery frame payloads (docs/PROTOCOL.md, "Delivery").
public enum DeliveryMessage {
  /// The memo inside a `deliver` frame, and inside a sealed outbox or inbox entry.
  public struct Content: Codable, Equatable, Sendable {
    public var title: String
    public var body: String
    public var tags: [String]
    public var isPrivate: Bool
    /// When the sender queued it (milliseconds since the epoch).
    public var sent: Timestamp
    /// The sent memo's identity in replication, when a stored memo was sent (not stdin):
    /// the receiver stores it as that memo's revision, so later syncs keep both copies in
    /// step (and concurrent edits become a conflict, not two unrelated memos). Absent in
    /// entries queued before sync existed.
    public var revision: SentRevision?

    public init(
      title: String, body: String, tags: [String], isPrivate: Bool, sent: Timestamp, revision: SentRevision? = nil
    ) {
      self.title = title
      self.body = body
      self.tags = tags
      self.isPrivate = isPrivate
      self.sent = sent
      self.revision = revision
    }

    enum CodingKeys: String, CodingKey {
      case title, body, tags, sent, revision
      case isPrivate = "private"
    }
  }

  /// Where a sent memo stands in its history (docs/PROTOCOL.md, "Delivery").
  public struct SentRevision: Codable, Equatable, Sendable {
    public var memo: String
    public var dotOrigin: String
    public var dotSeq: UInt64
    public var clock: [String: UInt64]
    public var revision: Int64
    public var created: Timestamp
    public var updated: Timestamp
    /// Sync version 3: the revision's record as its author sealed and signed it, with the
    /// binding of its replica; a receiver that is a member of the memo's notebook, and
    /// takes the sender as one, stores the revision only when they verify. Absent for a
    /// revision from before signing (it then arrives as a new memo).
    public var record: SentRecord?

    public init(memo: Memo, binding: ReplicaBinding? = nil) {
      self.memo = (memo.conflictOf ?? memo.id).rawValue
      dotOrigin = memo.dot?.origin.rawValue ?? memo.origin.text
      dotSeq = memo.dot?.seq ?? 0
      clock = memo.clock.textEntries
      revision = memo.revision
      created = memo.created
      updated = memo.updated
      if let stored = memo.record, let notebook = memo.notebook {
        var writer = ByteWriter()
        binding?.encode(into: &writer)
        record = SentRecord(
          notebook: notebook.rawValue, keyID: stored.keyID, sealed: stored.sealed.base64,
          signature: stored.signature?.base64, binding: binding.map { _ in writer.bytes.base64 })
      }
    }

    enum CodingKeys: String, CodingKey {
      case memo, clock, revision, created, updated, record
      case dotOrigin = "dot_origin"
      case dotSeq = "dot_seq"
    }
  }

  /// A sent revision's record, base64 in the JSON.
  public struct SentRecord: Codable, Equatable, Sendable {
    public var notebook: String
    public var keyID: String
    public var sealed: String
    public var signature: String?
    public var binding: String?

    enum CodingKeys: String, CodingKey {
      case notebook, sealed, signature, binding
      case keyID = "key_id"
    }
  }

  /// `deliver`: one entry, identified by the sender's entry id (a UUID).
  public struct Deliver: Codable, Equatable, Sendable {
    public var id: String
    public var memo: Content
    public init(id: String, memo: Content) {
      self.id = id
      self.memo = memo
    }
  }

  /// `receipt`: the entry is stored on the receiver (`inbox` or `memos`); `duplicate` when
  /// it had been stored by an earlier delivery whose receipt was lost.
  public struct Receipt: Codable, Equatable, Sendable {
    public var id: String
    public var stored: String
    public var duplicate: Bool
    public init(id: String, stored: String, duplicate: Bool) {
      self.id = id
      self.stored = stored
      self.duplicate = duplicate
    }
  }

  /// `refuse`: not stored, with a reason code.
  public struct Refuse: Codable, Equatable, Sendable {
    public var id: String
    public var reason: String
    public init(id: String, reason: RefusalReason) {
      self.id = id
      self.reason = reason.rawValue
    }
  }

  /// The memo's place in replication, as the sync revision the receiver merges: nil when the
  /// sender did not say (sent from stdin, or queued before sync existed). Checked as a sync
  /// revision is (`SyncRules.checkShape`): a sent revision is merged like one.
  public static func revision(of content: Content) throws(SyncViolation) -> SyncRevision? {
    guard let sent = content.revision, sent.dotSeq > 0 else { return nil }
    guard let memo = MemoID(canonical: sent.memo) else { throw SyncViolation(.malformed, "a memo id that is not one") }
    let clock = try SyncRules.checkedVector(sent.clock, "a sent revision's clock")
    let revision = SyncRevision(
      memo: memo,
      head: HeadSummary(
        dot: Dot(origin: try SyncRules.replica(sent.dotOrigin, "a sent revision's replica"), seq: sent.dotSeq),
        clock: clock, revision: sent.revision, isDeleted: false),
      created: sent.created, updated: sent.updated, isPrivate: content.isPrivate, title: content.title,
      body: content.body, tags: content.tags)
    try SyncRules.checkShape(revision)
    return revision
  }

  /// The numbers of a `deliver` payload: an entry id of 1–64 bytes, a sending time in range,
  /// and a sent revision as `revision(of:)` checks it. The content itself is validated by
  /// the store (`MemoRules`).
  public static func check(_ deliver: Deliver) throws(SyncViolation) {
    guard !deliver.id.isEmpty, deliver.id.utf8.count <= 64 else {
      throw SyncViolation(.malformed, "an entry id that is empty or longer than 64 bytes")
    }
    try SyncRules.checkTimestamp(deliver.memo.sent, "sent")
    _ = try revision(of: deliver.memo)
  }

  /// A sent revision's record as the sync record it is, with its binding; nil when it is
  /// not of its form (base64 that does not decode, ids that are not ids, sizes).
  public static func record(of content: Content) -> (record: SyncRecord, binding: ReplicaBinding?)? {
    guard let sent = content.revision, let part = sent.record, let notebook = NotebookID(part.notebook),
      let memo = MemoID(canonical: sent.memo), let origin = ReplicaID(sent.dotOrigin), SyncRecord.isKeyID(part.keyID),
      let sealed = Data(base64Encoded: part.sealed).map(Array.init), sealed.count <= SyncRecord.maximumSealedBytes,
      let clock = try? SyncRules.checkedVector(sent.clock, "a sent revision's clock")
    else { return nil }
    var signature: [UInt8]?
    if let text = part.signature {
      guard let bytes = Data(base64Encoded: text).map(Array.init), bytes.count == SyncRecord.signatureSize else {
        return nil
      }
      signature = bytes
    }
    var binding: ReplicaBinding?
    if let text = part.binding {
      guard let bytes = Data(base64Encoded: text).map(Array.init) else { return nil }
      var reader = ByteReader(bytes)
      guard let decoded = ReplicaBinding.decode(&reader), reader.isAtEnd else { return nil }
      binding = decoded
    }
    let record = SyncRecord(
      notebook: notebook, memo: memo, dot: Dot(origin: origin, seq: sent.dotSeq), clock: clock, keyID: part.keyID,
      sealed: sealed, signature: signature)
    return (record, binding)
  }

  /// The sealed form of a queued memo and the size the receiver checks: the JSON that
  /// `PeerMessage.encode` (JSONEncoder, sorted keys) makes of it, byte for byte, written
  /// directly, as this runs for every entry on both sides of a batch (JSONEncoder took
  /// most of the receiver's time). Tests compare the two over every ASCII character and
  /// non-ASCII text.
  public static func encode(_ content: Content) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(content.body.utf8.count + content.title.utf8.count + 96)
    appendContent(content, to: &bytes)
    return bytes
  }

  static func appendContent(_ content: Content, to bytes: inout [UInt8]) {
    bytes += #"{"body":"#.utf8
    appendJSONString(content.body, to: &bytes)
    bytes += (content.isPrivate ? #","private":true"# : #","private":false"#).utf8
    if let revision = content.revision {
      bytes += #","revision":"#.utf8
      bytes += PeerMessage.encode(revision)
    }
    bytes += #","sent":"#.utf8
    bytes += String(content.sent).utf8
    bytes += #","tags":["#.utf8
    for (index, tag) in content.tags.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      appendJSONString(tag, to: &bytes)
    }
    bytes += #"],"title":"#.utf8
    appendJSONString(content.title, to: &bytes)
    bytes.append(UInt8(ascii: "}"))
  }

  /// A JSON string as JSONEncoder writes it (default options): `"`, `\`, `/` and control
  /// characters escaped (the short forms where JSON has them, else `\u00xx`), everything
  /// else as its UTF-8.
  static func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
    JSONStringBytes.append(text, to: &bytes, escapingSlashes: true)
  }

  public static func decode(_ payload: [UInt8]) -> Content? { PeerMessage.decode(Content.self, from: payload) }

  /// A queued memo's stored JSON when it can go into a batch as it is: a JSON object with a
  /// body and a sending time, so that the batch stays one valid JSON document whatever the
  /// entry holds (the receiver checks each memo's shape on its own). Nil for anything else,
  /// such as the plain text of entries queued before memos were JSON. Sending the stored
  /// bytes spares the sender turning every memo's text into strings and back (JSONDecoder
  /// was a third of the sender's time); only the scan that proves the JSON valid is left.
  public static func sendableJSON(_ payload: [UInt8]) -> [UInt8]? {
    guard payload.first == UInt8(ascii: "{"), PeerMessage.decode(StoredShape.self, from: payload) != nil else {
      return nil
    }
    return payload
  }

  /// The parts of a stored memo `sendableJSON` looks at.
  private struct StoredShape: Decodable {
    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: Content.CodingKeys.self)
      guard container.contains(.body) else {
        throw DecodingError.keyNotFound(
          Content.CodingKeys.body, DecodingError.Context(codingPath: [], debugDescription: "no body"))
      }
      _ = try container.decode(Timestamp.self, forKey: .sent)
    }
  }
}

// MARK: - Batches (delivery version 2)

extension DeliveryMessage {
  /// The delivery version of `deliver-batch` and `batch-receipt`; a batch or receipt of
  /// another version is refused (docs/PROTOCOL.md, "Batched delivery").
  public static let batchVersion = 2
  /// Most entries in one `deliver-batch`.
  public static let maximumBatchEntries = 256
  /// Most payload bytes of one `deliver-batch` (the frame maximum, 1 MiB).
  public static let maximumBatchBytes = Frame.defaultMaximumPayload
  /// The longest entry id a receiver names in its answer. An id above 64 bytes is refused
  /// (`invalid`) with that id in the `refuse` or the batch's result; beyond this one the
  /// frame is malformed instead, so that an answer stays within a frame: 256 results of
  /// ids written with the longest escapes (`\u0001`, 6 bytes a byte) take 0.8 MiB.
  public static let maximumAnsweredIDBytes = 512

  /// `deliver-batch` as a receiver reads it: the version, and each entry with its id and, if
  /// it decodes, its memo. An entry whose memo does not decode is refused on its own
  /// (`invalid`); one without a string id cannot be named, so it makes the frame malformed.
  public struct Batch: Decodable, Sendable, Equatable {
    public var version: Int
    public var entries: [Entry]

    public struct Entry: Decodable, Sendable, Equatable {
      public var id: String
      /// Nil when the entry's memo is not a memo (missing, or of the wrong shape).
      public var memo: Content?

      public init(id: String, memo: Content?) {
        self.id = id
        self.memo = memo
      }

      public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        memo = try? container.decode(Content.self, forKey: .memo)
      }

      enum CodingKeys: String, CodingKey { case id, memo }
    }

    public init(version: Int, entries: [Entry]) {
      self.version = version
      self.entries = entries
    }

    /// Entries are read only for the version this node speaks: another version's may have
    /// another shape, and it is refused by its version alone.
    public init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: CodingKeys.self)
      version = try container.decode(Int.self, forKey: .version)
      entries = version == DeliveryMessage.batchVersion ? try container.decode([Entry].self, forKey: .entries) : []
    }

    enum CodingKeys: String, CodingKey { case version, entries }

    /// The payload of a batch of already encoded `deliver` objects (`encodedEntry`): the
    /// sender encodes each entry once, so it knows every entry's size before it packs them.
    public static func payload(encodedEntries: [[UInt8]], version: Int = DeliveryMessage.batchVersion) -> [UInt8] {
      var bytes = Array(#"{"entries":["#.utf8)
      bytes.reserveCapacity(encodedEntries.reduce(32) { $0 + $1.count + 1 })
      for (index, entry) in encodedEntries.enumerated() {
        if index > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes += entry
      }
      bytes += Array(#"],"version":\#(version)}"#.utf8)
      return bytes
    }

    /// Bytes a batch adds around its entries: the braces, keys and version, plus one comma
    /// per entry (counted with the entries).
    public static let overheadBytes = 32

    /// One entry as `payload(encodedEntries:)` takes it: a `deliver` object.
    public static func encodedEntry(id: String, memo: Content) -> [UInt8] {
      encodedEntry(id: id, memoJSON: DeliveryMessage.encode(memo))
    }

    /// The same for a memo already in JSON: `encode(_:)`'s output, or stored JSON that
    /// `sendableJSON` let through.
    public static func encodedEntry(id: String, memoJSON: [UInt8]) -> [UInt8] {
      var bytes = Array(#"{"id":"#.utf8)
      bytes.reserveCapacity(memoJSON.count + id.utf8.count + 20)
      DeliveryMessage.appendJSONString(id, to: &bytes)
      bytes += #","memo":"#.utf8
      bytes += memoJSON
      bytes.append(UInt8(ascii: "}"))
      return bytes
    }
  }

  /// What became of one entry of a batch: stored now, stored before (`duplicate`), or
  /// refused with a reason. `stored` names the place for the first two.
  public struct BatchResult: Codable, Sendable, Equatable {
    public var id: String
    public var fate: String
    public var stored: String?
    public var reason: String?

    public init(id: String, fate: String, stored: String? = nil, reason: String? = nil) {
      self.id = id
      self.fate = fate
      self.stored = stored
      self.reason = reason
    }

    public static let storedFate = "stored"
    public static let duplicateFate = "duplicate"
    public static let refusedFate = "refused"
  }

  /// `batch-receipt`: one result per entry of the batch it answers, in the batch's order.
  public struct BatchReceipt: Codable, Sendable, Equatable {
    public var version: Int
    public var results: [BatchResult]

    public init(version: Int = DeliveryMessage.batchVersion, results: [BatchResult]) {
      self.version = version
      self.results = results
    }
  }
}

/// Additional authenticated data for every sealed value memo-peer stores.
///
/// Binding the row's identity into the AEAD means a ciphertext copied to another memo,
/// another field, an older revision or another outbox recipient fails to open instead of
/// showing the wrong text. The layout is part of on-disk format version 1 (docs/FORMATS.md):
/// `memo-peer/1`, then NUL-separated components.
public enum SealingContext {
  /// The sealed fields of a memo.
  public enum MemoField: String, Sendable, CaseIterable {
    case title, body, tags
    /// The title again, sealed under the listing key (schema 3) so that `list` and the widget
    /// can show the titles of memos not marked private while the node is locked.
    case listingTitle = "listing-title"
  }

  /// The same bytes as `make(["memo", id, field, revision])`, built without the array of
  /// strings (a test pins the bytes).
  public static func memoField(_ field: MemoField, id: MemoID, revision: Int64) -> [UInt8] {
    var bytes: [UInt8] = []
    memoField(field, id: id, revision: revision, into: &bytes)
    return bytes
  }

  /// `memoField` written into `bytes` (its contents replaced, its storage reused): `list`
  /// and `search` open two or three fields of every memo, and an array each cost more than
  /// the AES of a short title.
  public static func memoField(_ field: MemoField, id: MemoID, revision: Int64, into bytes: inout [UInt8]) {
    bytes.removeAll(keepingCapacity: true)
    bytes.append(contentsOf: memoFieldPrefix)
    if id.rawValue.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
      bytes.append(contentsOf: id.rawValue.utf8)
    }
    bytes.append(contentsOf: fieldParts[fieldIndex(field)])
    appendDecimal(revision, to: &bytes)
  }

  /// `\0field\0` of each field, in `MemoField.allCases` order.
  private static let fieldParts: [[UInt8]] = MemoField.allCases.map { [0] + Array($0.rawValue.utf8) + [0] }

  private static func fieldIndex(_ field: MemoField) -> Int {
    switch field {
    case .title: 0
    case .body: 1
    case .tags: 2
    case .listingTitle: 3
    }
  }

  /// `memoField` of one memo's fields in turn, in one buffer: the prefix and the id are
  /// written once per memo, then only each field's name and the revision (`list` and
  /// `search` open two or three fields of every memo, and an array each cost more than the
  /// AES of a short title).
  public struct MemoFieldBuffer: Sendable {
    /// The sealing context of the field last `set`.
    public private(set) var bytes: [UInt8] = []
    private var memo: MemoID?
    /// Where the memo's part (the prefix and the id) ends.
    private var memoEnd = 0

    public init() {}

    public mutating func set(_ field: MemoField, id: MemoID, revision: Int64) {
      if memo != id {
        memoField(field, id: id, revision: revision, into: &bytes)
        memo = id
        memoEnd = memoFieldPrefix.count + id.rawValue.utf8.count
        return
      }
      bytes.removeSubrange(memoEnd...)
      bytes.append(contentsOf: fieldParts[fieldIndex(field)])
      appendDecimal(revision, to: &bytes)
    }
  }

  /// `String(value).utf8` without the string.
  static func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
    if value < 0 { bytes.append(0x2D) }
    var magnitude = value.magnitude
    var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes: room for 20 digits
    var count = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
      repeat {
        buffer[31 - count] = 0x30 + UInt8(magnitude % 10)
        magnitude /= 10
        count += 1
      } while magnitude > 0
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(32 - count)...]))
    }
  }

  private static let memoFieldPrefix = make(["memo", ""])

  public static func outboxEntry(id: String, recipient: String) -> [UInt8] {
    make(["outbox", id, recipient])
  }

  public static func inboxEntry(id: String, sender: String) -> [UInt8] {
    make(["inbox", id, sender])
  }

  /// An edit from a peer held back by the mass-delete guard, bound to the peer and the
  /// revision it came as (schema 5).
  public static func heldRevision(peer: String, memo: String, origin: String, seq: UInt64) -> [UInt8] {
    make(["held", peer, memo, origin, String(seq)])
  }

  /// A known value sealed at creation: opening it proves the device key matches the store.
  public static let keyCheck: [UInt8] = make(["key-check"])

  /// The same for the listing key (schema 3).
  public static let listingKeyCheck: [UInt8] = make(["listing-key-check"])

  /// A device key wrapped under a passphrase, bound to its file header (class, KDF cost,
  /// salt, idle timeout, key id), so editing the header makes the unwrap fail.
  public static func wrappedKey(header: [UInt8]) -> [UInt8] {
    make(["wrapped-key"]) + [0] + header
  }

  /// A secret file sealed under the device key (identity key, discovery key, trust store),
  /// bound to its header (magic, version, public part).
  public static func sealedSecret(header: [UInt8]) -> [UInt8] {
    make(["sealed-secret"]) + [0] + header
  }

  /// A notebook key at rest, sealed under the device key (schema 5), bound to its notebook,
  /// key id and generation: a key copied to another notebook's row fails to open.
  public static func notebookKey(notebook: NotebookID, keyID: String, generation: Int64) -> [UInt8] {
    make(["notebook-key", notebook.rawValue, keyID, String(generation)])
  }

  /// A memo revision sealed under its notebook's key for sync (a record: docs/PROTOCOL.md,
  /// "Records"), bound to everything a relay stores in clear beside it: the notebook, the
  /// key, the memo, the dot and the whole version vector. A relay (or anyone on the way)
  /// that moves a record to another memo or notebook, or edits its dot or clock to make it
  /// cover other revisions, makes it fail to open on every member.
  ///
  /// The same bytes as `make(["record", …])` then 0 and the encoded clock, written into one
  /// buffer: a received record needs it twice (its signature, its seal), and the array of
  /// strings cost more than sealing the record.
  public static func record(notebook: NotebookID, keyID: String, memo: MemoID, dot: Dot, clock: VersionVector)
    -> [UInt8]
  {
    var bytes = recordPrefix
    bytes.reserveCapacity(recordPrefix.count + 160 + clock.entries.count * 44)
    for part in [notebook.rawValue, keyID, memo.rawValue, dot.origin.rawValue] {
      bytes.append(contentsOf: part.utf8)
      bytes.append(0)
    }
    bytes.append(contentsOf: String(dot.seq).utf8)
    bytes.append(0)
    clock.encode(into: &bytes)
    return bytes
  }

  /// `record(notebook:keyID:memo:dot:clock:)` written into `bytes` (its storage reused) from
  /// the parts as a row stores them, the clock as its encoding (`VersionVector.encoded()`,
  /// which is canonical): `search` opens thousands of stored records in a row, and parsing
  /// each part into a value to write it out again cost more than opening the record. Parts
  /// that are not what their columns should hold only make the record fail to open.
  public static func record(
    into bytes: inout [UInt8], notebook: UnsafeRawBufferPointer, keyID: UnsafeRawBufferPointer,
    memo: UnsafeRawBufferPointer, origin: UnsafeRawBufferPointer, seq: UInt64, encodedClock: UnsafeRawBufferPointer
  ) {
    bytes.removeAll(keepingCapacity: true)
    bytes.append(contentsOf: recordPrefix)
    func append(_ part: UnsafeRawBufferPointer) {
      bytes.append(contentsOf: part)
      bytes.append(0)
    }
    append(notebook)
    append(keyID)
    append(memo)
    append(origin)
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
    withUnsafeMutableBytes(of: &digits) { buffer in
      var value = seq
      var count = 0
      repeat {
        buffer[23 - count] = 0x30 + UInt8(value % 10)
        value /= 10
        count += 1
      } while value > 0
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - count)...]))
    }
    bytes.append(0)
    bytes.append(contentsOf: encodedClock)
  }

  private static let recordPrefix = make(["record", ""])

  /// A notebook's name sealed under one of its key generations in a `rename` op (sync
  /// version 3), bound to the notebook and the key: a name cannot be moved to another
  /// notebook's log.
  public static func notebookName(notebook: NotebookID, keyID: String) -> [UInt8] {
    make(["notebook-name", notebook.rawValue, keyID])
  }

  private static func make(_ parts: [String]) -> [UInt8] {
    var bytes = Array("memo-peer/1".utf8)
    for part in parts {
      bytes.append(0)
      bytes.append(contentsOf: part.utf8)
    }
    return bytes
  }
}

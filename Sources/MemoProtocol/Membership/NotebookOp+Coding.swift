import MemoCore

/// Why bytes are not an op. Each case names the field that was wrong, so a refusal in a
/// log line says what the peer sent, not only that it was bad.
public enum NotebookOpError: Error, Equatable, Sendable {
  /// The whole op is larger than `MembershipLimits.opBytes`.
  case tooLarge(bytes: Int)
  case unknownVersion(UInt8)
  case unknownKind(UInt8)
  /// The bytes ended inside this field.
  case truncated(Field)
  /// The field is there but not of its form (a bad id, an unsorted list, a wrong size).
  case invalid(Field)
  /// The field's count is above its limit.
  case tooMany(Field, count: UInt32)
  /// Bytes after the signature.
  case trailingBytes(count: Int)

  public enum Field: String, Sendable {
    case version, notebook, kind, author, parents, nonce, device, role, cut, replica, sequence, generation
    case keyID = "key id"
    case recipients, sealed, name, memo, signature
  }
}

/// The op's bytes (docs/PROTOCOL.md, "Notebook membership log"):
///
/// ```
/// op := u8 version (1) · str notebook · u8 kind · author key (32) · u32 n · n × parent id (32)
///       · body · signature (64)
/// ```
///
/// Every field has one encoding (lists sorted and without duplicates, fixed sizes checked),
/// so decoding and encoding again gives the same bytes, and the id of an op is the same
/// on every device.
extension NotebookOp {
  /// Everything before the signature: what the author signs (under `Signing.Label.op`).
  public var unsignedBytes: [UInt8] {
    var writer = ByteWriter()
    writer.u8(Self.version)
    writer.string(notebook.rawValue)
    writer.u8(kind.rawValue)
    writer.bytes.append(contentsOf: author)
    writer.u32(UInt32(parents.count))
    for parent in parents { writer.bytes.append(contentsOf: parent.bytes) }
    body.encode(into: &writer)
    return writer.bytes
  }

  /// The message the signature covers: `"memo-peer/3 op" ‖ 0x00 ‖ unsignedBytes`.
  public var signedMessage: [UInt8] { Signing.message(.op, unsignedBytes) }

  /// The op on the wire; its SHA-256 is the op's id.
  public var encoded: [UInt8] { unsignedBytes + signature }

  /// Decodes exactly one op from `bytes`. Hostile input: every length is checked before it
  /// is used, every count against its limit before anything is read for it; the error says
  /// which field failed. The signature is not checked here (`MembershipLog.insert` does).
  public static func decode(_ bytes: [UInt8]) throws(NotebookOpError) -> NotebookOp {
    guard bytes.count <= MembershipLimits.opBytes else { throw .tooLarge(bytes: bytes.count) }
    var reader = OpReader(bytes)
    let version = try reader.u8(.version)
    guard version == Self.version else { throw .unknownVersion(version) }
    guard let notebook = NotebookID(try reader.text(.notebook, maximum: 32)) else { throw .invalid(.notebook) }
    let kindByte = try reader.u8(.kind)
    guard let kind = Kind(rawValue: kindByte) else { throw .unknownKind(kindByte) }
    let author = try reader.bytes(.author, MembershipLimits.publicKeyBytes)
    let count = try reader.count(.parents, limit: MembershipLimits.parents)
    var parents: [OpID] = []
    for _ in 0..<count {
      guard let parent = OpID(bytes: try reader.bytes(.parents, OpID.byteCount)) else { throw .invalid(.parents) }
      // Sorted and distinct: one encoding per set of parents.
      if let last = parents.last, !(last < parent) { throw .invalid(.parents) }
      parents.append(parent)
    }
    // Only a genesis has no parents, and a genesis has none.
    guard (kind == .create) == parents.isEmpty else { throw .invalid(.parents) }
    let body = try Body.decode(kind, from: &reader)
    let signature = try reader.bytes(.signature, MembershipLimits.signatureBytes)
    guard reader.remaining == 0 else { throw .trailingBytes(count: reader.remaining) }
    return NotebookOp(notebook: notebook, author: author, parents: parents, body: body, signature: signature)
  }
}

extension NotebookOp.Body {
  func encode(into writer: inout ByteWriter) {
    switch self {
    case .create(let nonce):
      writer.data(nonce)
    case .share(let device, let role):
      writer.bytes.append(contentsOf: device.bytes)
      writer.u8(role.rawValue)
    case .unshare(let device, let cut):
      writer.bytes.append(contentsOf: device.bytes)
      writer.u32(UInt32(cut.count))
      for entry in cut {
        writer.string(entry.replica.rawValue)
        writer.u64(entry.sequence)
      }
    case .key(let generation, let keyID, let sealed):
      writer.u64(generation)
      writer.bytes.append(contentsOf: keyID)
      writer.u32(UInt32(sealed.count))
      for recipient in sealed {
        writer.bytes.append(contentsOf: recipient.device.bytes)
        writer.bytes.append(contentsOf: recipient.sealed)
      }
    case .grant(let device, let keys):
      writer.bytes.append(contentsOf: device.bytes)
      writer.u32(UInt32(keys.count))
      for key in keys {
        writer.bytes.append(contentsOf: key.keyID)
        writer.bytes.append(contentsOf: key.sealed)
      }
    case .rename(let keyID, let sealedName):
      writer.bytes.append(contentsOf: keyID)
      writer.data(sealedName)
    case .retiredPurge(let memo):
      writer.string(memo.rawValue)
    }
  }

  fileprivate static func decode(_ kind: NotebookOp.Kind, from reader: inout OpReader) throws(NotebookOpError)
    -> NotebookOp.Body
  {
    switch kind {
    case .create:
      // u32 n · n bytes: 16 (derived notebook id) or 0 (legacy genesis).
      let length = try reader.count(.nonce, limit: MembershipLimits.nonceBytes)
      guard length == 0 || length == MembershipLimits.nonceBytes else { throw .invalid(.nonce) }
      return .create(nonce: try reader.bytes(.nonce, length))
    case .share:
      let device = try reader.device()
      guard let role = NotebookOp.Role(rawValue: try reader.u8(.role)) else { throw .invalid(.role) }
      return .share(device: device, role: role)
    case .unshare:
      let device = try reader.device()
      let count = try reader.count(.cut, limit: MembershipLimits.recipients)
      var cut: [NotebookOp.CutEntry] = []
      for _ in 0..<count {
        guard let replica = ReplicaID(try reader.text(.replica, maximum: 32)) else { throw .invalid(.replica) }
        if let last = cut.last, !(last.replica < replica) { throw .invalid(.cut) }
        cut.append(NotebookOp.CutEntry(replica: replica, sequence: try reader.u64(.sequence)))
      }
      return .unshare(device: device, cut: cut)
    case .key:
      let generation = try reader.u64(.generation)
      let keyID = try reader.bytes(.keyID, MembershipLimits.keyIDBytes)
      let count = try reader.count(.recipients, limit: MembershipLimits.recipients)
      var sealed: [NotebookOp.SealedKey] = []
      for _ in 0..<count {
        let device = try reader.device()
        if let last = sealed.last, !(last.device < device) { throw .invalid(.recipients) }
        sealed.append(
          NotebookOp.SealedKey(device: device, sealed: try reader.bytes(.sealed, MembershipLimits.sealedKeyBytes)))
      }
      return .key(generation: generation, keyID: keyID, sealed: sealed)
    case .grant:
      let device = try reader.device()
      let count = try reader.count(.recipients, limit: MembershipLimits.recipients)
      var keys: [NotebookOp.GrantedKey] = []
      for _ in 0..<count {
        let keyID = try reader.bytes(.keyID, MembershipLimits.keyIDBytes)
        if let last = keys.last, !last.keyID.lexicographicallyPrecedes(keyID) { throw .invalid(.recipients) }
        keys.append(
          NotebookOp.GrantedKey(keyID: keyID, sealed: try reader.bytes(.sealed, MembershipLimits.sealedKeyBytes)))
      }
      return .grant(device: device, keys: keys)
    case .rename:
      let keyID = try reader.bytes(.keyID, MembershipLimits.keyIDBytes)
      let length = try reader.count(.name, limit: MembershipLimits.sealedNameBytes)
      return .rename(keyID: keyID, sealedName: try reader.bytes(.name, length))
    case .retiredPurge:
      guard let memo = MemoID(canonical: try reader.text(.memo, maximum: 36)) else { throw .invalid(.memo) }
      return .retiredPurge(memo: memo)
    }
  }
}

/// `ByteReader` with the field named in every failure: a short read is `.truncated(field)`,
/// a count above its limit `.tooMany(field)`, checked before anything is read for it.
private struct OpReader {
  private var reader: ByteReader
  private(set) var remaining: Int

  init(_ bytes: [UInt8]) {
    reader = ByteReader(bytes)
    remaining = bytes.count
  }

  mutating func u8(_ field: NotebookOpError.Field) throws(NotebookOpError) -> UInt8 {
    guard let value = reader.u8() else { throw .truncated(field) }
    remaining -= 1
    return value
  }

  mutating func u64(_ field: NotebookOpError.Field) throws(NotebookOpError) -> UInt64 {
    guard let value = reader.u64() else { throw .truncated(field) }
    remaining -= 8
    return value
  }

  /// A u32 count, at most `limit`.
  mutating func count(_ field: NotebookOpError.Field, limit: Int) throws(NotebookOpError) -> Int {
    guard let value = reader.u32() else { throw .truncated(field) }
    remaining -= 4
    guard value <= UInt32(limit) else { throw .tooMany(field, count: value) }
    return Int(value)
  }

  mutating func bytes(_ field: NotebookOpError.Field, _ count: Int) throws(NotebookOpError) -> [UInt8] {
    guard let value = reader.bytes(count) else { throw .truncated(field) }
    remaining -= count
    return value
  }

  /// `str`: u32 length (at most `maximum` bytes), then UTF-8.
  mutating func text(_ field: NotebookOpError.Field, maximum: Int) throws(NotebookOpError) -> String {
    guard let length = reader.u32() else { throw .truncated(field) }
    remaining -= 4
    guard length <= UInt32(maximum) else { throw .invalid(field) }
    let raw = try bytes(field, Int(length))
    guard let text = String(validating: raw, as: UTF8.self) else { throw .invalid(field) }
    return text
  }

  mutating func device() throws(NotebookOpError) -> DeviceID {
    guard let device = DeviceID(bytes: try bytes(.device, DeviceID.byteCount)) else { throw .invalid(.device) }
    return device
  }
}

import MemoCore

/// A member's signed request that every device holding a notebook drop one memo of it: its
/// revisions, its history and its sealed records (docs/PROTOCOL.md, "Purges"). Hellos carry
/// it to the members and relays of the notebook, which verify it against the membership
/// they hold and pass it on.
///
/// ```
/// u8 version (1) · 32 author's public key · str notebook id · str memo id · u64 made (ms)
/// · 64 signature
/// ```
/// The signature (Ed25519 by the author) covers `memo-peer/3 purge`, a zero byte and every
/// byte before it. Pure: checking the signature is the store's (MemoCrypto).
public struct Purge: Equatable, Sendable {
  public static let version: UInt8 = 1
  /// Purges one hello carries (the newest first; about 260 bytes each in the JSON).
  public static let maximumPerHello = 1024
  /// The largest encoding (ids are 32 and 36 characters: 193 bytes).
  public static let maximumSize = 512

  public var authorKey: [UInt8]
  public var notebook: NotebookID
  public var memo: MemoID
  /// When the author made it (its clock): shown, never compared.
  public var made: Timestamp
  public var signature: [UInt8]

  public init(authorKey: [UInt8], notebook: NotebookID, memo: MemoID, made: Timestamp, signature: [UInt8]) {
    self.authorKey = authorKey
    self.notebook = notebook
    self.memo = memo
    self.made = made
    self.signature = signature
  }

  /// Everything the signature covers.
  public var body: [UInt8] {
    var writer = ByteWriter()
    writer.u8(Self.version)
    writer.bytes.append(contentsOf: authorKey)
    writer.string(notebook.rawValue)
    writer.string(memo.rawValue)
    writer.u64(UInt64(bitPattern: made))
    return writer.bytes
  }

  public var signedMessage: [UInt8] { Signing.message(.purge, body) }

  public var encoded: [UInt8] { body + signature }

  /// Why bytes are not a purge (named in the refusal of the hello that carried them).
  public enum FormatError: Error, Equatable, Sendable {
    case tooLarge, truncated
    case version(UInt8)
    case invalidID, outOfRange, trailingBytes

    public var detail: String {
      switch self {
      case .tooLarge: "a purge larger than \(Purge.maximumSize) bytes"
      case .truncated: "a truncated purge"
      case .version(let version): "a purge of version \(version)"
      case .invalidID: "a purge naming an invalid notebook or memo id"
      case .outOfRange: "a purge with a time out of range"
      case .trailingBytes: "bytes after a purge's signature"
      }
    }
  }

  /// Decodes one purge; only its one encoding (canonical ids) is accepted.
  public static func decode(_ bytes: [UInt8]) throws(FormatError) -> Purge {
    guard bytes.count <= maximumSize else { throw .tooLarge }
    var reader = ByteReader(bytes)
    guard let version = reader.u8() else { throw .truncated }
    guard version == Self.version else { throw .version(version) }
    guard let key = reader.bytes(32), let notebookText = reader.string(), let memoText = reader.string() else {
      throw .truncated
    }
    guard let notebook = NotebookID(notebookText), notebook.rawValue == notebookText,
      let memo = MemoID(canonical: memoText)
    else { throw .invalidID }
    guard let made = reader.u64() else { throw .truncated }
    guard made <= UInt64(Int64.max) else { throw .outOfRange }
    guard let signature = reader.bytes(SyncRecord.signatureSize) else { throw .truncated }
    guard reader.isAtEnd else { throw .trailingBytes }
    return Purge(authorKey: key, notebook: notebook, memo: memo, made: Int64(made), signature: signature)
  }
}

import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem

/// The export archive: memos sealed under a key derived from a passphrase, for moving them
/// to another device. It never contains the device key.
///
/// Format version 1 (docs/FORMATS.md, "Export archive"):
/// header `MEMOPEER` ‖ version 0x01 ‖ KDF 0x01 (scrypt) ‖ log2 N ‖ r ‖ p ‖ salt (16), then
/// chunks of `length (u32 big-endian) ‖ sealed`, where sealed is the AES-256-GCM format of
/// `AES256GCMKey` over up to 64 KiB of JSON Lines (one memo per line), with additional data
/// `header ‖ chunk index (u64 BE) ‖ final flag`. The final flag makes a truncated archive
/// detectable; the index makes reordered chunks fail.
public enum MemoArchive {
  /// `@_spi(Fuzzing) public`, with `associatedData`: Tests/Fuzz (`archive`) seals the chunks
  /// of its inputs as an archive does, without `@testable import`.
  @_spi(Fuzzing) public static let magic: [UInt8] = Array("MEMOPEER".utf8)
  static let version: UInt8 = 1
  static let kdfScrypt: UInt8 = 1
  static let headerSize = 8 + 1 + 1 + 3 + 16
  static let chunkTarget = 64 * 1024
  /// Largest sealed chunk a reader accepts: one full chunk plus a maximal memo.
  static let maxSealedChunk = chunkTarget + 2 * MemoRules.maxBodyBytes + 16 * 1024

  /// One memo as it appears in the archive's JSON Lines. Field names are part of the format.
  struct Record: Codable {
    var id: String
    var title: String
    var body: String
    var tags: [String]
    var created: Int64
    var updated: Int64
    var `private`: Bool
    var revision: Int64
    var origin: String
  }

  static func header(salt: [UInt8], parameters: ScryptParameters) -> [UInt8] {
    let log2N = UInt8(parameters.n.trailingZeroBitCount)
    return magic + [version, kdfScrypt, log2N, UInt8(parameters.r), UInt8(parameters.p)] + salt
  }

  @_spi(Fuzzing) public static func associatedData(header: [UInt8], index: UInt64, final: Bool) -> [UInt8] {
    header + withUnsafeBytes(of: index.bigEndian, Array.init) + [final ? 1 : 0]
  }

  static func deriveKey(_ passphrase: SecureBytes, salt: [UInt8], parameters: ScryptParameters) throws -> AES256GCMKey {
    do {
      return try AES256GCMKey(PassphraseKDF.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters))
    } catch {
      throw MemoPeerError(.crypto, "deriving the archive key failed", diagnostics: "\(error)")
    }
  }
}

/// Writes an archive chunk by chunk to a file descriptor, so exporting many memos never
/// holds them all in memory.
public final class MemoArchiveWriter {
  private let fd: Int32
  private let destination: String
  private let header: [UInt8]
  private let key: AES256GCMKey
  private var pending: [UInt8] = []
  private var buffered: [UInt8] = []
  private var hasPending = false
  private var index: UInt64 = 0
  private let encoder = JSONEncoder()
  public private(set) var count = 0

  public init(fd: Int32, destination: String, passphrase: SecureBytes, parameters: ScryptParameters = .standard) throws
  {
    self.fd = fd
    self.destination = destination
    let salt = try SystemRandom.bytes(16)
    header = MemoArchive.header(salt: salt, parameters: parameters)
    key = try MemoArchive.deriveKey(passphrase, salt: salt, parameters: parameters)
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    try PrivateFiles.writeAll(fd, header, path: destination)
  }

  public func append(_ memo: Memo) throws {
    let record = MemoArchive.Record(
      id: memo.id.rawValue, title: memo.title, body: memo.body, tags: memo.tags, created: memo.created,
      updated: memo.updated, private: memo.isPrivate, revision: memo.revision, origin: memo.origin.text)
    buffered.append(contentsOf: try encoder.encode(record))
    buffered.append(0x0A)
    count += 1
    if buffered.count >= MemoArchive.chunkTarget { try rotate() }
  }

  /// Seals the last chunk with the final flag. An archive without it is truncated.
  public func finish() throws {
    if !buffered.isEmpty || !hasPending { try rotate() }
    try emit(pending, final: true)
  }

  /// Keeps one chunk back, because only the last one carries the final flag.
  private func rotate() throws {
    if hasPending { try emit(pending, final: false) }
    pending = buffered
    buffered = []
    hasPending = true
  }

  private func emit(_ plaintext: [UInt8], final: Bool) throws {
    let sealed: [UInt8]
    do {
      sealed = try key.seal(
        plaintext, associatedData: MemoArchive.associatedData(header: header, index: index, final: final))
    } catch {
      throw MemoPeerError(.crypto, "sealing the archive failed", diagnostics: "\(error)")
    }
    index += 1
    try PrivateFiles.writeAll(
      fd, withUnsafeBytes(of: UInt32(sealed.count).bigEndian, Array.init) + sealed, path: destination)
  }
}

/// Reads and authenticates an archive. `forEachMemo` checks every chunk, the order and the
/// final flag; nothing it yields comes from an unauthenticated byte.
public final class MemoArchiveReader {
  private let bytes: [UInt8]
  private let header: [UInt8]
  private let key: AES256GCMKey
  private let source: String

  /// Largest archive `import` reads (the store's own limits bound what is inside).
  public static let maxArchiveBytes = 2 << 30

  public init(bytes: [UInt8], source: String, passphrase: SecureBytes) throws {
    self.bytes = bytes
    self.source = source
    let parameters = try Self.parameters(bytes, source: source)
    header = Array(bytes[0..<MemoArchive.headerSize])
    key = try MemoArchive.deriveKey(passphrase, salt: Array(bytes[13..<MemoArchive.headerSize]), parameters: parameters)
  }

  /// Checks the header (magic, format, KDF) and returns its scrypt costs, refusing any above
  /// `ScryptParameters.maximumMemory` before anything is derived. `@_spi(Fuzzing) public`:
  /// the header decoder Tests/Fuzz (`archive`) runs.
  @_spi(Fuzzing) public static func parameters(_ bytes: [UInt8], source: String) throws -> ScryptParameters {
    guard bytes.count >= MemoArchive.headerSize, Array(bytes[0..<8]) == MemoArchive.magic else {
      throw MemoPeerError(.archive, "\(source) is not a memo-peer archive", remedy: .exportArchive)
    }
    guard bytes[8] == MemoArchive.version, bytes[9] == MemoArchive.kdfScrypt else {
      throw MemoPeerError(
        .archive, "\(source) uses archive format \(bytes[8]), which this memo-peer does not know",
        hint: "upgrade memo-peer")
    }
    let log2N = bytes[10]
    let parameters = ScryptParameters(
      n: log2N < 64 ? 1 << UInt64(log2N) : 0, r: UInt32(bytes[11]), p: UInt32(bytes[12]))
    guard parameters.isAcceptable else {
      throw MemoPeerError(
        .archive, parameters.refusal(source), hint: "an archive memo-peer wrote never asks for more: it is damaged")
    }
    return parameters
  }

  /// A reader with its key already derived: the fuzz targets walk chunks sealed under a
  /// fixed key without paying for scrypt on every input (`@_spi(Fuzzing) public` for them).
  @_spi(Fuzzing) public init(bytes: [UInt8], source: String, key: AES256GCMKey) throws {
    guard bytes.count >= MemoArchive.headerSize else {
      throw MemoPeerError(.archive, "\(source) is not a memo-peer archive")
    }
    self.bytes = bytes
    self.source = source
    self.header = Array(bytes[0..<MemoArchive.headerSize])
    self.key = key
  }

  /// Calls `body` for every memo, in archive order.
  public func forEachMemo(_ body: (Memo) throws -> Void) throws {
    var offset = MemoArchive.headerSize
    var index: UInt64 = 0
    let decoder = JSONDecoder()
    while true {
      guard offset + 4 <= bytes.count else { throw truncated() }
      let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
      offset += 4
      guard length <= MemoArchive.maxSealedChunk, offset + length <= bytes.count else { throw truncated() }
      let sealed = Array(bytes[offset..<(offset + length)])
      offset += length
      let isLast = offset == bytes.count
      let plaintext: [UInt8]
      do {
        plaintext = try key.open(
          sealed, associatedData: MemoArchive.associatedData(header: header, index: index, final: isLast))
      } catch {
        // A last chunk that opens as a non-final one means the file was cut at a boundary.
        let notFinal = MemoArchive.associatedData(header: header, index: index, final: false)
        if isLast, (try? key.open(sealed, associatedData: notFinal)) != nil { throw truncated() }
        if index == 0 {
          throw MemoPeerError(
            .passphrase, "the passphrase does not open \(source), or the archive is damaged",
            hint: "check the passphrase and try again")
        }
        throw isLast ? truncated() : damaged()
      }
      for line in plaintext.split(separator: 0x0A) {
        // Numbers as peers accept them (a memo imported with others would stop every sync).
        guard let record = try? decoder.decode(MemoArchive.Record.self, from: Data(line)),
          let id = MemoID(record.id), record.revision >= 1, record.revision <= SyncLimits.maximumRevision,
          SyncLimits.timestamps.contains(record.created), SyncLimits.timestamps.contains(record.updated),
          let origin = MemoOrigin(record.origin)
        else { throw damaged() }
        try body(
          Memo(
            id: id, title: record.title, body: record.body, tags: record.tags, created: record.created,
            updated: record.updated, isPrivate: record.private, revision: record.revision, origin: origin))
      }
      index += 1
      if isLast { return }
    }
  }

  private func truncated() -> MemoPeerError {
    MemoPeerError(.archive, "\(source) is truncated: its last part is missing", hint: "export it again")
  }

  private func damaged() -> MemoPeerError {
    MemoPeerError(.archive, "\(source) is damaged (a part failed its integrity check)", hint: "export it again")
  }
}

import FoundationEssentials
import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The append-only consent log: `state/consent.jsonl`, 0600, one JSON record per line
/// (docs/FORMATS.md). Records are only ever appended, with O_APPEND and fsync, so the log is
/// an audit trail of every decision and how it was made.
public struct ConsentLog: Sendable {
  public let path: String
  let directory: String

  public init(paths: NodePaths) {
    directory = paths.stateDirectory
    path = paths.stateDirectory + "/consent.jsonl"
  }

  /// Every record, oldest first. An unterminated last line (a write cut by a crash) is
  /// ignored; any other damage is an error, so a damaged log never reads as a grant.
  public func records() throws -> [ConsentRecord] {
    guard PrivateFiles.exists(path) else { return [] }
    try PrivateFiles.checkPrivate(path, role: "consent log", expectedMode: "600")
    return try Self.parse(try PrivateFiles.read(path, limit: 16 << 20), path: path)
  }

  /// The records of a log's bytes (the decoder the fuzz targets run): an unterminated last
  /// line is ignored, any other damage is an error naming `path` and the line.
  /// `@_spi(Fuzzing) public`: Tests/Fuzz reaches it without `@testable import`.
  @_spi(Fuzzing) public static func parse(_ bytes: [UInt8], path: String) throws -> [ConsentRecord] {
    var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    if let last = lines.last, bytes.last != 0x0A || last.isEmpty { lines.removeLast() }
    let decoder = JSONDecoder()
    return try lines.enumerated().map { index, line in
      guard let record = try? decoder.decode(ConsentRecord.self, from: Data(line)), record.version == 1 else {
        throw MemoPeerError(
          .storage,
          "the consent log \(path) is damaged at line \(index + 1); nothing uses the network until it is fixed",
          remedy: .recordConsentAgain)
      }
      return record
    }
  }

  /// Appends one record durably.
  public func append(_ record: ConsentRecord) throws {
    try PrivateFiles.ensureDirectory(directory, role: "state directory")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let line = Array(try encoder.encode(record)) + [0x0A]
    let fd = try PrivateFiles.call("open", orThrow: "cannot write the consent log \(path)") {
      open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    }
    defer { close(fd) }
    try PrivateFiles.checkPrivate(path, role: "consent log", expectedMode: "600")
    try PrivateFiles.writeAll(fd, line, path: path)
    try PrivateFiles.call("fsync", orThrow: "cannot flush the consent log") { fsync(fd) }
  }
}

import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem

/// `state/pairing-attempts.json`: the counted pairing failures of the last ten minutes
/// (`PairingAttempts`), kept across windows so that closing and reopening one does not reset
/// the limit. Version 1: `{"version": 1, "failures": [ms, …]}` (docs/FORMATS.md). Changed
/// under an exclusive `flock`, written atomically.
public struct PairingAttemptStore: Sendable {
  public let path: String
  let directory: String

  public init(paths: NodePaths) {
    directory = paths.stateDirectory
    path = paths.stateDirectory + "/pairing-attempts.json"
  }

  struct File: Codable {
    var version = 1
    var failures: [Timestamp]
  }

  /// The recorded failures; none when the file does not exist. A damaged file is an error:
  /// it never reads as "no failures".
  public func load() throws -> PairingAttempts {
    guard PrivateFiles.exists(path) else { return PairingAttempts() }
    return try Self.parse(try PrivateFiles.read(path, limit: 64 << 10), path: path)
  }

  /// The attempts in a file's bytes (the decoder the fuzz targets run); errors name `path`.
  /// `@_spi(Fuzzing) public`: Tests/Fuzz reaches it without `@testable import`.
  @_spi(Fuzzing) public static func parse(_ bytes: [UInt8], path: String) throws -> PairingAttempts {
    guard let file = try? JSONDecoder().decode(File.self, from: Data(bytes)), file.version == 1 else {
      throw MemoPeerError(
        .storage, "the pairing attempts record \(path) is damaged, so pairing is refused",
        hint: "remove the file to pair again")
    }
    return PairingAttempts(failures: file.failures)
  }

  /// Loads, changes and saves under an exclusive lock (the host's window and a guest may
  /// record at the same moment).
  @discardableResult
  public func update<T>(_ change: (inout PairingAttempts) throws -> T) throws -> T {
    try PrivateFiles.ensureDirectory(directory, role: "state directory")
    return try PrivateFiles.withExclusiveLock(path + ".lock") {
      var attempts = try load()
      let before = attempts
      let result = try change(&attempts)
      if attempts != before {
        try PrivateFiles.writeAtomically(
          Array(try JSONEncoder().encode(File(failures: attempts.failures))) + [0x0A], to: path)
      }
      return result
    }
  }
}

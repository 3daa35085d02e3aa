import MemoCore

/// Where one node keeps its files. The key directory is deliberately separate from the data
/// directory: backing up or copying the data directory never copies the device key.
public struct NodePaths: Sendable, Equatable {
  /// Sealed memos (`memos.sqlite`). Safe to back up; useless without the key.
  public let dataDirectory: String
  /// The device key. Device-only: never exported, never backed up by memo-peer.
  public let keyDirectory: String
  /// Node state that is not user data (consent records, later issues).
  public let stateDirectory: String
  /// User configuration.
  public let configDirectory: String

  public var databasePath: String { dataDirectory + "/memos.sqlite" }
  public var deviceKeyPath: String { keyDirectory + "/device.key" }
  /// Seals a copy of the titles of memos not marked private (listable while locked).
  public var listingKeyPath: String { keyDirectory + "/listing.key" }

  public init(dataDirectory: String, keyDirectory: String, stateDirectory: String, configDirectory: String) {
    self.dataDirectory = dataDirectory
    self.keyDirectory = keyDirectory
    self.stateDirectory = stateDirectory
    self.configDirectory = configDirectory
  }

  /// `MEMO_PEER_HOME=H` puts everything under H (tests, several nodes on one machine);
  /// otherwise the XDG base directories: data in `$XDG_DATA_HOME/memo-peer`, state and
  /// keys in `$XDG_STATE_HOME/memo-peer`, config in `$XDG_CONFIG_HOME/memo-peer`.
  public static func resolve(environment: [String: String]) throws -> NodePaths {
    if let home = environment["MEMO_PEER_HOME"], !home.isEmpty {
      let root = try absolute(home, variable: "MEMO_PEER_HOME")
      return NodePaths(
        dataDirectory: root + "/data", keyDirectory: root + "/keys", stateDirectory: root + "/state",
        configDirectory: root + "/config")
    }
    func base(_ variable: String, _ fallback: String) throws -> String {
      if let value = environment[variable], value.hasPrefix("/") { return value }
      guard let home = environment["HOME"], home.hasPrefix("/") else {
        throw MemoPeerError(
          .usage, "neither \(variable) nor HOME is set to an absolute path",
          hint: "set HOME, or MEMO_PEER_HOME to the directory memo-peer should use")
      }
      return home + "/" + fallback
    }
    let state = try base("XDG_STATE_HOME", ".local/state") + "/memo-peer"
    return NodePaths(
      dataDirectory: try base("XDG_DATA_HOME", ".local/share") + "/memo-peer",
      keyDirectory: state + "/keys", stateDirectory: state,
      configDirectory: try base("XDG_CONFIG_HOME", ".config") + "/memo-peer")
  }

  private static func absolute(_ path: String, variable: String) throws -> String {
    guard path.hasPrefix("/") else {
      throw MemoPeerError(.usage, "\(variable) must be an absolute path", hint: "for example \(variable)=$PWD/node-a")
    }
    var trimmed = path
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
    return trimmed
  }
}

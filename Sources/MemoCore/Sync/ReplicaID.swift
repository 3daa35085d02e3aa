/// A replica's identity: 16 random bytes in lowercase hex (32 characters), made once per
/// database (`meta.replica_id`). Dots and version vectors name replicas by it; it says
/// nothing about which device holds the database (a device may have several over time).
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let rawValue: String

  /// Accepts exactly 32 lowercase hex digits (the form this program writes and sends).
  public init?(_ text: String) {
    guard SyncLimits.isReplicaID(text) else { return nil }
    rawValue = text
  }

  /// For text this program wrote itself and already checked (the store's own rows).
  init(trusted text: String) { rawValue = text }

  public var description: String { rawValue }
  /// The first 8 digits, as logs and `--debug` show a replica.
  public var short: String { String(rawValue.prefix(8)) }

  public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// In JSON a replica id is its text; anything else is a decoding error (the sync refuses
/// such a message as malformed).
extension ReplicaID: Codable {
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    guard let id = ReplicaID(try container.decode(String.self)) else {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a replica id")
    }
    self = id
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(rawValue)
  }
}

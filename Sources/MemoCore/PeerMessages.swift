import Foundation

/// Payloads of the control frames (docs/PROTOCOL.md): small JSON objects, so a field can
/// be added without a new protocol version (receivers ignore fields they do not know).
public enum PeerMessage {
  /// `hello`: the first frame each side sends on a trusted connection.
  public struct Hello: Codable, Equatable, Sendable {
    public var protocolVersion: Int
    /// The sender's discovery key (base64), so a peer added with `trust add` learns it.
    public var discoveryKey: String
    /// The sender's advertisement rotation period, needed to recompute its tags.
    public var rotationSeconds: Int64?

    public init(discoveryKey: String, rotationSeconds: Int64) {
      protocolVersion = 1
      self.discoveryKey = discoveryKey
      self.rotationSeconds = rotationSeconds
    }

    enum CodingKeys: String, CodingKey {
      case protocolVersion = "protocol"
      case discoveryKey = "discovery_key"
      case rotationSeconds = "rotation_seconds"
    }
  }

  /// `pair-confirm`: sent once this side's person confirmed the code.
  public struct PairConfirm: Codable, Equatable, Sendable {
    /// The name the sender's person chose for their device.
    public var name: String
    public var discoveryKey: String
    public var rotationSeconds: Int64?

    public init(name: String, discoveryKey: String, rotationSeconds: Int64) {
      self.name = name
      self.discoveryKey = discoveryKey
      self.rotationSeconds = rotationSeconds
    }

    enum CodingKeys: String, CodingKey {
      case name
      case discoveryKey = "discovery_key"
      case rotationSeconds = "rotation_seconds"
    }
  }

  /// `goodbye`: why the sender is closing (a stable reason code, never user content).
  public struct Goodbye: Codable, Equatable, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
  }

  public static func encode(_ value: some Encodable) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
  }

  /// Decodes a payload; nil if it is not the expected message (the caller closes the
  /// connection as a protocol violation).
  public static func decode<T: Decodable>(_ type: T.Type, from payload: [UInt8]) -> T? {
    try? JSONDecoder().decode(type, from: Data(payload))
  }

  /// A discovery key as carried in messages: 32 bytes, base64.
  public static func isValidDiscoveryKey(_ text: String) -> Bool { Data(base64Encoded: text)?.count == 32 }
}

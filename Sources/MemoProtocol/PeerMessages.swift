import FoundationEssentials
import MemoCore

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
    /// The highest delivery version the sender answers (docs/PROTOCOL.md, "Batched
    /// delivery"): 2 for `deliver-batch`; absent (1) from a node that knows only `deliver`,
    /// which a sender then delivers to one entry at a time.
    public var delivery: Int?
    /// The TCP port the sender's daemon listens on (absent: it does not, as a command
    /// does not), so that the device it dialled can dial it back at the address it came
    /// from when DNS-SD does not show it (docs/PROTOCOL.md, "Addresses without DNS-SD").
    /// An Int on the wire: a value out of range is ignored (`announcedPort`), not a reason
    /// to refuse the whole hello.
    public var listenPort: Int?
    /// The numeric addresses the sender's daemon listens on now, with `listenPort`
    /// (absent: it does not say). Checked by `AnnouncedAddresses.check`: a bad list is
    /// refused whole and logged, the hello itself still stands.
    public var listenAddresses: [String]?

    /// The protocol this version speaks; a peer's hello with another is refused.
    public static let protocolVersion = 1

    public init(
      discoveryKey: String, rotationSeconds: Int64, delivery: Int? = DeliveryMessage.batchVersion,
      listenPort: UInt16? = nil, listenAddresses: [String]? = nil
    ) {
      protocolVersion = Self.protocolVersion
      self.discoveryKey = discoveryKey
      self.rotationSeconds = rotationSeconds
      self.delivery = delivery
      self.listenPort = listenPort.map(Int.init)
      self.listenAddresses = listenAddresses
    }

    /// The sender's listening port when it gave one from 1 to 65535; nil otherwise.
    public var announcedPort: UInt16? {
      guard let listenPort, (1...65535).contains(listenPort) else { return nil }
      return UInt16(listenPort)
    }

    /// Whether the peer that sent this hello takes `deliver-batch` frames.
    public var takesDeliveryBatches: Bool { (delivery ?? 1) >= DeliveryMessage.batchVersion }

    enum CodingKeys: String, CodingKey {
      case delivery
      case listenPort = "listen_port"
      case listenAddresses = "listen_addresses"
      case protocolVersion = "protocol"
      case discoveryKey = "discovery_key"
      case rotationSeconds = "rotation_seconds"
    }
  }

  /// `pair-commit` (host): the host's commitment to its nonce, before it sees the guest's.
  public struct PairCommit: Codable, Equatable, Sendable {
    /// SHA-256 (32 bytes), base64.
    public var commitment: String
    public init(commitment: String) { self.commitment = commitment }
  }

  /// `pair-nonce` (guest) and `pair-reveal` (host): a side's 32-byte nonce, base64.
  public struct PairNonce: Codable, Equatable, Sendable {
    public var nonce: String
    public init(nonce: String) { self.nonce = nonce }
  }

  /// `pair-confirm`: sent once this side's person confirmed the code. Carries the name the
  /// sender's person chose for their device; no key (that waits for both confirmations).
  public struct PairConfirm: Codable, Equatable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
  }

  /// `pair-key`: sent only once both people confirmed (this side's own answer and the other's
  /// `pair-confirm`): the sender's discovery key and rotation, to be stored with its name.
  public struct PairKey: Codable, Equatable, Sendable {
    public var discoveryKey: String
    public var rotationSeconds: Int64

    public init(discoveryKey: String, rotationSeconds: Int64) {
      self.discoveryKey = discoveryKey
      self.rotationSeconds = rotationSeconds
    }

    enum CodingKeys: String, CodingKey {
      case discoveryKey = "discovery_key"
      case rotationSeconds = "rotation_seconds"
    }
  }

  /// `pair-refuse`: the pairing ends and nothing is stored; the reason is a stable code.
  public struct PairRefuse: Codable, Equatable, Sendable {
    public enum Reason: String, Codable, Sendable {
      /// The person refused (the codes differ, or they changed their mind).
      case refused
      /// The host's reveal does not match its commitment.
      case commitment
      /// The other side broke the protocol (an unexpected or malformed frame, a bad name).
      case protocolError = "protocol"
    }

    public var reason: String?
    public init(reason: Reason) { self.reason = reason.rawValue }
  }

  /// `goodbye`: why the sender is closing (a stable reason code, never user content).
  public struct Goodbye: Codable, Equatable, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
  }

  /// The checks of a peer's `hello`: the protocol this node speaks (1), a 32-byte
  /// discovery key, and a rotation in `Advertisement.rotationRange` (1–604,800 s; a
  /// larger one would overflow the tag arithmetic when the device is recognised).
  public static func check(_ hello: Hello) throws(TransportError) {
    guard hello.protocolVersion == Hello.protocolVersion else {
      throw TransportError(
        .protocolViolation, "the peer speaks protocol \(hello.protocolVersion), this node \(Hello.protocolVersion)")
    }
    guard isValidDiscoveryKey(hello.discoveryKey) else {
      throw TransportError(.protocolViolation, "a hello without a valid discovery key")
    }
    if let rotation = hello.rotationSeconds, !Advertisement.rotationRange.contains(rotation) {
      throw TransportError(.protocolViolation, "a hello whose rotation is outside 1–604800 s")
    }
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

  /// Exactly `count` bytes in base64, or nil.
  public static func bytes(base64 text: String, count: Int) -> [UInt8]? {
    guard let data = Data(base64Encoded: text), data.count == count else { return nil }
    return Array(data)
  }
}

/// One device this node trusts: pinned by the fingerprint of its key, as SSH pins host keys.
public struct TrustedPeer: Codable, Sendable, Equatable {
  /// How the peer came to be trusted (shown in `trust list`, kept in the file for audit).
  public enum Source: String, Codable, Sendable {
    /// Both people compared the six-digit code.
    case pairing
    /// `memo-peer trust add DEVICE-ID` (headless hosts).
    case command
  }

  /// The pinned key's fingerprint (compact base32 in the file).
  public var deviceID: DeviceID
  public var name: String
  /// The peer's discovery key (32 bytes, base64): recognises its rotating advertisement.
  /// Nil until pairing, or the first trusted connection, delivers it.
  public var discoveryKey: String?
  /// The peer's advertisement rotation period (seconds), learned with its discovery key.
  public var rotationSeconds: Int64?
  public var source: Source
  public var added: Timestamp
  /// What to do with memos this peer sends (nil: the default, `ask`).
  public var receive: ReceivePolicy?
  /// True after a revocation was applied here: every device of the household rotates its
  /// discovery key then, so the key held may be an old one. Until the peer's next hello
  /// gives the current one, its advertisements may not be recognised, and every memo-peer
  /// advertisement this node does not recognise is tried (the pinned key picks the right
  /// one). Nil or false: the key is current.
  public var discoveryKeyStale: Bool?
  /// Addresses a person gave (`trust address PEER add`), tried when DNS-SD does not show
  /// the peer: a home server on another subnet or VLAN. Nil: none.
  public var addresses: [PeerAddress]?
  /// Where the peer was reached, newest first, at most `ReachedAddress.maximumKept`: tried
  /// when DNS-SD does not show it (a home network that filters multicast). Nil: never.
  public var reached: [ReachedAddress]?
  /// Where the peer's daemon said it listens, in its last hello (`listen_addresses`):
  /// tried after where it was last reached. Nil: it never said.
  public var announced: AnnouncedAddresses?

  public init(
    deviceID: DeviceID, name: String, discoveryKey: String?, rotationSeconds: Int64? = nil, source: Source,
    added: Timestamp
  ) {
    self.deviceID = deviceID
    self.name = name
    self.discoveryKey = discoveryKey
    self.rotationSeconds = rotationSeconds
    self.source = source
    self.added = added
  }

  /// The name as a terminal may show it: the trust store may hold a name a peer chose
  /// (`pair-confirm`), or a file another program wrote.
  public var displayName: String { name.terminalSafe }

  enum CodingKeys: String, CodingKey {
    case deviceID = "device_id"
    case name
    case discoveryKey = "discovery_key"
    case rotationSeconds = "rotation_seconds"
    case source
    case added
    case receive
    case discoveryKeyStale = "discovery_key_stale"
    case addresses
    case reached
    case announced
  }
}

/// The trust store's content and its rules (file format: docs/FORMATS.md, `trusted-peers.json`).
public struct TrustList: Codable, Sendable, Equatable {
  public static let currentVersion = 1
  public static let maximumNameLength = 64

  public var version: Int
  public internal(set) var peers: [TrustedPeer]

  public init(peers: [TrustedPeer] = []) {
    version = Self.currentVersion
    self.peers = peers
  }

  public var deviceIDs: Set<DeviceID> { Set(peers.map(\.deviceID)) }

  public func peer(for id: DeviceID) -> TrustedPeer? { peers.first { $0.deviceID == id } }

  /// Finds a peer by name (exact, any case) or by device ID prefix.
  public func find(_ reference: String) throws -> TrustedPeer {
    if let named = peers.first(where: { $0.name.lowercased() == reference.lowercased() }) { return named }
    let matches = peers.filter { $0.deviceID.hasPrefix(reference) }
    switch matches.count {
    case 1: return matches[0]
    case 0:
      throw MemoPeerError(
        .notFound, "no trusted peer is named or has a device ID starting with \(Self.quoted(reference))",
        remedy: .listTrusted)
    default:
      throw MemoPeerError(
        .ambiguousID, "\(Self.quoted(reference)) matches \(matches.count) trusted peers",
        hint: "give more characters of the device ID, or the peer's name")
    }
  }

  /// Adds a peer, or updates the name and discovery key of one already trusted.
  public mutating func trust(_ peer: TrustedPeer) throws {
    try Self.validate(name: peer.name)
    if let other = peers.first(where: { $0.name.lowercased() == peer.name.lowercased() && $0.deviceID != peer.deviceID }
    ) {
      throw MemoPeerError(
        .invalidInput, "the name \(Self.quoted(peer.name)) is already used by device \(other.deviceID.short)",
        hint: "choose another name with --name")
    }
    if let index = peers.firstIndex(where: { $0.deviceID == peer.deviceID }) {
      peers[index].name = peer.name
      peers[index].discoveryKey = peer.discoveryKey ?? peers[index].discoveryKey
      peers[index].rotationSeconds = peer.rotationSeconds ?? peers[index].rotationSeconds
    } else {
      peers.append(peer)
    }
  }

  /// Records a discovery key (and rotation period) learned on a trusted connection.
  /// False if nothing changed.
  public mutating func learnDiscoveryKey(_ key: String, rotationSeconds: Int64?, for id: DeviceID) -> Bool {
    guard let index = peers.firstIndex(where: { $0.deviceID == id }),
      peers[index].discoveryKey != key || peers[index].rotationSeconds != rotationSeconds
        || peers[index].discoveryKeyStale == true
    else { return false }
    peers[index].discoveryKey = key
    peers[index].rotationSeconds = rotationSeconds
    peers[index].discoveryKeyStale = nil
    return true
  }

  /// Marks every peer's discovery key as possibly old (a revocation was applied: each
  /// device of the household rotates its key). False when there is no peer.
  public mutating func markDiscoveryKeysStale() -> Bool {
    guard !peers.isEmpty else { return false }
    for index in peers.indices where peers[index].discoveryKey != nil { peers[index].discoveryKeyStale = true }
    return true
  }

  /// Sets what to do with memos a peer sends; returns the peer as updated.
  public mutating func setReceivePolicy(_ policy: ReceivePolicy, for reference: String) throws -> TrustedPeer {
    let peer = try find(reference)
    guard let index = peers.firstIndex(where: { $0.deviceID == peer.deviceID }) else { return peer }
    peers[index].receive = policy
    return peers[index]
  }

  public mutating func rename(_ reference: String, to name: String) throws -> TrustedPeer {
    let peer = try find(reference)
    var renamed = peer
    renamed.name = name
    try trust(renamed)
    return renamed
  }

  public mutating func remove(_ reference: String) throws -> TrustedPeer {
    let peer = try find(reference)
    peers.removeAll { $0.deviceID == peer.deviceID }
    return peer
  }

  /// `name`, or `name (2)`, `name (3)` … if another device already has it.
  public func availableName(_ name: String, for id: DeviceID) -> String {
    func taken(_ candidate: String) -> Bool {
      peers.contains { $0.name.lowercased() == candidate.lowercased() && $0.deviceID != id }
    }
    var candidate = name
    var number = 2
    while taken(candidate) && number < 1000 {
      candidate = "\(name.prefix(Self.maximumNameLength - 6)) (\(number))"
      number += 1
    }
    return candidate
  }

  /// A name people give a device: 1–64 printable characters (no control, bidirectional or
  /// other format character: `DeviceName.isPrintable`), not starting with a dash (it would
  /// read as an option).
  public static func validate(name: String) throws {
    guard DeviceName.isPrintable(name), name.count <= maximumNameLength, !name.hasPrefix("-") else {
      throw MemoPeerError(
        .invalidInput,
        "a peer name must be 1 to \(maximumNameLength) printable characters, without leading or trailing spaces and not starting with -",
        hint: "for example --name laptop")
    }
  }

  static func quoted(_ text: String) -> String { "“" + TerminalText.display(text) + "”" }
}

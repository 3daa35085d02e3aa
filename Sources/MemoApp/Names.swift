import MemoCore
import MemoStore
import MemoVault

/// Names of notebooks and of trusted devices, read once per use, for memo lines and notebook
/// output. A node that cannot read its trust store (locked) names devices by ID.
public struct Names: Sendable {
  public var notebooks: [NotebookID: Notebook] = [:]
  public var devices: [DeviceID: String] = [:]
  /// This device, whose revisions are "this device".
  public var me: DeviceID?

  /// What an unsigned revision's author shows as.
  public static let unsigned = "unsigned (before version 3)"

  public init(store: MemoStore?, trust: TrustStore?) {
    me = store?.ownDeviceID()
    for notebook in (try? store?.notebooks()) ?? [] { notebooks[notebook.id] = notebook }
    if let peers = try? trust?.load().peers {
      for peer in peers { devices[peer.deviceID] = peer.name }
    }
  }

  /// The notebook's name, nil for a relayed one (or one this device does not know).
  public func notebook(_ id: NotebookID?) -> String? { id.flatMap { notebooks[$0]?.name } }

  /// A device as a person reads it: its trusted name, escaped, or its ID's first groups.
  public func device(_ id: DeviceID) -> String { devices[id].map(\.terminalSafe) ?? id.short + "…" }

  /// Who signed a revision, as a person reads it: "this device", a trusted device's name
  /// (escaped) or the start of its ID, or `unsigned (before version 3)`.
  public func author(_ id: DeviceID?) -> String {
    guard let id else { return Self.unsigned }
    return id == me ? "this device" : device(id)
  }

  /// A trusted device's name as it was given (for JSON, which escapes it itself); nil for a
  /// device with no name here.
  public func rawName(_ id: DeviceID) -> String? { devices[id] }

  /// Whether a memo in `id` needs its notebook named in a listing (not the default one).
  public func isOther(_ id: NotebookID?) -> Bool { id.flatMap { notebooks[$0] }.map { !$0.isDefault } ?? false }
}

/// Trusted devices' names, for outbox and inbox listings; a device no longer trusted, or
/// any device while the node is locked (the trust store is sealed then), shows as the start
/// of its compact ID.
public struct PeerNames: Sendable {
  private let names: [DeviceID: String]

  public init(trust: TrustStore) throws {
    let peers: [TrustedPeer]
    do { peers = try trust.load().peers } catch let error as MemoPeerError
      where error.code == .locked
    { peers = [] }
    names = Dictionary(peers.map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
  }

  /// The name for an outbox entry's recipient or an inbox entry's sender (nil: a row that
  /// names no device).
  public subscript(device: DeviceID?) -> String {
    guard let device else { return Self.noDevice }
    return names[device] ?? String(device.compact.prefix(8)) + "…"
  }

  /// What a row that names no device shows as.
  public static let noDevice = "no device"
}

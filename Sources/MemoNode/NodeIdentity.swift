import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoSystem
import MemoTransport
import MemoVault

/// Everything that says who this node is: the Ed25519 identity (device ID, TLS
/// certificate) and the discovery key (rotating advertisement). Both are created together
/// on first use and never leave the key directory, except that the discovery key is given
/// to peers this node trusts. On a node with a passphrase both are sealed under the device
/// key (`NodeSecrets`): while it is locked, `load` fails with `locked`, and the node cannot
/// prove who it is.
public struct NodeIdentity: Sendable {
  public let device: DeviceIdentity
  public let advertisement: AdvertisementIdentity
  /// The discovery key in base64, as `hello` and `pair-confirm` carry it.
  public let discoveryKeyBase64: String
  /// The port this node's daemon listens on, given in its hellos (nil: not listening, as a
  /// command): the device it dials remembers it at the address the dial came from.
  public var listenPort: UInt16? = nil
  /// The numeric addresses the daemon listens on now (`NetworkInterfaces.listenAddresses`),
  /// given in its hellos with `listenPort`; nil: not said.
  public var listenAddresses: [String]? = nil
  /// The network this node is on (`NetworkIdentity`): where it reaches a peer, or hears
  /// where one listens, is remembered for that network only. Nil: not known.
  public var network: String? = nil

  /// `rotationSeconds` nil: the config's period, or the default.
  public static func load(paths: NodePaths, rotationSeconds: Int64? = nil) throws -> NodeIdentity {
    let rotation =
      try rotationSeconds ?? NodeConfig.load(paths: paths).rotationSeconds ?? Advertisement.defaultRotationSeconds
    let secrets = NodeSecrets(paths: paths)
    let seed = try secrets.identitySeed()
    let discovery = try secrets.discoveryKey()
    let device: DeviceIdentity
    do { device = try DeviceIdentity(seed: seed) } catch {
      throw MemoPeerError(.crypto, "could not make the device identity", diagnostics: error.description)
    }
    let base64 = discovery.withUnsafeBytes { Data($0).base64EncodedString() }
    return NodeIdentity(
      device: device, advertisement: AdvertisementIdentity(key: discovery, rotationSeconds: rotation),
      discoveryKeyBase64: base64)
  }

  public var deviceID: DeviceID { device.deviceID }

  /// This device's ID, also while the node is locked (a sealed identity keeps its public key
  /// in clear).
  public static func deviceID(paths: NodePaths) throws -> DeviceID {
    do { return try DeviceIdentity.deviceID(publicKey: try NodeSecrets(paths: paths).identityPublicKey()) } catch let
      error as TransportError
    {
      throw MemoPeerError(.crypto, "could not compute the device ID", diagnostics: error.description)
    }
  }
}

extension AdvertisementIdentity {
  /// A recogniser for a peer's advertisements, from the discovery key it gave us.
  public static func peer(_ peer: TrustedPeer) -> AdvertisementIdentity? {
    guard let text = peer.discoveryKey, let data = Data(base64Encoded: text), data.count == 32 else { return nil }
    return AdvertisementIdentity(
      key: SecureBytes(copying: data),
      rotationSeconds: peer.rotationSeconds ?? Advertisement.defaultRotationSeconds)
  }
}

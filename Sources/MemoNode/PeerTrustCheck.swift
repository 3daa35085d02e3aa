import MemoCore
import MemoProtocol
import MemoVault

/// Whether the peer of a session in progress is still trusted, asked at each step where
/// the session would act on what the peer sent (a frame it answers, a batch it stores, a
/// keepalive it counts). `trust remove` must hold at once: once the command has written the
/// trust store, nothing the removed device sends is applied, whatever the daemon is doing
/// and however long the session has been open. The check is `TrustedDevices.stillTrusts`:
/// one stat of the trust file, a read only when it changed.
public struct PeerTrustCheck: Sendable {
  private let trusts: @Sendable (DeviceID) -> Bool

  public init(_ trusts: @escaping @Sendable (DeviceID) -> Bool) { self.trusts = trusts }

  /// The daemon's shared set: the file decides, its loop's reload is not awaited.
  public init(following devices: TrustedDevices) { self.init { devices.stillTrusts($0) } }

  /// A set of its own following `store`, for a session outside the daemon (`sync`).
  public init(following store: TrustStore) { self.init(following: TrustedDevices(following: store)) }

  /// For tests that run sessions between bare stores, with no trust store to follow.
  public static let unchecked = PeerTrustCheck { _ in true }

  /// Whether `peer` is trusted now.
  public func trusts(_ peer: DeviceID) -> Bool { trusts(peer) }

  /// Throws `untrustedPeer` when `peer` is no longer trusted: the session ends and applies
  /// nothing more of it.
  public func require(_ peer: DeviceID) throws(TransportError) {
    guard trusts(peer) else { throw Self.removed(peer) }
  }

  /// The end of a session whose peer was removed from the trust store while it ran.
  public static func removed(_ peer: DeviceID) -> TransportError {
    TransportError(
      .untrustedPeer,
      "\(peer.short) was removed from the trust store during the session: nothing it sent since is applied",
      presented: peer)
  }

  /// The `goodbye` reason a session ended this way sends (best effort) before it closes.
  public static let goodbyeReason = "untrusted"
}

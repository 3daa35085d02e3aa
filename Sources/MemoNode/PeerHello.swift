import MemoCore
import MemoProtocol
import MemoSystem
import MemoVault

/// What a trusted peer's hello on a pinned channel teaches about it, recorded in one trust-
/// store update by whichever side dialled: where it was reached (`reachedAt`), where its
/// daemon says it listens (`listen_addresses`, checked by `AnnouncedAddresses.check`), and its
/// discovery key. A bad announcement is refused whole and logged with the peer; the rest of
/// the hello still counts. `logger` nil: a command's dial, with no journal to tell.
enum PeerHello {
  /// Records what `hello` from `peer` says; whether the discovery key was new.
  static func record(
    _ hello: PeerMessage.Hello, from peer: DeviceID, reachedAt: PeerAddress?, withoutDNSSD: Bool? = nil,
    network: String?, trust: TrustStore, logger: Logger?, now: Timestamp
  ) throws -> Bool {
    if hello.listenPort != nil && hello.announcedPort == nil {
      logger?.warning(
        "\(peer.short, privacy: .public) gave a listen_port outside 1–65535 in its hello: ignored, nothing stored")
    }
    var announced: [PeerAddress]?
    do {
      announced = try AnnouncedAddresses.check(hello.listenAddresses, port: hello.announcedPort)
    } catch {
      logger?.warning(
        "\(peer.short, privacy: .public) sent a malformed address announcement (\(error.reason.terminalSafe, privacy: .public)): refused, nothing stored"
      )
    }
    return try trust.update {
      if let reachedAt {
        _ = $0.remember(reachedAt, network: network, at: now, for: peer, withoutDNSSD: withoutDNSSD)
      }
      if let announced { _ = $0.announce(announced, network: network, at: now, for: peer) }
      return $0.learnDiscoveryKey(hello.discoveryKey, rotationSeconds: hello.rotationSeconds, for: peer)
    }
  }
}

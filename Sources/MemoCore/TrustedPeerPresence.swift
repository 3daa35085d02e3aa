/// How many trusted (paired) peers are online now: the widget's "peers online" count.
///
/// An isolated input on purpose: the trust store (who is paired) is built by the pairing
/// issue, and the widget must not guess at it. Until then `NoTrustStoreYet` answers 0;
/// the pairing work replaces it with an implementation that counts paired peers currently
/// seen by discovery or connected. Contract: never blocks on the network, never throws (a
/// failure reads as 0), and never reveals who the peers are, only how many.
public protocol TrustedPeerPresence: Sendable {
  func onlineCount() -> Int
}

/// The stand-in until the trust store exists: there are no trusted peers, so none is online.
public struct NoTrustStoreYet: TrustedPeerPresence {
  public init() {}
  public func onlineCount() -> Int { 0 }
}

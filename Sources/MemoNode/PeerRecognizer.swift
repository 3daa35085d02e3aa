import MemoCore

/// Tells which sightings are trusted devices: a sighting's rotating tag is recomputed
/// under each trusted peer's discovery key. Nobody without the key can make that link.
public struct PeerRecognizer: Sendable {
  let recognizers: [(peer: TrustedPeer, identity: AdvertisementIdentity)]

  public init(trust: TrustList) {
    recognizers = trust.peers.compactMap { peer in AdvertisementIdentity.peer(peer).map { (peer, $0) } }
  }

  /// The trusted peer whose tag this is, if any.
  public func peer(forTag tag: String?, at time: Timestamp) -> TrustedPeer? {
    guard let tag else { return nil }
    return recognizers.first { $0.identity.recognizes(tag: tag, at: time) }?.peer
  }

  /// The sighting with `trustedName` filled in.
  public func annotate(_ sighting: PeerSighting, at time: Timestamp) -> PeerSighting {
    var annotated = sighting
    annotated.trustedName = peer(forTag: sighting.tag, at: time)?.name
    return annotated
  }
}

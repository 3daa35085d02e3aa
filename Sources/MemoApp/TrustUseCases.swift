import MemoCore
import MemoNode
import MemoStore
import MemoTransport

/// This device's identity and the devices it trusts (`id`, `trust`).
public struct TrustUseCases {
  let app: App

  /// This device's ID: public, so it is shown also while the node is locked.
  public func deviceID() throws -> DeviceID { try NodeIdentity.deviceID(paths: app.paths) }

  /// This device's self-signed TLS certificate (PEM); needs the node unlocked.
  public func certificatePEM() throws -> String {
    try NodeIdentity.load(paths: app.paths).device.certificatePEM()
  }

  public func list() throws -> TrustList { try app.trustStore.load() }

  /// Trusts a device by its ID (as `memo-peer id` prints it) without pairing. The notebooks
  /// in `sharing` are checked first: a typo in a name trusts nobody.
  public func add(_ text: String, name: String, sharing notebooks: [String] = [], addresses: [String] = [])
    throws -> TrustedPeer
  {
    guard let id = DeviceID(text) else {
      throw MemoPeerError(
        .invalidInput, "that is not a device ID (52 base32 characters, as `memo-peer id` prints)",
        hint: "copy the whole ID from `memo-peer id` on the other device")
    }
    let peer = TrustedPeer(deviceID: id, name: name, discoveryKey: nil, source: .command, added: app.now)
    let given = try addresses.map(address)
    guard given.count <= TrustList.maximumGivenAddresses else {
      throw MemoPeerError(.tooLarge, "at most \(TrustList.maximumGivenAddresses) addresses per device")
    }
    for notebook in notebooks { _ = try app.notebooks.find(notebook) }
    // A device revoked here is trusted again only by a person: what revoked it stops counting.
    try app.store().forgiveRevocations(of: id)
    // Each address once, however often it was given.
    return try app.trustStore.update {
      try $0.trust(peer)
      for address in given { _ = try $0.addAddress(address, for: id.compact) }
      return $0.peer(for: id) ?? peer
    }
  }

  /// An address a person typed (`HOST[:PORT]`); a name must resolve here and now, so a
  /// typo is caught while the person is there, not at every later dial.
  public func address(_ text: String) throws -> PeerAddress {
    let address: PeerAddress
    do {
      address = try PeerAddress.parse(text)
    } catch {
      throw MemoPeerError(
        .invalidInput, "not an address: \(error.reason)",
        hint: "give HOST[:PORT]: an IPv4 address, an IPv6 address ([fe80::1%eth0]:PORT), or a DNS name")
    }
    if address.isName {
      do {
        _ = try TLSClient.addresses(of: address.hostText)
      } catch {
        throw MemoPeerError(
          .invalidInput, "the name \(address.hostText) does not resolve on this machine",
          hint: "check the name (or give its IP address), and that this machine's resolver knows it",
          diagnostics: error.description)
      }
    }
    return address
  }

  /// Gives a trusted device an address to be dialled at when DNS-SD does not show it.
  public func addAddress(_ text: String, for reference: String) throws -> TrustedPeer {
    let address = try address(text)
    return try app.trustStore.update { try $0.addAddress(address, for: reference) }
  }

  /// Takes back an address given with `addAddress`.
  public func removeAddress(_ text: String, for reference: String) throws -> TrustedPeer {
    let address: PeerAddress
    do {
      address = try PeerAddress.parse(text)
    } catch {
      throw MemoPeerError(.invalidInput, "not an address: \(error.reason)")
    }
    return try app.trustStore.update { try $0.removeAddress(address, for: reference) }
  }

  /// Renames a trusted device (a name or device-ID prefix).
  public func rename(_ reference: String, to name: String) throws -> TrustedPeer {
    try app.trustStore.update { try $0.rename(reference, to: name) }
  }

  /// What `trust remove` did: the device, — unless it was removed here only — the
  /// revocation this device signed and what it unshared, and whether the running daemon
  /// confirmed that it closed the device's connections.
  public struct Removal: Sendable {
    public var peer: TrustedPeer
    public var revocation: RevocationResult?
    public var daemon: DaemonTrustConfirmation
  }

  /// Stops trusting a device, at once: when this returns, its next handshake fails and
  /// nothing it sends on a connection still open is applied (every session asks the trust
  /// file before it applies a frame), and the running daemon has closed its connections —
  /// or did not say so within `DaemonTrustConfirmation.wait` seconds (`daemon` tells).
  /// Unless `hereOnly`, this device first signs a revocation of it (docs/PROTOCOL.md,
  /// "Revocations"): it is unshared from every notebook, the keys it held are replaced, and
  /// every device that trusts this one — directly or through a relay — cuts it off at its
  /// next sync.
  public func remove(
    _ reference: String, hereOnly: Bool = false, daemonWait: Double = DaemonTrustConfirmation.wait
  ) throws -> Removal {
    let trust = app.trustStore
    let peer = try trust.load().find(reference)
    let revocation = hereOnly ? nil : try app.store().revoke(peer.deviceID, name: peer.name, now: app.now)
    if let revocation { try revocation.trustChanges.apply(paths: app.paths, keys: app.keys) }
    // The running daemon may have taken the revocation already: each sync's hello removes
    // every revoked device from the trust store (seen in the demo, between the two lines).
    try trust.update { list in
      if list.peer(for: peer.deviceID) != nil { _ = try list.remove(peer.deviceID.compact) }
    }
    let daemon = DaemonTrustConfirmation.awaitDaemon(
      paths: app.paths, trust: trust, removed: peer.deviceID, within: daemonWait)
    return Removal(peer: peer, revocation: revocation, daemon: daemon)
  }

  /// Every revocation this device holds (made here, applied from a peer, or against this
  /// device), newest first.
  public func revocations() throws -> [RevocationNote] { try app.store().revocations() }

  /// What to do with memos the device sends.
  public func setPolicy(_ policy: ReceivePolicy, for reference: String) throws -> TrustedPeer {
    try app.trustStore.update { try $0.setReceivePolicy(policy, for: reference) }
  }
}

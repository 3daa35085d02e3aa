import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoProtocol
import MemoSystem
import MemoVault

/// `doctor`'s look at the trusted devices this node met or was given addresses for: which
/// DNS-SD shows on this network, and for the others whether an address answers with the
/// pinned key. A home network that filters multicast DNS shows nobody while the addresses
/// still answer; that is named, with what to do.
enum DoctorPeerPaths {
  /// How one device was found.
  enum Path: Equatable {
    case dnsSD
    /// Not shown by DNS-SD; the TLS handshake at this address proved its key.
    case address(String)
    /// Neither: the addresses tried, none of which answered with its key.
    case none(tried: [String])
  }

  /// How long the browse looks for the trusted devices' advertisements.
  static let browseSeconds = 3.0
  /// How long each device's addresses may take in all.
  static let addressSeconds = 6.0

  /// The check, or nil when there is nothing to look at (no device met or given an
  /// address) or no consent to touch the network.
  static func check(paths: NodePaths, gate: ConsentGate) async -> DoctorCheck? {
    guard let list = try? TrustStore(paths: paths).load() else { return nil }
    let candidates = list.peers.filter {
      $0.addresses?.isEmpty == false || $0.reached?.isEmpty == false || $0.announced?.addresses.isEmpty == false
    }
    guard !candidates.isEmpty else { return nil }
    let now = Clocks.shared.wallNow
    let shown = await shownByDNSSD(candidates, gate: gate, now: now)
    guard let identity = try? NodeIdentity.load(paths: paths) else {
      let missing = candidates.filter { !shown.contains($0.deviceID) }
      return DoctorCheck(
        name: "trusted devices", ok: missing.isEmpty,
        detail: missing.isEmpty
          ? "DNS-SD shows every trusted device met before"
          : "DNS-SD does not show \(names(missing)); the node is locked, so their addresses were not tried",
        fix: missing.isEmpty ? nil : "unlock the node (`memo-peer unlock`) and run `memo-peer doctor` again")
    }
    let connector = PeerConnector(
      gate: gate, identity: identity, trust: TrustStore(paths: paths), clock: { Clocks.shared.wallNow })
    var found: [(TrustedPeer, Path)] = []
    for peer in candidates {
      if shown.contains(peer.deviceID) {
        found.append((peer, .dnsSD))
        continue
      }
      let link = try? await connector.connectWithoutDNSSD(to: peer, timeout: addressSeconds)
      if let link {
        found.append((peer, .address(link.channel.remoteHost ?? "?")))
        link.channel.close()
      } else {
        found.append(
          (peer, .none(tried: peer.dialAddresses(on: connector.network, defaultPort: nil).map(\.description))))
      }
    }
    return verdict(found)
  }

  /// What the findings mean: ok unless a device answers on no path; the detail names each
  /// device's path, and the fix the likely causes.
  static func verdict(_ found: [(TrustedPeer, Path)]) -> DoctorCheck {
    let hidden = found.filter { $0.1 != .dnsSD }
    let lost = found.filter { if case .none = $0.1 { return true } else { return false } }
    let detail = found.map { peer, path -> String in
      switch path {
      case .dnsSD: "\(peer.displayName): shown by DNS-SD"
      case .address(let address): "\(peer.displayName): not shown by DNS-SD, reached at \(address.terminalSafe)"
      case .none(let tried):
        "\(peer.displayName): not shown by DNS-SD, and "
          + (tried.isEmpty ? "no address to try" : "no answer at \(tried.joined(separator: ", ").terminalSafe)")
      }
    }.joined(separator: "; ")
    var fix: String?
    if !lost.isEmpty {
      fix =
        "is \(names(lost.map(\.0))) on, on this network, and running `memo-peer serve`? A firewall may drop "
        + "its port (pin it with `serve --port`, then allow it); on another subnet or VLAN, give its address: "
        + "`memo-peer trust address NAME add HOST:PORT`"
    } else if !hidden.isEmpty {
      fix =
        "this network seems to filter multicast DNS (IGMP snooping, Wi-Fi client isolation, another VLAN), "
        + "or avahi's reflector is off between subnets: memo-peer goes on through the addresses above; to let "
        + "DNS-SD work, turn off client isolation or enable mDNS forwarding on the router"
    }
    return DoctorCheck(name: "trusted devices", ok: lost.isEmpty, detail: detail, fix: fix)
  }

  static func names(_ peers: [TrustedPeer]) -> String { peers.map(\.displayName).joined(separator: ", ") }

  /// The devices of `peers` whose advertisement a browse of `browseSeconds` sees.
  static func shownByDNSSD(_ peers: [TrustedPeer], gate: ConsentGate, now: Timestamp) async -> Set<DeviceID> {
    let keys = peers.compactMap { peer in AdvertisementIdentity.peer(peer).map { (peer.deviceID, $0) } }
    guard !keys.isEmpty,
      let sightings = try? PeerBrowser.sightings(
        discovery: gate.discovery, type: LocalNetworkManifest.memoPeerServiceType, resolve: false,
        ownIdentity: nil, clock: { Clocks.shared.wallNow })
    else { return [] }
    return await withTaskGroup(of: Set<DeviceID>?.self) { group in
      group.addTask {
        var seen = Set<DeviceID>()
        do {
          for try await sighting in sightings where sighting.event == .added {
            guard let tag = sighting.tag else { continue }
            for (id, key) in keys where key.recognizes(tag: tag, at: now) { seen.insert(id) }
            if seen.count == keys.count { return seen }
          }
        } catch {}
        return seen
      }
      group.addTask {
        try? await Task.sleep(for: .seconds(browseSeconds))
        return nil
      }
      // The browse's answer when it saw everyone, else what it saw when the time ran out.
      var seen = Set<DeviceID>()
      while let next = await group.next() {
        if let next {
          seen = next
          break
        }
        group.cancelAll()
      }
      group.cancelAll()
      return seen
    }
  }
}

import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// A peer coming or going, as `browse` reports it (one JSON object per line with --json).
public struct PeerSighting: Sendable, Codable, Equatable {
  public enum Event: String, Codable, Sendable {
    case added, removed
  }

  public var event: Event
  public var instance: String
  public var type: String
  public var interface: String
  /// Protocol version from TXT `v`.
  public var version: String?
  /// The rotating tag from TXT `tag`.
  public var tag: String?
  public var host: String?
  public var addresses: [String]
  public var port: UInt16?
  /// This node's own advertisement (its tag is ours).
  public var own: Bool
  /// The trusted device's name, when the tag is that of a device in the trust store.
  public var trustedName: String?
  /// The name a device offers while its pairing window is open (TXT `pair=1`, `name`).
  public var pairingName: String?

  public init(
    event: Event, instance: String, type: String, interface: String, version: String? = nil, tag: String? = nil,
    host: String? = nil, addresses: [String], port: UInt16? = nil, own: Bool, trustedName: String? = nil,
    pairingName: String? = nil
  ) {
    self.event = event
    self.instance = instance
    self.type = type
    self.interface = interface
    self.version = version
    self.tag = tag
    self.host = host
    self.addresses = addresses
    self.port = port
    self.own = own
    self.trustedName = trustedName
    self.pairingName = pairingName
  }

  enum CodingKeys: String, CodingKey {
    case event, instance, type, interface, version, tag, host, addresses, port, own
    case trustedName = "trusted_name"
    case pairingName = "pairing_name"
  }
}

/// Browses through the consent gate and turns raw DNS-SD events into sightings: each added
/// instance is resolved (host, port, TXT and addresses, in one step), concurrently.
public enum PeerBrowser {
  public static func sightings(
    discovery: GatedDiscovery, type: String, resolve: Bool, ownIdentity: AdvertisementIdentity?,
    clock: @escaping @Sendable () -> Timestamp
  ) throws -> AsyncThrowingStream<PeerSighting, any Error> {
    let events = try discovery.browse(type: type)
    let ownTags = ownIdentity.map(OwnTagCache.init)
    return AsyncThrowingStream { continuation in
      let task = Task {
        var seen = Set<ServiceInstance>()
        await withTaskGroup(of: Void.self) { group in
          // While the network answers, not after.
          group.addTask { ownTags?.prepare(at: clock()) }
          do {
            for try await event in events {
              switch event {
              case .added(let instance):
                guard seen.insert(instance).inserted else { continue }
                group.addTask {
                  continuation.yield(
                    await sighting(for: instance, discovery: discovery, resolve: resolve, own: ownTags, clock: clock))
                }
              case .removed(let instance):
                guard seen.remove(instance) != nil else { continue }
                continuation.yield(
                  PeerSighting(
                    event: .removed, instance: instance.name, type: instance.type,
                    interface: interfaceName(instance.interfaceIndex), addresses: [], own: false))
              }
            }
            continuation.finish()
          } catch {
            continuation.finish(throwing: error)
          }
          group.cancelAll()
        }
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  static func sighting(
    for instance: ServiceInstance, discovery: GatedDiscovery, resolve: Bool, own: OwnTagCache?,
    clock: @Sendable () -> Timestamp
  ) async -> PeerSighting {
    var sighting = PeerSighting(
      event: .added, instance: instance.name, type: instance.type, interface: interfaceName(instance.interfaceIndex),
      addresses: [], own: false)
    guard resolve, let service = try? await discovery.resolve(instance) else { return sighting }
    sighting.host = service.hostTarget
    sighting.port = service.port
    sighting.version = service.txt["v"]
    sighting.tag = service.txt["tag"]
    if service.txt["pair"] == "1" { sighting.pairingName = service.txt["name"] ?? "" }
    if let tag = sighting.tag, let own { sighting.own = own.recognizes(tag, at: clock()) }
    sighting.addresses = service.addresses
    return sighting
  }

  static func interfaceName(_ index: UInt32) -> String {
    var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
    guard index != 0, if_indextoname(index, &name) != nil else { return index == 0 ? "any" : "#\(index)" }
    return String(nulTerminated: name)
  }
}

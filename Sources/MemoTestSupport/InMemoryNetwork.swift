import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoVault
import Synchronization

/// Devices reachable in memory, for driving the engine's real dialling code (PeerConnector,
/// PeerSync, OutboxDelivery) without discovery or sockets. Each attached device has a port
/// of its own, an advertisement (its rotating tag, computed with its real discovery key),
/// and a handler that serves the far end of every channel opened to it, on a thread of its
/// own — usually the daemon's own `DaemonResponder`.
///
/// A device can refuse dialers it does not trust (the channel closes before the hello, as a
/// TLS 1.3 server's refusal arrives), be stalled (it accepts the connection but never
/// answers: a dial waits until its deadline), and have faults injected into its links.
public final class InMemoryNetwork: Sendable {
  public struct Device: Sendable {
    public let id: DeviceID
    public let identity: NodeIdentity
    public let port: UInt16
    public var accepts: @Sendable (DeviceID) -> Bool
    public var stalled: Bool
    public var faults: LinkFaults
    public var handler: @Sendable (any FrameChannel) -> Void
  }

  /// The faults of one new link, from its dialler and the device dialled (instead of the
  /// device's own `faults`).
  public typealias FaultPlan = @Sendable (_ dialer: DeviceID, _ device: DeviceID) -> LinkFaults

  private struct State {
    var devices: [UInt16: Device] = [:]
    var nextPort: UInt16 = 7400
    var dials = 0
    var plan: FaultPlan?
    var multicastFiltered = false
  }
  private let state = Mutex(State())
  public let limits: ConnectionLimits

  public init(limits: ConnectionLimits = ConnectionLimits()) { self.limits = limits }

  /// Makes a device reachable; returns its port.
  @discardableResult
  public func attach(
    _ identity: NodeIdentity, accepts: @escaping @Sendable (DeviceID) -> Bool = { _ in true }, stalled: Bool = false,
    faults: LinkFaults = LinkFaults(), handler: @escaping @Sendable (any FrameChannel) -> Void
  ) -> UInt16 {
    state.withLock { state in
      let port = state.nextPort
      state.nextPort += 1
      state.devices[port] = Device(
        id: identity.deviceID, identity: identity, port: port, accepts: accepts, stalled: stalled, faults: faults,
        handler: handler)
      return port
    }
  }

  /// Takes a device off the network (its live channels stay).
  public func detach(_ id: DeviceID) {
    state.withLock { state in state.devices = state.devices.filter { $0.value.id != id } }
  }

  /// Changes how a device answers from the next dial on.
  public func update(_ id: DeviceID, _ change: @Sendable (inout Device) -> Void) {
    state.withLock { state in
      for (port, device) in state.devices where device.id == id {
        var changed = device
        change(&changed)
        state.devices[port] = changed
      }
    }
  }

  /// Gives every link opened from now on the faults `plan` says (nil: each device's own).
  public func planFaults(_ plan: FaultPlan?) { state.withLock { $0.plan = plan } }

  /// A network that filters multicast DNS: browses find nothing, dials still connect.
  public func filterMulticast(_ filtered: Bool) { state.withLock { $0.multicastFiltered = filtered } }

  /// Connections opened so far.
  public var dials: Int { state.withLock { $0.dials } }

  /// What a browse would report right now: one sighting per device, tagged for `time`.
  public func sightings(at time: Timestamp) -> [PeerSighting] {
    let devices = state.withLock { $0.multicastFiltered ? [] : Array($0.devices.values) }.sorted { $0.port < $1.port }
    return devices.map { device in
      PeerSighting(
        event: .added, instance: "memo-peer-\(device.port)", type: "_memo-peer._tcp.", interface: "lo",
        version: "1", tag: try? device.identity.advertisement.plan(at: time).tag, host: "device.local",
        addresses: ["127.0.0.1"], port: device.port, own: false, trustedName: nil, pairingName: nil)
    }
  }

  /// A browse: the devices now, then silence until the consumer stops.
  public func browse(clock: @escaping @Sendable () -> Timestamp) -> PeerConnector.Sightings {
    { [self] in
      AsyncThrowingStream { continuation in
        for sighting in sightings(at: clock()) { continuation.yield(sighting) }
      }
    }
  }

  /// Opens a channel from `dialer` to the device at `port`, as TLS would: blocking, until
  /// `deadline`. Throws `untrustedPeer` (naming the presented device) when the device there
  /// is not `expected`, `handshakeTimeout` at the deadline when it is stalled, and
  /// `connectFailed` when nothing listens there.
  public func open(from dialer: DeviceID, port: UInt16, deadline: Deadline, expected: DeviceID?) throws
    -> any FrameChannel
  {
    let (found, plan) = state.withLock { state -> (Device?, FaultPlan?) in
      state.dials += 1
      return (state.devices[port], state.plan)
    }
    guard let device = found else { throw TransportError(.connectFailed, "connection refused") }
    if device.stalled {
      _ = deadline.clock.wait(until: deadline.instant, on: DispatchSemaphore(value: 0))
      throw TransportError(.handshakeTimeout, "timed out")
    }
    if let expected, device.id != expected {
      throw TransportError(.untrustedPeer, "key not trusted", presented: device.id)
    }
    let faults = plan?(dialer, device.id) ?? device.faults
    let (near, far) = InMemoryChannel.pair(first: dialer, second: device.id, limits: limits, faults: faults)
    let accepted = device.accepts(dialer)
    let handler = device.handler
    let thread = Thread {
      // A refused device ends the channel before any frame, as a TLS 1.3 server's alert
      // reaches the client only at its first read.
      if accepted { handler(far) }
      far.close()
    }
    thread.name = "mp.test.device"
    thread.start()
    return near
  }

  /// The `PeerConnector.Dial` of a node, over this network.
  public func dial(from dialer: DeviceID) -> PeerConnector.Dial {
    { [self] sighting, port, deadline, expected in
      try open(from: dialer, port: port, deadline: deadline, expected: expected)
    }
  }

  /// A real `PeerConnector` for `node` (its consent gate, trust store and clock), browsing
  /// and dialling this network instead of DNS-SD and TLS.
  public func connector(
    gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, sessions: LiveSessions? = nil,
    clock: @escaping @Sendable () -> Timestamp
  ) -> PeerConnector {
    PeerConnector(
      gate: gate, identity: identity, trust: trust, limits: limits, sessions: sessions, clock: clock,
      sightings: browse(clock: clock), dial: dial(from: identity.deviceID))
  }
}

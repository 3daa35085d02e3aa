import Dispatch
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import Synchronization
import XCTest

@testable import MemoNode

/// The live links' keepalive (`LiveKeepalive`, driven by `LiveLink`), in simulated time:
/// the link waits on a `SimulatedClock` that jumps to the end of each wait, and talks to a
/// `SimulatedPeer` that answers pings a round trip later (or never). No wall-clock time is
/// measured: every instant asserted is the simulated one.
final class LiveKeepaliveTests: XCTestCase {
  let low = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
  let high = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!
  /// One way's latency of the simulated network.
  let latency = 0.25

  func testOnlyTheLowerDeviceIDPingsAndAListenerGivesUpOnlyWithThePeersLinkOpen() {
    let pinger = LiveKeepalive(local: low, peer: high)
    let listener = LiveKeepalive(local: high, peer: low)
    XCTAssertTrue(pinger.pings)
    XCTAssertFalse(listener.pings, "exactly one side of a pair pings")

    XCTAssertEqual(pinger.step(silence: 0, peerLinkOpen: true), .wait(seconds: 30))
    XCTAssertEqual(pinger.step(silence: 29.5, peerLinkOpen: true), .wait(seconds: 0.5))
    XCTAssertEqual(pinger.step(silence: 30, peerLinkOpen: true), .ping)
    XCTAssertEqual(pinger.step(silence: 30, peerLinkOpen: false), .ping)

    XCTAssertEqual(listener.step(silence: 30, peerLinkOpen: true), .wait(seconds: 3), "it expects the pinger's ping")
    XCTAssertEqual(listener.step(silence: 33, peerLinkOpen: true), .silent)
    XCTAssertEqual(listener.step(silence: 33, peerLinkOpen: false), .ping, "no link of the peer's to hear a ping on")
    XCTAssertEqual(listener.step(silence: .infinity, peerLinkOpen: false), .ping)
  }

  /// The pinger's link over an hour of simulated idle time, then the listener's link over
  /// the same hour hearing the pinger's pings (on the link it serves): only the pinger
  /// sends keepalives, one per 30 s and a round trip, and the listener never gives it up.
  func testInAnIdlePairOnlyOneSidePingsAtMostOncePerThirtySeconds() throws {
    let hour = 3600.0
    let pinger = try run(from: low, to: high, until: hour)
    XCTAssertEqual(pinger.ending, "closed")
    let pings = pinger.peer.pingTimes
    XCTAssertEqual(pings.first, 30, "the first ping after 30 s of quiet")
    let gaps = zip(pings.dropFirst(), pings).map { $0 - $1 }
    XCTAssertEqual(Set(gaps), [30 + 2 * latency], "one ping per 30 s of quiet after the last pong")
    XCTAssertEqual(pings.count, Int((hour - 30) / (30 + 2 * latency)) + 1)

    // The pinger's link to the listener is open; each ping arrives a one-way latency after
    // it was sent.
    let listener = try run(
      from: high, to: low, until: hour, peerLinkOpen: true, heard: pings.map { $0 + latency })
    XCTAssertEqual(listener.ending, "closed", "the pinger's pings keep the listener's link up")
    XCTAssertEqual(listener.peer.pingTimes, [], "the listener sends no keepalive")
  }

  /// A peer that answers until it goes silent: the pinger pings 30 s after its last pong
  /// and gives the peer up 3 s later, 33 s after the last frame from it.
  func testAPingerGivesASilentPeerUpThirtyThreeSecondsAfterItsLastFrame() throws {
    let run = try run(from: low, to: high, until: 3600, answersUntil: 100)
    XCTAssertEqual(run.peer.pingTimes, [30, 60.5, 91, 121.5])
    let lastPong = 91 + 2 * latency
    XCTAssertEqual(run.ending, "failed at \(lastPong + 33): the peer did not answer the keepalive")
  }

  /// A listener whose peer's link is open hears the pings stop and gives the peer up 33 s
  /// after the last one, without a ping of its own; one without the peer's link pings after
  /// 33 s of silence and gives the peer up 3 s later.
  func testAListenerGivesASilentPeerUpAfterTheExpectedPingAndPong() throws {
    let heard = [30.25, 60.75, 91.25]
    let served = try run(from: high, to: low, until: 3600, peerLinkOpen: true, heard: heard, answersUntil: 0)
    XCTAssertEqual(served.peer.pingTimes, [])
    XCTAssertEqual(
      served.ending, "failed at \(91.25 + 33): nothing came from the peer for 33 s (its keepalive is overdue)")

    let alone = try run(from: high, to: low, until: 3600, answersUntil: 0)
    XCTAssertEqual(alone.peer.pingTimes, [33], "no link of the pinger's: the listener pings itself")
    XCTAssertEqual(alone.ending, "failed at 36.0: the peer did not answer the keepalive")
  }

  /// A listener without the pinger's link to it (being dialled again) keeps its own link
  /// alive with a ping per 33 s of quiet: still at most one keepalive per 30 s.
  func testAListenerWithoutThePeersLinkPingsOncePerThirtyThreeSeconds() throws {
    let run = try run(from: high, to: low, until: 600)
    XCTAssertEqual(run.ending, "closed")
    let gaps = zip(run.peer.pingTimes.dropFirst(), run.peer.pingTimes).map { $0 - $1 }
    XCTAssertEqual(run.peer.pingTimes.first, 33)
    XCTAssertEqual(Set(gaps), [33 + 2 * latency])
  }

  /// Drives a live link from `local` to `peer` (no sync: the keepalive alone) from
  /// simulated time 0, when the peer was last heard from, until `end` or its ending.
  /// `heard`: when frames from the peer arrive on the link it keeps to us (served here,
  /// open while `peerLinkOpen`); the simulated peer answers pings sent before
  /// `answersUntil`.
  func run(
    from local: DeviceID, to peer: DeviceID, until end: Double, peerLinkOpen: Bool = false, heard: [Double] = [],
    answersUntil: Double = .infinity
  ) throws -> (ending: String, peer: SimulatedPeer) {
    let clock = SimulatedClock()
    let activity = PeerActivity(clock: clock)
    activity.record(peer)
    if peerLinkOpen { activity.serving(peer) }
    for time in heard { clock.schedule(at: time) { activity.record(peer) } }
    let trusted = TrustedPeer(deviceID: peer, name: "peer", discoveryKey: nil, source: .command, added: 1)
    let link = LiveLink(peer: trusted, local: local, activity: activity, syncFirst: false)
    clock.end(at: end) { link.close() }
    let channel = SimulatedPeer(peer: peer, clock: clock, latency: latency, answersUntil: answersUntil)
    let node = try TestNode()
    // The node trusts the peer, as a daemon with a live link does (a link re-checks trust
    // at each step: a peer missing from the trust store ends it at once).
    try node.trust.update { try $0.trust(trusted) }
    let runner = PeerSync(store: node.access(.background), dialer: NoDialer(), clock: testClock)
    switch link.drive(channel, runner: runner, synced: { _ in XCTFail("no sync was owed") }) {
    case .closed: return ("closed", channel)
    case .failed(let error): return ("failed at \(clock.now): \(error.message)", channel)
    }
  }
}

/// Simulated time: `now` moves only when a wait or a round trip passes, at once, running
/// what was scheduled meanwhile (each at its own instant).
final class SimulatedClock: LinkClock {
  private struct State {
    var now = 0.0
    var events: [(at: Double, run: @Sendable () -> Void)] = []
    var end = Double.infinity
    var atEnd: (@Sendable () -> Void)?
  }
  private let state = Mutex(State())

  var now: Double { state.withLock { $0.now } }

  func schedule(at time: Double, _ run: @escaping @Sendable () -> Void) {
    state.withLock { $0.events.append((time, run)) }
  }

  /// At `time` the simulation ends: `run` is called (it closes the link) and time stops.
  func end(at time: Double, _ run: @escaping @Sendable () -> Void) {
    state.withLock { ($0.end, $0.atEnd) = (time, run) }
  }

  /// Moves time on by `seconds`, running each event due meanwhile at its instant.
  func advance(by seconds: Double) {
    let target = now + seconds
    while true {
      enum Next {
        case event(@Sendable () -> Void)
        case ending(@Sendable () -> Void)
        case done
      }
      let next = state.withLock { state -> Next in
        let until = min(target, state.end)
        if let index = state.events.indices.filter({ state.events[$0].at <= until }).min(by: {
          state.events[$0].at < state.events[$1].at
        }) {
          let event = state.events.remove(at: index)
          state.now = max(state.now, event.at)
          return .event(event.run)
        }
        state.now = until
        if target >= state.end, let atEnd = state.atEnd {
          state.atEnd = nil
          return .ending(atEnd)
        }
        return .done
      }
      switch next {
      case .event(let run): run()
      case .ending(let run):
        run()
        return
      case .done: return
      }
    }
  }

  func wait(for signal: DispatchSemaphore, seconds: Double) -> Bool {
    if signal.wait(timeout: .now()) == .success { return true }
    advance(by: seconds)
    return signal.wait(timeout: .now()) == .success
  }
}

/// The far end of a live link in simulated time: answers each ping sent before
/// `answersUntil` a round trip later; otherwise a wait for a frame lasts until its deadline.
final class SimulatedPeer: FrameChannel {
  let peer: DeviceID?
  let clock: SimulatedClock
  let latency: Double
  let answersUntil: Double
  private let state = Mutex((pings: [Double](), answer: Frame?.none))

  init(peer: DeviceID, clock: SimulatedClock, latency: Double, answersUntil: Double) {
    self.peer = peer
    self.clock = clock
    self.latency = latency
    self.answersUntil = answersUntil
  }

  /// When the link sent each ping.
  var pingTimes: [Double] { state.withLock { $0.pings } }

  func send(_ frame: Frame) throws(TransportError) {
    guard frame.kind == .ping else { return }
    let now = clock.now
    let answers = now < answersUntil
    state.withLock { state in
      state.pings.append(now)
      state.answer = answers ? Frame(.pong, payload: frame.payload) : nil
    }
  }

  func receive(before deadline: Deadline?) throws(TransportError) -> Frame? {
    if let answer = state.withLock({ state in
      defer { state.answer = nil }
      return state.answer
    }) {
      clock.advance(by: 2 * latency)
      return answer
    }
    // The deadline was set a moment ago in wall-clock time: its whole seconds are the wait.
    clock.advance(by: (deadline?.secondsLeft ?? 120).rounded(.up))
    throw TransportError(.idleTimeout, "timed out")
  }

  func close() {}
  func interrupt() {}
  func exportKeyingMaterial(label: String, length: Int) throws(TransportError) -> [UInt8] {
    throw TransportError(.library, "simulated")
  }
  var wireBytes: (sent: UInt64, received: UInt64) { (0, 0) }
}

/// A dialler that reaches nobody (the keepalive tests never dial).
struct NoDialer: PeerDialer {
  func connect(to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void)
    async throws -> PeerLink
  {
    throw MemoPeerError(.connection, "no network in this test")
  }
}

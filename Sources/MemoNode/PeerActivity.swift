import MemoCore
import Synchronization

/// When the daemon last heard from each trusted device, on any of its channels, and which
/// devices' own links to it are open: the sessions it serves record every frame that
/// arrives, its live links every answer. Only one device of a pair pings, after a quiet
/// spell on *both* of the pair's links, and the other expects that traffic on the link it
/// serves (`LiveKeepalive`): an idle pair exchanges one keepalive per spell, not two.
public final class PeerActivity: Sendable {
  private struct State {
    var heard: [DeviceID: Double] = [:]
    /// Sessions being served per device.
    var serving: [DeviceID: Int] = [:]
  }
  private let state = Mutex(State())
  let clock: any LinkClock

  public convenience init() { self.init(clock: SystemLinkClock()) }

  init(clock: any LinkClock) { self.clock = clock }

  /// A frame from `device` arrived now.
  func record(_ device: DeviceID) {
    let now = clock.now
    state.withLock { $0.heard[device] = now }
  }

  /// Seconds since anything arrived from `device` (infinity: never).
  func silence(of device: DeviceID) -> Double {
    guard let last = state.withLock({ $0.heard[device] }) else { return .infinity }
    return max(clock.now - last, 0)
  }

  /// A session `device` opened with this node is being served (until `ended`).
  func serving(_ device: DeviceID) { state.withLock { $0.serving[device, default: 0] += 1 } }

  /// A session `device` opened with this node ended.
  func ended(_ device: DeviceID) {
    state.withLock { state in
      let left = state.serving[device, default: 1] - 1
      state.serving[device] = left > 0 ? left : nil
    }
  }

  /// Whether a session `device` opened with this node is open: its live link to us.
  func isServing(_ device: DeviceID) -> Bool { state.withLock { $0.serving[device] != nil } }
}

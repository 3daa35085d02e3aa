import Dispatch
import MemoCore
import Synchronization

/// When the daemon last heard from each trusted device, on any of its channels: the
/// sessions it serves record every frame that arrives, its live links every answer. A live
/// link sends a keepalive only after a quiet spell with that device on *both* of a pair's
/// links, so a pair whose daemons both run exchanges one keepalive per spell, not two
/// (`LiveLink`).
public final class PeerActivity: Sendable {
  private let heard = Mutex<[DeviceID: UInt64]>([:])

  public init() {}

  /// A frame from `device` arrived now.
  func record(_ device: DeviceID) {
    let now = DispatchTime.now().uptimeNanoseconds
    heard.withLock { $0[device] = now }
  }

  /// Seconds since anything arrived from `device` (infinity: never).
  func silence(of device: DeviceID) -> Double {
    guard let last = heard.withLock({ $0[device] }) else { return .infinity }
    return Double(DispatchTime.now().uptimeNanoseconds &- last) / 1e9
  }
}

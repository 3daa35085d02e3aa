import Dispatch
import MemoCore
import MemoSystem
import MemoVault

/// What `trust remove` (and `trust revoke`) learnt from this node's running daemon after
/// writing the trust store. The write itself wakes the daemon (it watches the key folder
/// with inotify, on a watch of its own that no step of its loop holds up), which closes the
/// removed device's connections and then records the file it applied in `serve.json`. The
/// command waits for that record, at most `wait` seconds: a person who removes a device
/// learns that its connections are closed, not that they will be.
public enum DaemonTrustConfirmation: String, Sendable, Equatable {
  /// No daemon runs for this node: there was nothing to close.
  case noDaemon = "none"
  /// The daemon applied the new trust store: the device's connections are closed.
  case confirmed
  /// The daemon did not confirm in time (stopped, busy, an older memo-peer). The device is
  /// refused anyway: its next handshake, and every frame it sends on a connection still
  /// open (`PeerTrustCheck`).
  case unconfirmed

  /// The longest `trust remove` waits for the daemon.
  public static let wait = 2.0
  /// How often `serve.json` is read meanwhile.
  static let pollInterval = 0.02

  /// Waits, at most `seconds`, until the daemon of `paths` has applied the trust file as
  /// it is now and holds no link with `removed`.
  public static func awaitDaemon(
    paths: NodePaths, trust: TrustStore, removed: DeviceID, within seconds: Double = wait
  ) -> DaemonTrustConfirmation {
    let time = Clocks.shared
    let deadline = time.monotonicNow + .milliseconds(Int64((seconds * 1000).rounded()))
    let never = DispatchSemaphore(value: 0)
    while true {
      guard let status = ServeStatus.read(paths), status.isRunning else { return .noDaemon }
      if status.hasApplied(trustFile: trust.fingerprint(), removed: removed) { return .confirmed }
      guard time.monotonicNow < deadline else { return .unconfirmed }
      _ = time.wait(until: min(time.monotonicNow + .milliseconds(Int64(pollInterval * 1000)), deadline), on: never)
    }
  }
}

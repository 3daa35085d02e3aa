import FoundationEssentials
import MemoCore
import MemoPresentation
import MemoStore
import MemoSystem
import MemoVault
import Synchronization

/// Tells the desktop when a memo arrives in the inbox, a sync brings conflicts, or deletes
/// are held, for the user daemon (`serve`). It compares snapshots of the store that hold no
/// content, once a second, so it needs no hook in the engine or the sessions; the first
/// snapshot is the baseline (what was there before the daemon started is not news).
///
/// The config's `notifications: false` turns it off (read on every check, so it follows a
/// change without a restart). An "Open" action runs the notice's command in a terminal,
/// through `open`.
public final class DesktopAlertWatcher: Sendable {
  private let paths: NodePaths
  private let notifier: any DesktopNotifying
  private let open: @Sendable ([String]) -> Void
  /// `check` runs on one timer queue at a time; its state is behind a mutex all the same.
  private struct State {
    var baseline: AlertSnapshot?
    /// Notification id → the command its "Open" action runs.
    var commands: [UInt32: [String]] = [:]
  }
  private let state = Mutex(State())

  public init(paths: NodePaths, notifier: any DesktopNotifying, open: @escaping @Sendable ([String]) -> Void) {
    self.paths = paths
    self.notifier = notifier
    self.open = open
  }

  /// One round: actions chosen since the last round, then what is new in the store.
  public func check() {
    state.withLock { state in
      for id in notifier.invokedActions() {
        if let command = state.commands[id] { open(command) }
      }
      guard PrivateFiles.exists(paths.databasePath),
        let store = try? MemoStore.open(paths: paths, use: .background),
        let snapshot = try? store.alertSnapshot()
      else { return }
      defer { state.baseline = snapshot }
      guard let earlier = state.baseline else { return }
      let alerts = snapshot.alerts(since: earlier)
      guard !alerts.isEmpty, let config = try? NodeConfig.load(paths: paths), config.notifications else { return }
      let names = Dictionary(
        ((try? TrustStore(paths: paths).load().peers) ?? []).map { ($0.deviceID, $0.name) },
        uniquingKeysWith: { a, _ in a })
      for alert in alerts {
        let notice = DesktopNoticeRules.notice(
          for: alert, senderName: name(of: alert, names), memo: preview(alert, store), lockState: store.lockState,
          settings: config.widget)
        if let id = notifier.send(notice) {
          state.commands[id] = notice.openCommand
          if state.commands.count > 256 { state.commands.removeValue(forKey: state.commands.keys.min()!) }
        }
      }
    }
  }

  private func name(of alert: DesktopAlert, _ names: [DeviceID: String]) -> String {
    let device: DeviceID
    switch alert {
    case .arrived(_, let sender), .heldDeletes(let sender, _), .revoked(let sender, _): device = sender
    case .conflicts: return ""
    }
    return names[device] ?? "an unknown device (\(device.compact.prefix(4)))"
  }

  private func preview(_ alert: DesktopAlert, _ store: MemoStore) -> DesktopNoticeRules.ArrivedMemo? {
    guard case .arrived(let entry, _) = alert else { return nil }
    return store.inboxPreview(entry).map { DesktopNoticeRules.ArrivedMemo(title: $0.title, isPrivate: $0.isPrivate) }
  }
}

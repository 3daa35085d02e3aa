extension ServeStatus {
  /// The STATUS= line for systemd (`systemctl status`): `waiting: local-network consent`,
  /// `advertising on eth0 as memo-peer-1a2b (port 7410)`, with `; memos locked` while the
  /// daemon finds the memos locked.
  public var serviceText: String {
    let base: String
    switch state {
    case .waiting: base = "waiting: \(waitingFor ?? "unknown")"
    case .advertising:
      base =
        "advertising on \(interfaces.isEmpty ? "all interfaces" : interfaces.joined(separator: ", "))"
        + " as \(instance ?? "?") (port \(port))"
    case .stopped: base = "stopped"
    }
    // A daemon waiting for `unlock` already says so.
    let sayLocked = store == "locked" && waitingFor != ServeEngine.waitingForUnlock
    return sayLocked ? base + "; memos locked" : base
  }
}

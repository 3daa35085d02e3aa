import MemoCore

/// What `serve` says of itself: `state/serve.json` (`ServeStatus`), the summary line the
/// CLI prints, and systemd's STATUS= and READY=. Each text is said once, when it changes;
/// what the daemon writes comes from here, and the daemon only writes it and tells the
/// notifier (tested without either).
struct StatusBoard: Sendable {
  /// What is said after `serve.json` was written.
  enum Saying: Sendable, Equatable {
    /// A new summary line (the CLI prints it on stderr).
    case report(String)
    /// A notification to systemd.
    case notify(ServiceEvent)
  }

  /// The links as `status` shows them: whether any is up or being dialled, and the
  /// devices (compact IDs) with one up.
  struct Links: Sendable, Equatable {
    var any: Bool
    /// In the order of their compact text, as `serve.json` lists them.
    var up: [DeviceID]
  }

  var status: ServeStatus
  private var announcedReady = false
  /// The last STATUS= sent, so systemd hears each text once.
  private var lastServiceText: String?
  /// The last summary reported, for the same reason.
  private var lastSummary: String?

  init(status: ServeStatus) { self.status = status }

  /// The status to write for a new `state` at `now` (nil: nothing changed, and not
  /// `force`d). What it says of live sync follows the links themselves, not the
  /// advertisement: a link outlives an avahi-daemon restart (the daemon waits for avahi,
  /// its links go on), so only a daemon with no link and not advertising shows none.
  mutating func publish(
    _ state: ServeStatus.State, waitingFor: String?, instance: String?, port: UInt16, force: Bool, links: Links,
    now: Timestamp
  ) -> ServeStatus? {
    let changed =
      state != status.state || waitingFor != status.waitingFor || instance != status.instance || port != status.port
    guard changed || force else { return nil }
    status.state = state
    status.waitingFor = waitingFor
    status.instance = instance
    status.port = port
    if state == .stopped || (state != .advertising && !links.any) {
      status.liveSync = nil
      status.livePeers = nil
    } else if state != .advertising {
      status.livePeers = links.up
    }
    status.updated = now
    return status
  }

  /// The same state again, forced (a new contact, the store's lock state, the trust store
  /// applied): nil before the first state is published, which carries it.
  mutating func republish(links: Links, now: Timestamp) -> ServeStatus? {
    guard status.state != .stopped else { return nil }
    return publish(
      status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true,
      links: links, now: now)
  }

  /// What to say once the status was written: the summary and STATUS= when they changed,
  /// READY= the first time the daemon listens or waits (a daemon waiting for consent is
  /// up, not failing).
  mutating func written() -> [Saying] {
    var sayings: [Saying] = []
    let summary = status.summary
    if summary != lastSummary {
      lastSummary = summary
      sayings.append(.report(summary))
    }
    guard status.state != .stopped else { return sayings }
    let text = status.serviceText
    if text != lastServiceText {
      lastServiceText = text
      sayings.append(.notify(.status(text)))
    }
    if !announcedReady {
      announcedReady = true
      sayings.append(.notify(.ready))
    }
    return sayings
  }

  /// What `status` shows of live sync (`text`) and of its links up (`peers`, nil: as
  /// they were): shown only while the daemon advertises or has a link. True when that
  /// changed, so the status is to be published again.
  mutating func showLiveSync(_ text: String?, peers: [DeviceID]?, anyLink: Bool) -> Bool {
    let shown = status.state == .advertising || anyLink
    let text = shown ? text : nil
    let peers = shown ? (peers ?? status.livePeers ?? []) : nil
    guard text != status.liveSync || peers != status.livePeers else { return false }
    status.liveSync = text
    status.livePeers = peers
    return true
  }
}

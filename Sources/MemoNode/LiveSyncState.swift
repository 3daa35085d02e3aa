import MemoCore

/// Live sync's side of a step, apart from its links' I/O: the rules of the links
/// (`LiveLinkPlan`) and whether the background-sync consent lets them be. Without the
/// consent no link stays open, and the daemon says once why; `status` says either way.
struct LiveSyncState: Sendable {
  /// What the consent asks of the daemon at a step.
  struct Consent: Sendable, Equatable {
    /// What `status` shows of live sync.
    var shown: String
    /// Whether live sync may go on (links kept and dialled, changes pushed).
    var allowed: Bool
    /// Whether to say, once, that live sync waits for the consent.
    var note: Bool
  }

  var plan = LiveLinkPlan()
  /// Where each link up was dialled without DNS-SD (a remembered, announced or given
  /// address; absent: DNS-SD showed the peer), for `status` (`live_addresses`).
  var dialledAt: [DeviceID: String] = [:]
  /// Whether the background-sync consent was granted at the last step.
  private(set) var allowed = false
  private var consentNoted = false

  /// Follows the background-sync consent (`granted`): without it every link closes.
  mutating func consent(granted: Bool) -> Consent {
    allowed = granted
    guard !granted else {
      consentNoted = false
      return Consent(shown: "on", allowed: true, note: false)
    }
    let note = !consentNoted
    consentNoted = true
    return Consent(shown: "waiting (background-sync consent)", allowed: false, note: note)
  }
}

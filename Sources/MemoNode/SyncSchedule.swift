import MemoCore

/// `--sync-every`: when `serve` starts a scheduled sync with every trusted peer. One round
/// at a time, every `every` seconds, and only while the background-sync consent is on
/// record: nobody is at the keyboard, so the person must have said yes to this in advance.
/// Without it the daemon says so once and waits; the period starts again at the grant.
struct SyncSchedule: Sendable {
  /// What the daemon does at a step.
  enum Action: Sendable, Equatable {
    case none
    /// Say once that scheduled sync waits for the background-sync consent.
    case noteWaitingForConsent
    /// Start a round with every trusted peer.
    case start
  }

  /// Seconds between two rounds; nil: no scheduled sync.
  let every: Double?
  private var next: Timestamp = 0
  private var consentNoted = false

  init(every: Double?) { self.every = every }

  /// What to do at `now`: `roundRunning` while a round has not ended, `canDial` while the
  /// daemon holds its keys, `granted` while the background-sync consent is on record.
  mutating func step(now: Timestamp, roundRunning: Bool, canDial: Bool, granted: Bool) -> Action {
    guard let every, !roundRunning, canDial, now >= next else { return .none }
    guard granted else {
      if consentNoted { return .none }
      consentNoted = true
      return .noteWaitingForConsent
    }
    consentNoted = false
    next = now + Timestamp(every * 1000)
    return .start
  }
}

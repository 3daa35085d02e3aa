import MemoCore
import MemoProtocol

/// When `serve` looks at its outbox and whom it delivers to: one round at a time, at most
/// one look a second, and a per-recipient backoff after a round that left entries pending
/// (`DeliveryBackoff`, 1 s doubling to 30 s, jittered). Without local-network consent
/// every pending entry is marked as waiting for it, once a second; when consent changes
/// either way, every pause is forgotten, so delivery resumes at once on a grant. Pure: the
/// daemon feeds it times and round results, and carries out what it says.
struct OutboxSchedule: Sendable {
  let backoff = DeliveryBackoff()
  /// The local-network consent as last followed; nil before the first step.
  private var consentAllowed: Bool?
  private var nextLook: Timestamp = 0
  private var nextAttempt: [DeviceID: Timestamp] = [:]
  private var failures: [DeviceID: Int] = [:]

  /// Follows the local-network consent at `now`: true when the pending entries are to be
  /// marked as waiting for it now (no consent, and a second since the last mark).
  mutating func consent(allowed: Bool, now: Timestamp) -> Bool {
    if consentAllowed != allowed {
      consentAllowed = allowed
      nextAttempt = [:]
      failures = [:]
      nextLook = 0
    }
    guard !allowed, now >= nextLook else { return false }
    nextLook = now + 1000
    return true
  }

  /// Whether to look for recipients to deliver to at `now`: no round running, and a
  /// second since the last look.
  mutating func look(now: Timestamp, roundRunning: Bool) -> Bool {
    guard !roundRunning, now >= nextLook else { return false }
    nextLook = now + 1000
    return true
  }

  /// The recipients of `pending` whose pause has passed at `now`, in order.
  func due(_ pending: [DeviceID], now: Timestamp) -> [DeviceID] {
    pending.filter { nextAttempt[$0].map { now >= $0 } ?? true }
  }

  /// A round ended at `now`: a recipient with nothing pending is forgotten; one with
  /// entries left waits a pause that grows with each round in a row that delivered nothing
  /// (`random` in [0, 1) jitters it). Says each pause, in seconds.
  mutating func finished(
    _ rounds: [DeviceID: DeliverySender.Round], now: Timestamp, random: () -> Double
  ) -> [DeviceID: Double] {
    var pauses: [DeviceID: Double] = [:]
    for (recipient, round) in rounds {
      guard round.pending > 0 else {
        failures[recipient] = nil
        nextAttempt[recipient] = nil
        continue
      }
      let count = round.delivered > 0 ? 1 : (failures[recipient] ?? 0) + 1
      failures[recipient] = count
      let pause = backoff.delay(afterFailures: count, random: random())
      nextAttempt[recipient] = now + Timestamp(pause * 1000)
      pauses[recipient] = pause
    }
    return pauses
  }
}

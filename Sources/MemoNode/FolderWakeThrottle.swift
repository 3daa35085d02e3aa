import MemoCore

/// How a burst of writes in the node's folders wakes `serve`'s step loop. Each step reads the
/// lock state, the trust store and the consent log, and one step per WAL write of a large
/// sync (hundreds a second) took a third of a core from the sync itself; but one commit is
/// several writes, and SQLite publishes it only after the last one and the WAL's fsync, so
/// a step at the first write often misses it. Wakes are therefore counted in windows of
/// `interval`, from the first write after a quiet spell: the first `wakesPerInterval` of a
/// window step at once, a later one waits for the window's end (and counts as the first of
/// the next). With one wake per window, a commit's second write held the step that would see
/// it until the window's end: live sync a → b took 58 ms at p50 (46–49 ms with three).
struct FolderWakeThrottle: Sendable {
  let interval: Duration
  let wakesPerInterval: Int
  private var window: (start: MonotonicInstant, wakes: Int)?

  init(interval: Duration = .milliseconds(50), wakesPerInterval: Int = 3) {
    self.interval = interval
    self.wakesPerInterval = wakesPerInterval
  }

  /// A write woke the loop at `now`: nil to step at once, or the instant to step at.
  mutating func wake(at now: MonotonicInstant) -> MonotonicInstant? {
    guard let window, now < window.start + interval else {
      window = (now, 1)
      return nil
    }
    guard window.wakes >= wakesPerInterval else {
      self.window = (window.start, window.wakes + 1)
      return nil
    }
    let end = window.start + interval
    self.window = (end, 1)
    return end
  }
}

import MemoApp
import MemoCore
import MemoPresentation
import MemoWeb
import Synchronization

/// The web page's Sync button: one sync at a time, run in the background while the page
/// polls `GET /api/sync` for its progress and, at the end, the result in `sync --json`'s
/// shape. Progress lines carry device names and counts only, never memo text.
final class WebSyncJob: Sendable {
  /// Runs one sync, reporting lines that stay (`note`) and the line that changes
  /// (`progress`); `syncAll` in production, a fake in tests.
  typealias Runner =
    @Sendable (
      _ note: @escaping @Sendable (String) -> Void, _ progress: @escaping @Sendable (String) -> Void
    ) async throws -> SyncJSON

  /// `GET /api/sync` (docs/WEB.md).
  struct Snapshot: Encodable, Sendable {
    enum State: String, Encodable, Sendable {
      case idle, running, done
    }
    let schema = JSONOutput.schema
    var state = State.idle
    var started: String?
    var finished: String?
    /// Waiting notes, then the current progress line.
    var progress: [String] = []
    var result: SyncJSON?
    var error: ErrorJSON.Detail?
  }

  private struct Progress {
    var snapshot = Snapshot()
    var notes: [String] = []
    var current: String?
    mutating func publish() { snapshot.progress = notes + (current.map { [$0] } ?? []) }
  }

  private let progress = Mutex(Progress())
  private let clock: @Sendable () -> Timestamp

  init(clock: @escaping @Sendable () -> Timestamp) { self.clock = clock }

  var snapshot: Snapshot { progress.withLock { $0.snapshot } }

  /// Starts `runner` unless a sync is running; returns the state either way.
  func start(_ runner: @escaping Runner) -> Snapshot {
    let now = TimeText.iso(clock())
    let (started, snapshot) = progress.withLock { progress -> (Bool, Snapshot) in
      guard progress.snapshot.state != .running else { return (false, progress.snapshot) }
      progress = Progress()
      progress.snapshot.state = .running
      progress.snapshot.started = now
      return (true, progress.snapshot)
    }
    if started {
      Task.detached { [self] in
        let outcome: Result<SyncJSON, any Error>
        do {
          outcome = .success(
            try await runner(
              { line in self.update { $0.notes.append(line) } },
              { line in self.update { $0.current = line } }))
        } catch {
          outcome = .failure(error)
        }
        finish(outcome)
      }
    }
    return snapshot
  }

  private func update(_ change: (inout Progress) -> Void) {
    progress.withLock { progress in
      change(&progress)
      progress.notes = Array(progress.notes.suffix(20))
      progress.publish()
    }
  }

  private func finish(_ outcome: Result<SyncJSON, any Error>) {
    let now = TimeText.iso(clock())
    progress.withLock { progress in
      progress.current = nil
      progress.publish()
      progress.snapshot.state = .done
      progress.snapshot.finished = now
      switch outcome {
      case .success(let result): progress.snapshot.result = result
      case .failure(let error as MemoPeerError):
        progress.snapshot.error = ErrorJSON.Detail(error, wording: PageRemedyText.words)
      case .failure:
        progress.snapshot.error = ErrorJSON.Detail(
          code: "internal", message: "the sync failed unexpectedly; nothing was lost", hint: nil, dnsServiceCode: nil)
      }
    }
  }
}

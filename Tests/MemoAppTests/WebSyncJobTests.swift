import Foundation
import MemoApp
import MemoCore
import MemoNode
import MemoPresentation
import Synchronization
import XCTest

@testable import MemoWebApp

/// The page's Sync button without a network: one sync at a time, its progress while it
/// runs, and its result (or error) in `sync --json`'s shape afterwards.
final class WebSyncJobTests: XCTestCase {
  /// The job finishes on a task of its own and tells no one: looked at until it did,
  /// yielding the processor in between (the limit bounds a failing run only).
  func waitFor(_ job: WebSyncJob, _ state: WebSyncJob.Snapshot.State) -> Bool {
    let limit = Date().addingTimeInterval(10)
    while Date() < limit {
      if job.snapshot.state == state { return true }
      sched_yield()
    }
    return job.snapshot.state == state
  }

  func testOneSyncAtATimeWithItsProgressAndResult() throws {
    let job = WebSyncJob(clock: { 1_796_000_000_000 })
    XCTAssertEqual(job.snapshot.state, .idle)
    let (release, opens) = AsyncStream<Void>.makeStream()
    let reported = DispatchSemaphore(value: 0)
    let runs = Mutex(0)
    let runner: WebSyncJob.Runner = { note, progress in
      runs.withLock { $0 += 1 }
      note("desk: waiting (peer not found on the network)")
      progress("receiving from desk: 10 of about 40 memo revisions")
      progress("receiving from desk: 20 of about 40 memo revisions")
      reported.signal()
      for await _ in release { break }
      return SyncJSON([], wording: { _ in nil })
    }
    XCTAssertEqual(job.start(runner).state, .running)
    XCTAssertEqual(reported.wait(timeout: .now() + 10), .success, "the runner reported its progress")
    XCTAssertEqual(
      job.snapshot.progress,
      ["desk: waiting (peer not found on the network)", "receiving from desk: 20 of about 40 memo revisions"])
    XCTAssertEqual(job.start(runner).state, .running, "a second start joins the running sync")
    opens.yield()
    opens.finish()
    XCTAssertTrue(waitFor(job, .done))
    XCTAssertEqual(runs.withLock { $0 }, 1)
    let done = job.snapshot
    XCTAssertEqual(done.progress, ["desk: waiting (peer not found on the network)"], "the passing line is gone")
    XCTAssertEqual(done.started, "2026-11-30T00:53:20.000Z")
    XCTAssertEqual(done.finished, done.started)
    let json = try XCTUnwrap(
      try JSONSerialization.jsonObject(with: Data(JSONOutput.encode(done))) as? [String: Any])
    XCTAssertEqual(json["state"] as? String, "done")
    XCTAssertEqual(
      (json["result"] as? [String: Any]).map { Set($0.keys) }, ["schema", "peers", "received", "sent", "conflicts"])

    // The next start begins afresh.
    XCTAssertEqual(job.start({ _, _ in throw SyncUseCases.nobodyToSync }).state, .running)
    XCTAssertTrue(waitFor(job, .done))
    XCTAssertEqual(job.snapshot.error?.code, "not-found")
    XCTAssertNil(job.snapshot.result)
    XCTAssertEqual(job.snapshot.progress, [])
    XCTAssertEqual(runs.withLock { $0 }, 1)
  }
}

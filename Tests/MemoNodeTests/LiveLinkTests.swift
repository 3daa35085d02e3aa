import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// A live link with real stores on both ends (the far end is the daemon's own responder,
/// over an in-memory channel): what its syncs move when it breaks and comes back.
final class LiveLinkTests: XCTestCase {
  /// a keeps a link with b; it syncs, pushes, then b goes away without a word. While apart
  /// a makes 4 memos and b 1; a push finds the link broken, and the link dialled again
  /// syncs exactly what was missed: 4 revisions sent, 1 received, nothing sent twice.
  func testAfterALinkBreaksTheNextSyncMovesOnlyWhatWasMissed() throws {
    let (a, b) = try trustingPair()
    let storeA = try a.open()
    for number in 0..<3 { _ = try storeA.create(MemoDraft(title: "before \(number)", body: "x"), now: testClock()) }
    let responder = b.responder()
    let farEnds = Recorder<any FrameChannel>()
    let dialer = DirectDialer(from: a, to: b) { far in
      farEnds.append(far)
      responder.serve(far)
    }
    let runner = a.syncer(dialer, use: .background)
    let bee = try a.peer("bee")
    let activity = PeerActivity()
    let results = Recorder<PeerSync.PeerResult>()

    let first = LiveLink(peer: bee, local: a.id, activity: activity)
    let up = try runAsync { try await dialer.connect(to: bee, timeout: 10) }
    let driving = Background.start("mp.test.live") {
      first.drive(up.channel, runner: runner) { results.append($0) }
    }
    XCTAssertTrue(results.wait { $0.count == 1 }, "the link's first sync")
    for number in 0..<2 { _ = try storeA.create(MemoDraft(title: "pushed \(number)", body: "x"), now: testClock()) }
    first.push()
    XCTAssertTrue(results.wait { $0.count == 2 })
    XCTAssertEqual(results.all.map { $0.report?.sentRevisions }, [3, 2], "what was made, once")

    // b goes away; both sides go on making memos.
    for far in farEnds.all { far.interrupt() }
    dialer.settle()
    for number in 0..<4 { _ = try storeA.create(MemoDraft(title: "apart \(number)", body: "x"), now: testClock()) }
    _ = try b.open().create(MemoDraft(title: "apart on b", body: "y"), now: testClock())
    first.push()
    guard case .failed = try driving.wait().get() else { return XCTFail("the broken link ends") }
    XCTAssertEqual(results.all.count, 2, "the failed sync reports nothing")

    // Dialled again: its first sync moves what each side missed, and nothing else.
    let second = LiveLink(peer: bee, local: a.id, activity: activity)
    let again = try runAsync { try await dialer.connect(to: bee, timeout: 10) }
    let redriving = Background.start("mp.test.live") {
      second.drive(again.channel, runner: runner) { results.append($0) }
    }
    XCTAssertTrue(results.wait { $0.count == 3 })
    second.close()
    guard case .closed = try redriving.wait().get() else { return XCTFail("closed on purpose") }
    let report = try XCTUnwrap(results.all.last?.report)
    XCTAssertEqual(report.sentRevisions, 4, "only the memos made while apart")
    XCTAssertEqual(report.received.applied, 1, "only b's memo made while apart")
    XCTAssertEqual(try a.bodies().count, 10)
    XCTAssertEqual(try b.bodies().count, 10)
  }
}

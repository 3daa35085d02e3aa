import Foundation
import MemoCore
import MemoPresentation
import MemoTestSupport
import XCTest

@testable import MemoStore

/// The store's side of desktop notifications: a snapshot of inbox entries, conflicted memos
/// and held deletes, read without the device key.
extension SyncStoreTests {
  func testAlertSnapshotSeesConflictsHeldDeletesAndTheInbox() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "list", body: "milk"), now: 1)
    let others = try a.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    _ = try sync(a, into: b)
    let before = try b.alertSnapshot()
    XCTAssertEqual(before, AlertSnapshot())
    try a.update(memo.id, MemoChange(body: "milk, eggs"), now: 2)
    try b.update(memo.id, MemoChange(body: "milk, bread"), now: 2)
    for other in others { try a.delete(other.id, now: 2) }
    _ = try sync(a, into: b, guard: MassDeleteGuard())
    try b.enqueue(
      QueuedPayload(id: "entry-1", peer: TestDevices.id(named: "SENDER"), payload: Array("x".utf8), time: 3),
      in: .inbox
    )
    let after = try b.alertSnapshot()
    XCTAssertEqual(after.conflicted, [memo.id])
    XCTAssertEqual(after.heldDeletes, [node(of: a).device: 20])
    XCTAssertEqual(after.inbox, ["entry-1": TestDevices.id(named: "SENDER")])
    XCTAssertEqual(
      after.alerts(since: before),
      [
        .arrived(entry: "entry-1", sender: TestDevices.id(named: "SENDER")), .conflicts(count: 1),
        .heldDeletes(sender: node(of: a).device, count: 20),
      ])
  }
}

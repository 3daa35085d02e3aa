import Foundation
import MemoCore
import XCTest

@testable import MemoStore

/// A person's write while another connection holds the write transaction (issue 39: a
/// daemon stopped inside its write path): it waits the documented bound, then fails with
/// an error naming the process that holds the lock.
final class BusyWriterTests: XCTestCase {
  func testAWriteBehindAHeldTransactionNamesTheHolder() throws {
    let node = try TemporaryNode()
    let person = try node.open()
    // The daemon's connection, stopped between BEGIN and COMMIT: its batch's body is where
    // the person writes.
    let daemon = try node.open()
    let before = try person.liveMemoCount()
    var failure: MemoPeerError?
    try daemon.batch {
      _ = try daemon.create(MemoDraft(title: "daemon", body: "mid-write"), now: 1_000)
      XCTAssertThrowsError(try person.create(MemoDraft(title: "person", body: "waits"), now: 2_000)) { error in
        failure = error as? MemoPeerError
      }
    }
    let error = try XCTUnwrap(failure)
    XCTAssertEqual(error.exitStatus, 7)
    // POSIX locks belong to processes: the holder here is this test's own process.
    XCTAssertTrue(error.message.contains("pid \(getpid()),"), error.message)
    XCTAssertTrue(error.message.contains("waited") || error.message.contains("more than 5 s"), error.message)
    XCTAssertNotNil(error.hint)
    // Once the holder commits, the person's write goes through and nothing is lost.
    _ = try person.create(MemoDraft(title: "person", body: "again"), now: 3_000)
    XCTAssertEqual(try person.liveMemoCount(), before + 2)
  }
}

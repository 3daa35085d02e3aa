import XCTest

@testable import MemoWeb

/// The gate's rules with made-up users, addresses and times: other users never take the
/// owner's places, one user or address only its share, and deadlines on the whole head.
final class ConnectionGateTests: XCTestCase {
  let owner: UInt32 = 1000
  let other: UInt32 = 1001

  func gate(_ change: (inout ConnectionGate.Limits) -> Void = { _ in }) -> ConnectionGate {
    var limits = ConnectionGate.Limits()
    change(&limits)
    return ConnectionGate(owner: owner, limits: limits)
  }

  func testAnotherUserHoldsOnlyItsShareAndTheOwnerIsAlwaysAdmitted() {
    let gate = gate()
    var admitted = 0
    for fd in 0..<300 {
      if case .success = gate.admit(user: other, address: "127.0.0.1", fd: Int32(fd), now: 0) { admitted += 1 }
    }
    XCTAssertEqual(admitted, gate.limits.perOtherUser)
    XCTAssertEqual(gate.takeRefusals()[.user], 300 - gate.limits.perOtherUser)
    for fd in 300..<310 {
      guard case .success = gate.admit(user: owner, address: "127.0.0.1", fd: Int32(fd), now: 0) else {
        return XCTFail("the owner's connection was refused")
      }
    }
  }

  func testOtherUsersTogetherLeaveThePlacesReservedForTheOwner() {
    let gate = gate()
    var fd: Int32 = 0
    var admitted = 0
    // Many users, and connections whose user cannot be told, from many source addresses.
    for user in (2000..<2040).map({ UInt32($0) as UInt32? }) + [nil] {
      for index in 0..<20 {
        fd += 1
        if case .success = gate.admit(user: user, address: "127.0.\(index).\(fd % 200)", fd: fd, now: 0) {
          admitted += 1
        }
      }
    }
    XCTAssertEqual(admitted, gate.limits.total - gate.limits.reservedForOwner)
    var owners = 0
    while case .success = gate.admit(user: owner, address: "::1", fd: fd + Int32(owners) + 1, now: 0) { owners += 1 }
    XCTAssertEqual(owners, gate.limits.reservedForOwner)
    XCTAssertEqual(gate.count, gate.limits.total)
  }

  func testOneAddressHoldsLessThanTheTotal() {
    let gate = gate()
    var admitted = 0
    for fd in 0..<200 where (try? gate.admit(user: owner, address: "127.0.0.1", fd: Int32(fd), now: 0).get()) != nil {
      admitted += 1
    }
    XCTAssertEqual(admitted, gate.limits.perAddress)
    XCTAssertLessThan(gate.limits.perAddress, gate.limits.total)
    XCTAssertNotNil(try? gate.admit(user: owner, address: "::1", fd: 999, now: 0).get())
  }

  func testAClosedConnectionFreesItsPlace() throws {
    let gate = gate { $0.perOtherUser = 1 }
    let first = try gate.admit(user: other, address: "127.0.0.1", fd: 3, now: 0).get()
    XCTAssertNil(try? gate.admit(user: other, address: "127.0.0.1", fd: 4, now: 0).get())
    gate.closed(first)
    XCTAssertNotNil(try? gate.admit(user: other, address: "127.0.0.1", fd: 4, now: 0).get())
  }

  func testTheWholeHeadHasADeadlineNotOnlySilence() throws {
    let gate = gate()
    let slow = try gate.admit(user: other, address: "127.0.0.1", fd: 10, now: 0).get()
    let quick = try gate.admit(user: owner, address: "127.0.0.1", fd: 11, now: 0).get()
    gate.headArrived(quick, now: 0.01)
    var ended: [Int32] = []
    XCTAssertEqual(gate.endOverdue(now: 9) { ended.append($0) }, 0, "within the head's time")
    XCTAssertEqual(gate.endOverdue(now: 10.5) { ended.append($0) }, 1)
    XCTAssertEqual(ended, [10], "the head that never finished, however chatty")
    XCTAssertEqual(gate.endOverdue(now: 11) { ended.append($0) }, 0, "ended once")
    gate.closed(slow)
    // The answered connection gets a new head deadline from its answer on.
    gate.requestFinished(quick, now: 20)
    XCTAssertEqual(gate.endOverdue(now: 29) { ended.append($0) }, 0)
    XCTAssertEqual(gate.endOverdue(now: 30.5) { ended.append($0) }, 1)
    XCTAssertEqual(ended, [10, 11])
  }

  func testTheNextDeadlineIsTheEarliestOfTheConnectionsNotYetEnded() throws {
    let gate = gate()
    XCTAssertNil(gate.nextDeadline(), "nobody connected: nothing to wake for")
    let waiting = try gate.admit(user: owner, address: "127.0.0.1", fd: 7, now: 2).get()
    let busy = try gate.admit(user: owner, address: "::1", fd: 8, now: 1).get()
    gate.headArrived(busy, now: 3)
    XCTAssertEqual(gate.nextDeadline(), 12, "the head due 10 s after accept, before the request's 63")
    XCTAssertEqual(gate.endOverdue(now: 12.5) { _ in }, 1)
    XCTAssertEqual(gate.nextDeadline(), 63, "an ended connection no longer counts")
    gate.closed(waiting)
    gate.requestFinished(busy, now: 5)
    XCTAssertEqual(gate.nextDeadline(), 15)
    gate.closed(busy)
    XCTAssertNil(gate.nextDeadline())
  }

  func testARequestHasADeadlineToo() throws {
    let gate = gate()
    let id = try gate.admit(user: owner, address: "127.0.0.1", fd: 5, now: 0).get()
    gate.headArrived(id, now: 1)
    var ended: [Int32] = []
    XCTAssertEqual(gate.endOverdue(now: 60) { ended.append($0) }, 0)
    XCTAssertEqual(gate.endOverdue(now: 61.5) { ended.append($0) }, 1)
  }
}

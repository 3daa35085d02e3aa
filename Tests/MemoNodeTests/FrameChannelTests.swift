import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The in-memory frame channel keeps the `FrameChannel` contract the sessions rely on, and
/// its faults do what the tests built on it assume.
final class FrameChannelTests: XCTestCase {
  func pair(limits: ConnectionLimits = ConnectionLimits(), faults: LinkFaults = LinkFaults())
    -> (InMemoryChannel, InMemoryChannel)
  {
    InMemoryChannel.pair(first: TestDevices.id(1), second: TestDevices.id(2), limits: limits, faults: faults)
  }

  func testFramesArriveInOrderBothWaysAndEachEndKnowsItsPeer() throws {
    let (a, b) = pair()
    XCTAssertEqual(a.peer, TestDevices.id(2))
    XCTAssertEqual(b.peer, TestDevices.id(1))
    for index in 0..<5 { try a.send(Frame(.ping, payload: [UInt8(index)])) }
    try b.send(Frame(.pong, payload: Array("back".utf8)))
    for index in 0..<5 { XCTAssertEqual(try b.receive(), Frame(.ping, payload: [UInt8(index)])) }
    XCTAssertEqual(try a.receive(), Frame(.pong, payload: Array("back".utf8)))
    XCTAssertEqual(a.wireBytes.sent, b.wireBytes.received, "bytes counted as they cross")
    XCTAssertEqual(a.wireBytes.sent, UInt64(5 * (Frame.headerSize + 1)))
  }

  func testACloseIsTheEndOfTheStreamForThePeerAndAnInterruptionForItself() throws {
    let (a, b) = pair()
    try a.send(Frame(.ping))
    a.close()
    XCTAssertEqual(try b.receive()?.kind, .ping, "what was sent before the close arrives")
    XCTAssertNil(try b.receive(), "then a clean end")
    assertTransportError(.interrupted, try a.receive())
    assertTransportError(.interrupted, try a.send(Frame(.ping)))
    XCTAssertNoThrow(try b.send(Frame(.pong)), "a send to an end that left is lost, as with TCP")
  }

  func testACloseFromAnotherThreadEndsAWaitingReceive() throws {
    let clock = ManualClock()
    let restore = clock.install()
    defer { restore() }
    let (a, _) = pair()
    let waiting = Background.start("receiver") { () throws -> Bool in (try a.receive()) == nil }
    clock.untilWaiting()
    a.close()
    XCTAssertThrowsError(try waiting.wait().get(), "the wait ends as an interruption")
  }

  func testAReceiveWaitsUntilItsDeadlineThenTimesOut() throws {
    let (a, b) = pair()
    assertTransportError(.idleTimeout, try a.receive(before: .after(seconds: 0.05)))
    try b.send(Frame(.ping))
    XCTAssertEqual(try a.receive(before: .after(seconds: 5))?.kind, .ping, "the channel still works")
  }

  func testTheIdleLimitAppliesWithoutADeadline() throws {
    var limits = ConnectionLimits()
    limits.idleSeconds = 0.05
    let (a, _) = pair(limits: limits)
    assertTransportError(.idleTimeout, try a.receive())
  }

  func testADelayedLinkDeliversLaterButInOrder() throws {
    let (a, b) = pair(faults: LinkFaults(fromFirst: DirectionFaults(delay: 0.2)))
    try a.send(Frame(.ping, payload: [1]))
    try a.send(Frame(.ping, payload: [2]))
    assertTransportError(.idleTimeout, try b.receive(before: .after(seconds: 0.01)), "not there yet")
    XCTAssertEqual(try b.receive(before: .after(seconds: 5))?.payload, [1])
    XCTAssertEqual(try b.receive(before: .after(seconds: 5))?.payload, [2])
  }

  func testACutLinkDeliversWhatWasSentBeforeAndThenEndsBothWays() throws {
    let (a, b) = pair(faults: LinkFaults(fromFirst: DirectionFaults(cutAfterFrames: 2)))
    try a.send(Frame(.ping, payload: [1]))
    try b.send(Frame(.pong, payload: [9]))
    try a.send(Frame(.ping, payload: [2]))  // the cut
    try a.send(Frame(.ping, payload: [3]))  // lost
    try b.send(Frame(.pong, payload: [8]))  // lost
    XCTAssertEqual(try b.receive()?.payload, [1])
    XCTAssertEqual(try b.receive()?.payload, [2])
    XCTAssertNil(try b.receive())
    XCTAssertEqual(try a.receive()?.payload, [9])
    XCTAssertNil(try a.receive())
    XCTAssertEqual(a.framesSent, 2, "frames after the cut never left")
  }

  func testACutCanCountOneKindOfFrame() throws {
    let (a, b) = pair(faults: LinkFaults(fromFirst: DirectionFaults(cutAfterFrames: 1, cutCounting: .syncBatch)))
    try a.send(Frame(.syncHello))
    try a.send(Frame(.syncBatch))
    try a.send(Frame(.syncDone))
    XCTAssertEqual(try b.receive()?.kind, .syncHello)
    XCTAssertEqual(try b.receive()?.kind, .syncBatch)
    XCTAssertNil(try b.receive(), "cut right after the first batch")
  }

  func testCorruptedHeadersAreRefusedBeforeAnyPayload() throws {
    let cases: [(byte: Int, mask: UInt8, expect: String)] = [
      (0, 0x02, "version"), (1, 0x40, "type"), (2, 0x10, "exceeds the maximum"),
    ]
    for item in cases {
      let (a, b) = pair(faults: LinkFaults(fromFirst: .flip(frame: 0, byte: item.byte, mask: item.mask)))
      try a.send(Frame(.ping, payload: [1, 2, 3]))
      XCTAssertThrowsError(try b.receive()) { error in
        XCTAssertEqual((error as? TransportError)?.kind, .protocolViolation)
        XCTAssertTrue("\(error)".contains(item.expect), "\(error)")
      }
    }
  }

  func testAFrameCutShortIsAProtocolViolationNotACleanEnd() throws {
    // A length that promises more than arrives, then the peer leaves.
    let (a, b) = pair(faults: LinkFaults(fromFirst: .flip(frame: 0, byte: 5, mask: 0x08)))
    try a.send(Frame(.ping, payload: [1, 2, 3]))
    a.close()
    assertTransportError(.protocolViolation, try b.receive())
  }

  func testBothEndsOfOnePairExportTheSameKeyingMaterialAndAManInTheMiddleDoesNot() throws {
    let (a, b) = pair()
    let label = PairingProtocol.exporterLabel
    XCTAssertEqual(
      try a.exportKeyingMaterial(label: label, length: 40), try b.exportKeyingMaterial(label: label, length: 40))
    XCTAssertNotEqual(
      try a.exportKeyingMaterial(label: label, length: 16), try a.exportKeyingMaterial(label: "other", length: 16))
    let (c, d) = InMemoryChannel.pair(
      first: TestDevices.id(1), second: TestDevices.id(2), exporters: (Array("one".utf8), Array("two".utf8)))
    XCTAssertNotEqual(
      try c.exportKeyingMaterial(label: label, length: 16), try d.exportKeyingMaterial(label: label, length: 16))
  }

  func testTheSessionRunnerClosesEachEndWhenItsSideReturns() throws {
    let (first, second) = InMemorySession.run(
      first: { channel in
        try channel.send(Frame(.ping, payload: [7]))
        return try channel.receive()
      },
      second: { channel in try channel.receive()?.payload })
    XCTAssertNil(try first.get(), "the second side returned without answering: its end closed")
    XCTAssertEqual(try second.get(), [7])
  }
}

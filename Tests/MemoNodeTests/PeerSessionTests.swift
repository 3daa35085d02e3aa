import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The hello and the daemon's loop (`PeerSession.serve` behind `DaemonResponder`), driven
/// over an in-memory channel: what a trusted device gets for each frame it may send.
final class PeerSessionTests: XCTestCase {
  /// `a` talks to `b`'s daemon with `client`; returns the client's result.
  func talk<T: Sendable>(_ a: TestNode, to b: TestNode, _ client: (InMemoryChannel) throws -> T) -> Result<T, any Error>
  {
    let responder = b.responder()
    return InMemorySession.run(firstID: a.id, secondID: b.id, first: client, second: { responder.serve($0) }).first
  }

  func testHellosAreExchangedAndTheDaemonLearnsADiscoveryKeyItLacked() throws {
    let a = try TestNode()
    let b = try TestNode()
    try a.trusts(b, as: "bee")
    try b.trusts(a, as: "ay", withKey: false)  // `trust add`: never met
    let hello = try talk(a, to: b) { channel in try PeerSession.greet(channel, identity: a.identity) }.get()
    XCTAssertEqual(hello.discoveryKey, b.identity.discoveryKeyBase64)
    XCTAssertEqual(hello.rotationSeconds, 900)
    XCTAssertEqual(try b.peer("ay").discoveryKey, a.identity.discoveryKeyBase64, "learned from a's hello")
  }

  func testAPingIsAnsweredWithItsOwnPayload() throws {
    let (a, b) = try trustingPair()
    let answers = try talk(a, to: b) { channel -> [Frame?] in
      _ = try PeerSession.greet(channel, identity: a.identity)
      return try (0..<3).map { index in
        try channel.send(Frame(.ping, payload: Array("n\(index)".utf8)))
        return try channel.receive()
      }
    }.get()
    XCTAssertEqual(answers, (0..<3).map { Frame(.pong, payload: Array("n\($0)".utf8)) })
  }

  func testAGoodbyeEndsTheSessionCleanly() throws {
    let (a, b) = try trustingPair()
    let end = try talk(a, to: b) { channel -> Frame? in
      _ = try PeerSession.greet(channel, identity: a.identity)
      try channel.send(PeerSession.goodbye("done"))
      return try channel.receive()
    }.get()
    XCTAssertNil(end, "the daemon closes its end without another frame")
  }

  func testAnUnexpectedFrameGetsAGoodbyeWithItsReasonAndTheChannelEnds() throws {
    let (a, b) = try trustingPair()
    let frames = try talk(a, to: b) { channel -> [Frame] in
      _ = try PeerSession.greet(channel, identity: a.identity)
      try channel.send(Frame(.pairConfirm, payload: Array("{}".utf8)))
      var frames: [Frame] = []
      while let frame = try channel.receive() { frames.append(frame) }
      return frames
    }.get()
    XCTAssertEqual(frames.map(\.kind), [.goodbye])
    XCTAssertEqual(
      frames.first.flatMap { PeerMessage.decode(PeerMessage.Goodbye.self, from: $0.payload) }?.reason,
      "unexpected-frame")
  }

  /// A history ask for a notebook the daemon does not relay gets one empty answer (it says
  /// no more than that), and the session goes on.
  func testAHistoryAskTheDaemonCannotServeGetsAnEmptyAnswer() throws {
    let (a, b) = try trustingPair()
    let notebook = try XCTUnwrap(NotebookID("00112233445566778899aabbccddeeff"))
    let memo = MemoID()
    let (step, pong) = try talk(a, to: b) { channel -> (HistoryExchange.Step, Frame?) in
      _ = try PeerSession.greet(channel, identity: a.identity)
      var exchange = HistoryExchange(notebook: notebook, memo: memo)
      try channel.send(exchange.ask)
      let step = exchange.receive(try channel.receive())
      try channel.send(Frame(.ping, payload: [1]))
      return (step, try channel.receive())
    }.get()
    XCTAssertEqual(step, .done(records: [], bindings: []))
    XCTAssertEqual(pong, Frame(.pong, payload: [1]))
  }

  func testAnythingButAValidHelloFirstIsAProtocolViolation() throws {
    let a = try TestNode()
    let b = try TestNode()
    try a.trusts(b, as: "bee")
    try b.trusts(a, as: "ay", withKey: false)
    let badHellos = [
      Frame(.ping),
      Frame(.hello, payload: Array("not json".utf8)),
      Frame(
        .hello,
        payload: PeerMessage.encode(PeerMessage.Hello(discoveryKey: "c2hvcnQ=", rotationSeconds: 900))),  // 5 bytes
    ]
    for bad in badHellos {
      let result = talk(a, to: b) { channel in
        try channel.send(bad)
        return try channel.receive()
      }
      // The daemon sent its own hello, then closed on ours.
      XCTAssertEqual(try result.get()?.kind, .hello)
      XCTAssertNil(try b.peer("ay").discoveryKey, "nothing learned from it")
    }
    let client = InMemorySession.run(
      firstID: a.id, secondID: b.id, first: { channel in try PeerSession.greet(channel, identity: a.identity) },
      second: { channel in try channel.send(Frame(.pong)) }
    ).first
    assertTransportError(.protocolViolation, try client.get(), "the client refuses a bad hello too")
  }

  func testAHelloIsAwaitedOnlyUntilTheCallersDeadline() throws {
    let (a, b) = try trustingPair()
    let client = InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel in try PeerSession.greet(channel, identity: a.identity, before: .after(seconds: 0.1)) },
      // A peer that reads the hello and says nothing (until the client leaves).
      second: { channel in
        _ = try channel.receive()
        _ = try channel.receive(before: .after(seconds: 30))
      }
    ).first
    assertTransportError(.idleTimeout, try client.get())
  }

  func testADeviceThatClosesBeforeTheHelloHasRefusedUs() throws {
    let (a, b) = try trustingPair()
    let client = InMemorySession.run(
      firstID: a.id, secondID: b.id, first: { channel in try PeerSession.greet(channel, identity: a.identity) },
      second: { _ in }
    ).first
    assertTransportError(.closed, try client.get())
  }
}

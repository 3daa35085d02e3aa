import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import Synchronization
import XCTest

@testable import MemoNode

/// Issue 38: `trust remove` holds at once for sessions already open. A session asks the
/// trust file before it applies each frame of its peer, so once the file no longer trusts
/// the peer nothing more it sends is stored or answered, whoever dialled whom and whether
/// or not a daemon has reloaded.
final class TrustRemovedDuringSessionTests: XCTestCase {
  /// Link faults that remove a device from `node`'s trust store the moment `node` sends
  /// its first `sync-ack`: the batch it acknowledges is committed, nothing after it is.
  func removal(of name: String, on node: TestNode, whenItAcks direction: WritableKeyPath<LinkFaults, DirectionFaults>)
    -> LinkFaults
  {
    let done = Mutex(false)
    var faults = LinkFaults()
    faults[keyPath: direction] = DirectionFaults(corrupt: { _, bytes in
      guard bytes.count > 1, bytes[1] == Frame.Kind.syncAck.rawValue else { return }
      guard
        done.withLock({ first in
          defer { first = true }
          return !first
        })
      else { return }
      _ = try? node.trust.update { try $0.remove(name) }
    })
    return faults
  }

  func create(_ node: TestNode, _ count: Int) throws {
    let store = try node.open()
    for index in 1...count { _ = try store.create(MemoDraft(title: "t", body: "memo \(index)"), now: 1) }
  }

  /// The daemon's side: `a` pushes ten memos in batches of three; `b` removes `a` after
  /// storing the first batch, and stores nothing more of it.
  func testTheDaemonStopsStoringWhatARemovedDeviceSendsInTheSyncInProgress() throws {
    let (a, b) = try trustingPair()
    try create(a, 10)
    let faults = removal(of: "ay", on: b, whenItAcks: \.fromSecond)
    let dialer = a.dialer(to: b, faults: faults)
    let runner = a.syncer(dialer)
    let peer = try a.peer("bee")
    let result = try runAsync { await runner.sync(with: peer, timeout: 10, deleteGuard: MassDeleteGuard()) }
    dialer.settle()
    XCTAssertEqual(try b.bodies().count, 3, "the batch acknowledged before the removal, and nothing after it")
    XCTAssertEqual(result.error?.code, .untrustedPeer, "\(String(describing: result.error))")
    XCTAssertEqual(result.error?.message, "bee no longer trusts this device: it was removed there during the sync")
  }

  /// A person's `sync`: `a` pulls ten memos from `b` and removes `b` after the first batch.
  func testAPersonsSyncStopsStoringWhatARemovedDeviceSends() throws {
    let (a, b) = try trustingPair()
    try create(b, 10)
    let faults = removal(of: "bee", on: a, whenItAcks: \.fromFirst)
    let dialer = a.dialer(to: b, faults: faults)
    let runner = a.syncer(dialer)
    let peer = try a.peer("bee")
    let result = try runAsync { await runner.sync(with: peer, timeout: 10, deleteGuard: MassDeleteGuard()) }
    dialer.settle()
    XCTAssertEqual(try a.bodies().count, 3, "the batch acknowledged before the removal, and nothing after it")
    XCTAssertEqual(result.error?.code, .untrustedPeer)
    XCTAssertEqual(
      result.error?.message,
      "bee was removed from this device's trust store during the sync; nothing it sent after that was stored")
  }

  /// Any frame on a channel the daemon serves: a removed device's ping gets no pong but
  /// `goodbye {"reason": "untrusted"}`, and the channel ends.
  func testTheDaemonAnswersARemovedDevicesNextFrameWithAGoodbye() throws {
    let (a, b) = try trustingPair(sharing: false)
    let responder = b.responder()
    let frames = try InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> [Frame] in
        _ = try PeerSession.greet(channel, identity: a.identity)
        try channel.send(Frame(.ping, payload: Array("1".utf8)))
        var frames = [try XCTUnwrap(try channel.receive())]
        _ = try b.trust.update { try $0.remove("ay") }
        try channel.send(Frame(.ping, payload: Array("2".utf8)))
        while let frame = try channel.receive() { frames.append(frame) }
        return frames
      }, second: { responder.serve($0) }
    ).first.get()
    XCTAssertEqual(frames, [Frame(.pong, payload: Array("1".utf8)), PeerSession.goodbye("untrusted")])
  }
}

import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// A batch of deliveries (delivery version 2) stored by the receiver: one transaction for
/// the whole batch (all of it or none), duplicates recognised within and across batches,
/// and entries refused one by one without refusing the rest.
final class DeliveryBatchStoreTests: XCTestCase {
  static let sender = TestDevices.id(named: "DEVICEA")

  func deliver(_ id: String, body: String = "the batch secret phrase", title: String = "t") -> DeliveryMessage.Deliver {
    DeliveryMessage.Deliver(
      id: id, memo: DeliveryMessage.Content(title: title, body: body, tags: [], isPrivate: false, sent: 1))
  }

  func ids(_ count: Int) -> [String] { (0..<count).map { _ in MemoID().rawValue } }

  func receive(
    _ store: MemoStore, _ entries: [DeliveryMessage.Deliver], policy: ReceivePolicy? = nil,
    limits: ReceiveLimits = ReceiveLimits()
  ) throws -> [DeliveryOutcome] {
    try store.receiveDeliveries(entries, from: Self.sender, policy: policy, limits: limits, now: 5)
  }

  func testABatchIsStoredSealedWithOneOutcomePerEntry() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let names = ids(40)
    let outcomes = try receive(store, names.map { deliver($0) })
    XCTAssertEqual(outcomes, Array(repeating: .stored("inbox", duplicate: false), count: 40))
    XCTAssertEqual(try store.inboxEntries().map(\.id).sorted(), names.sorted())
    let raw = try node.rawDataBytes()
    let needle = Array("batch secret".utf8)
    XCTAssertFalse(
      raw.count >= needle.count
        && (0...(raw.count - needle.count)).contains { raw[$0..<($0 + needle.count)].elementsEqual(needle) },
      "sealed at rest")
  }

  func testAFailureAnywhereInTheBatchLeavesNoneOfItAndTheRetryStoresItOnce() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let names = ids(5)
    // A write that fails in the middle of the batch (as a full disk or a kill would stop it).
    try store.db.execute(
      "CREATE TRIGGER poison BEFORE INSERT ON inbox WHEN NEW.id = '\(names[3])' BEGIN SELECT RAISE(ABORT, 'injected'); END"
    )
    XCTAssertThrowsError(try receive(store, names.map { deliver($0) }))
    XCTAssertEqual(try store.inboxEntries().count, 0, "nothing of the batch, not even the entries before it")
    XCTAssertNil(try store.receivedMarker(names[0]), "nor the record of any id")
    try store.db.execute("DROP TRIGGER poison")
    XCTAssertEqual(
      try receive(store, names.map { deliver($0) }), Array(repeating: .stored("inbox", duplicate: false), count: 5))
    XCTAssertEqual(try store.inboxEntries().count, 5)
  }

  func testARetransmittedBatchIsAnsweredAsDuplicatesAndStoresNothingTwice() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let first = ids(3)
    _ = try receive(store, first.map { deliver($0) })
    let fresh = MemoID().rawValue
    // The same batch again (its receipt was lost), with one new entry, and an id twice.
    let outcomes = try receive(store, (first + [fresh, first[0]]).map { deliver($0) })
    XCTAssertEqual(
      outcomes,
      [
        .stored("inbox", duplicate: true), .stored("inbox", duplicate: true), .stored("inbox", duplicate: true),
        .stored("inbox", duplicate: false), .stored("inbox", duplicate: true),
      ])
    XCTAssertEqual(try store.inboxEntries().count, 4)
    // Also once the entries have left the inbox.
    for id in first { _ = try store.dropInboxEntry(id) }
    XCTAssertEqual(
      try receive(store, first.map { deliver($0) }), Array(repeating: .stored("inbox", duplicate: true), count: 3))
    XCTAssertEqual(try store.inboxEntries().count, 1)
  }

  func testARefusedEntryDoesNotRefuseTheRestOfTheBatch() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let names = ids(4)
    let entries = [
      deliver(names[0]), deliver(names[1], body: "", title: ""), deliver(String(repeating: "x", count: 65)),
      deliver(names[2], body: String(repeating: "y", count: 3000)), deliver(names[3]),
    ]
    let outcomes = try receive(store, entries, limits: ReceiveLimits(maximumSize: 2048))
    XCTAssertEqual(
      outcomes,
      [
        .stored("inbox", duplicate: false), .refused(.invalid), .refused(.invalid), .refused(.tooLarge),
        .stored("inbox", duplicate: false),
      ])
    XCTAssertEqual(try store.inboxEntries().map(\.id).sorted(), [names[0], names[3]].sorted())
    XCTAssertNil(try store.receivedMarker(names[1]), "a refused entry leaves no record: a valid resend is stored")
    XCTAssertEqual(try receive(store, [deliver(names[1])]), [.stored("inbox", duplicate: false)])
  }

  func testTheInboxAndDailyLimitsCountWhatTheBatchStoredBeforeEachEntry() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    _ = try receive(store, [deliver(MemoID().rawValue)])
    let limits = ReceiveLimits(maximumInboxPerPeer: 3, maximumAcceptedPerDay: 2)
    XCTAssertEqual(
      try receive(store, ids(4).map { deliver($0) }, limits: limits),
      [
        .stored("inbox", duplicate: false), .stored("inbox", duplicate: false), .refused(.inboxFull),
        .refused(.inboxFull),
      ])
    XCTAssertEqual(try store.inboxEntries().count, 3)
    let accepted = ids(3)
    XCTAssertEqual(
      try receive(store, accepted.map { deliver($0) }, policy: .accept, limits: limits),
      [.stored("memos", duplicate: false), .stored("memos", duplicate: false), .refused(.inboxFull)])
    XCTAssertEqual(try store.count(), 2)
    XCTAssertEqual(try receive(store, [deliver(MemoID().rawValue)], policy: .refuse), [.refused(.policy)])
  }

  func testASavepointUndoesOnlyItsOwnWrites() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    struct Injected: Error {}
    try store.batch {
      try store.db.execute("INSERT INTO meta (key, value) VALUES ('kept', x'01')")
      XCTAssertThrowsError(
        try store.db.savepoint {
          try store.db.execute("INSERT INTO meta (key, value) VALUES ('undone', x'01')")
          throw Injected()
        })
    }
    XCTAssertEqual(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'kept'"), 1)
    XCTAssertEqual(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'undone'"), 0)
  }

  func testTheSendersBatchOfStateChangesIsOneTransaction() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let peer = TestDevices.id(named: "DEVICEB")
    let queued = try (0..<3).map { _ in
      try store.queueForDelivery(
        DeliveryMessage.Content(title: "t", body: "b", tags: [], isPrivate: false, sent: 1), to: peer, expires: nil,
        now: 1)
    }
    XCTAssertEqual(try store.setOutboxStates(queued.map { ($0, .sending) }, attempted: true), 3)
    try store.db.execute(
      "CREATE TRIGGER poison BEFORE UPDATE ON outbox WHEN NEW.id = '\(queued[2])' BEGIN SELECT RAISE(ABORT, 'injected'); END"
    )
    XCTAssertThrowsError(try store.setOutboxStates(queued.map { ($0, .delivered(9)) }))
    XCTAssertEqual(try store.outboxEntries().map(\.state), [.sending, .sending, .sending], "none marked delivered")
    try store.db.execute("DROP TRIGGER poison")
    XCTAssertEqual(try store.setOutboxStates(queued.map { ($0, .delivered(9)) }), 3)
    XCTAssertEqual(try store.outboxEntries().map(\.attempts), [1, 1, 1])
  }

  /// A round reads its own peer's entries only, and each memo as the JSON the store sealed.
  func testARoundReadsItsPeersEntriesAndTheirStoredJSON() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let (b, c) = (TestDevices.id(named: "DEVICEB"), TestDevices.id(named: "DEVICEC"))
    let memo = DeliveryMessage.Content(
      title: "t", body: "the stored JSON phrase", tags: ["x"], isPrivate: true, sent: 4)
    let first = try store.queueForDelivery(memo, to: b, expires: nil, now: 1)
    _ = try store.queueForDelivery(memo, to: c, expires: nil, now: 2)
    let second = try store.queueForDelivery(memo, to: b, expires: 9, now: 3)
    let forB = try store.outboxEntries(for: b)
    XCTAssertEqual(forB.map(\.id), [first, second])
    XCTAssertEqual(forB, try store.outboxEntries().filter { $0.recipient == b })
    XCTAssertEqual(try store.outboxEntries(for: TestDevices.id(named: "DEVICED")), [])
    XCTAssertEqual(try store.outboxContentJSON(first), DeliveryMessage.encode(memo))
    XCTAssertEqual(DeliveryMessage.decode(try store.outboxContentJSON(second)), memo)
    // A recipient written in another form of the same ID is still the recipient's (and the
    // sealed payload, bound to the text it was sealed with, no longer opens).
    try store.db.execute("UPDATE outbox SET recipient = '\(b.description.lowercased())' WHERE id = '\(second)'")
    XCTAssertEqual(try store.outboxEntries(for: b).map(\.id), [first, second])
    XCTAssertThrowsError(try store.outboxContentJSON(second))
  }
}

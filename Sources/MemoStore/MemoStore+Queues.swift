import MemoCore
import MemoCrypto

/// A sealed payload waiting in the outbox or sitting in the inbox. The delivery issue adds
/// states and receipts; the tables and their sealing exist from schema 1 so that no later
/// migration has to convert plaintext rows.
public struct QueuedPayload: Sendable, Equatable {
  public var id: String
  /// The recipient (outbox) or sender (inbox) device.
  public var peer: DeviceID
  public var payload: [UInt8]
  public var time: Timestamp

  public init(id: String, peer: DeviceID, payload: [UInt8], time: Timestamp) {
    self.id = id
    self.peer = peer
    self.payload = payload
    self.time = time
  }
}

/// A queue row as its table holds it, opened: the peer as the text it was written with.
/// Every memo-peer wrote `DeviceID.compact` there; the text is part of the row's sealed
/// context, so it is read back exactly as written, and converted to a `DeviceID` only
/// above this (`OutboxEntry`, `InboxEntry`). Only the schema 1–2 fixtures hold rows that
/// name no device.
struct QueueRow: Sendable, Equatable {
  var id: String
  var peer: String
  var payload: [UInt8]
  var time: Timestamp
}

extension MemoStore {
  /// Which queue table.
  public enum Queue: Sendable {
    case outbox, inbox

    var table: String { self == .outbox ? "outbox" : "inbox" }
    var peerColumn: String { self == .outbox ? "recipient" : "sender" }
    var timeColumn: String { self == .outbox ? "created" : "received" }

    func context(id: String, peer: String) -> [UInt8] {
      self == .outbox
        ? SealingContext.outboxEntry(id: id, recipient: peer) : SealingContext.inboxEntry(id: id, sender: peer)
    }
  }

  /// Adds a payload, sealed with additional data binding its entry id and peer.
  public func enqueue(_ entry: QueuedPayload, in queue: Queue) throws {
    try enqueue(QueueRow(id: entry.id, peer: entry.peer.compact, payload: entry.payload, time: entry.time), in: queue)
  }

  /// Adds a row with its peer's text as given (the device's compact ID, or a fixture's).
  func enqueue(_ entry: QueueRow, in queue: Queue) throws {
    let sealer = try sealer()
    let sealed: [UInt8]
    do { sealed = try sealer.seal(entry.payload, associatedData: queue.context(id: entry.id, peer: entry.peer)) } catch
    {
      throw MemoPeerError(.crypto, "sealing a queued entry failed", diagnostics: "\(error)")
    }
    try sql {
      try db.transaction {
        try db.withCached(
          "INSERT INTO \(queue.table) (id, \(queue.peerColumn), payload, \(queue.timeColumn)) VALUES (?, ?, ?, ?)"
        ) { insert in
          try insert.bind([.text(entry.id), .text(entry.peer), .blob(sealed), .integer(entry.time)])
          try insert.step()
        }
      }
    }
  }

  /// Every row of a queue, opened, oldest first.
  func rows(in queue: Queue) throws -> [QueueRow] {
    let sealer = try sealer()
    return try sql {
      let query = try db.prepare(
        "SELECT id, \(queue.peerColumn), payload, \(queue.timeColumn) FROM \(queue.table) "
          + "ORDER BY \(queue.timeColumn), id")
      var result: [QueueRow] = []
      while try query.step() {
        let id = query.text(0)
        let peer = query.text(1)
        let payload: [UInt8]
        do { payload = try sealer.open(query.blob(2), associatedData: queue.context(id: id, peer: peer)) } catch {
          throw MemoPeerError(
            .integrity, "\(queue.table) entry \(id) failed the integrity check (tampered, truncated or moved)",
            diagnostics: "\(error)")
        }
        result.append(QueueRow(id: id, peer: peer, payload: payload, time: query.int64(3)))
      }
      return result
    }
  }
}

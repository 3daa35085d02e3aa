import FoundationEssentials
import MemoCore

/// One notebook in a version-3 `sync-hello` (docs/PROTOCOL.md, "Sync, version 3"): the
/// sender holds it and its membership log has the receiver in it (as member or relay), or
/// it is an invitation the sender holds the log of. It says which ops the sender has (its
/// log's heads), so the receiver sends only what is missing, and — for a notebook the
/// sender syncs (`held`) — where it stands in it (knowledge, cursor).
///
/// Nothing in it says who is in the notebook or what its key is: the log says that. A
/// peer's claim counts for nothing (issue 23).
public struct NotebookEntry: Codable, Equatable, Sendable {
  /// The notebook id (32 lowercase hex digits).
  public var id: String
  /// The sender's log heads (op ids, 64 hex digits each), at most `maximumHeads`.
  public var heads: [String]
  /// Whether the sender syncs the notebook's records (false: an invitation it has not
  /// accepted, whose ops it keeps).
  public var held: Bool
  /// The sender's knowledge in this notebook (its own replica included); only when held.
  public var knowledge: [String: UInt64]?
  /// The sender's position in the receiver's feed for this notebook; only when held.
  public var cursor: FeedPosition?

  public init(
    id: NotebookID, heads: [OpID], held: Bool, knowledge: VersionVector? = nil, cursor: FeedPosition? = nil
  ) {
    self.id = id.rawValue
    self.heads = heads.prefix(NotebookEntries.maximumHeads).map(\.description)
    self.held = held
    self.knowledge = held ? (knowledge ?? VersionVector()).textEntries : nil
    self.cursor = held ? cursor : nil
  }
}

/// A `NotebookEntry` after its checks: every field in range and of its form.
public struct CheckedEntry: Equatable, Sendable {
  public var id: NotebookID
  public var heads: [OpID]
  public var held: Bool
  public var knowledge: VersionVector
  public var cursor: FeedPosition?

  public init(id: NotebookID, heads: [OpID], held: Bool, knowledge: VersionVector, cursor: FeedPosition?) {
    self.id = id
    self.heads = heads
    self.held = held
    self.knowledge = knowledge
    self.cursor = cursor
  }
}

/// The checks of a version-3 hello's notebooks and keys. Pure, so the session, the relay,
/// the fuzz targets and the tests share them; any failure refuses the whole hello.
public enum NotebookEntries {
  /// Notebooks one hello may list: far beyond a household's, and a hello stays below the
  /// frame cap.
  public static let maximumEntries = 256
  /// Heads one entry may list. A log with more (many concurrent changes) lists the lowest
  /// ones: the peer then sends some ops the sender has, which it skips as replays.
  public static let maximumHeads = 64
  /// Public keys one hello may carry.
  public static let maximumKeys = 1024

  public static func check(_ entries: [NotebookEntry]) throws(SyncViolation) -> [CheckedEntry] {
    guard entries.count <= maximumEntries else {
      throw SyncViolation(.malformed, "a sync-hello listing \(entries.count) notebooks")
    }
    guard Set(entries.map(\.id)).count == entries.count else {
      throw SyncViolation(.malformed, "a sync-hello listing one notebook twice")
    }
    var checked: [CheckedEntry] = []
    for entry in entries {
      guard let id = NotebookID(entry.id), id.rawValue == entry.id else {
        throw SyncViolation(.malformed, "a notebook id that is not one")
      }
      guard entry.heads.count <= maximumHeads else {
        throw SyncViolation(.malformed, "a notebook with \(entry.heads.count) heads")
      }
      var heads: [OpID] = []
      for text in entry.heads {
        guard text.utf8.count == 2 * OpID.byteCount, let bytes = Hex.decode(text), Hex.encode(bytes) == text,
          let head = OpID(bytes: bytes)
        else { throw SyncViolation(.malformed, "a log head that is not an op id") }
        heads.append(head)
      }
      guard Set(heads).count == heads.count else { throw SyncViolation(.malformed, "a log head listed twice") }
      guard entry.held || (entry.knowledge == nil && entry.cursor == nil) else {
        throw SyncViolation(.malformed, "knowledge of a notebook the sender does not hold")
      }
      let knowledge = try SyncRules.checkedVector(entry.knowledge ?? [:], "a notebook's knowledge")
      if let cursor = entry.cursor { try SyncRules.checkNumber(cursor.position, "a notebook cursor") }
      checked.append(
        CheckedEntry(id: id, heads: heads, held: entry.held, knowledge: knowledge, cursor: entry.cursor))
    }
    return checked
  }

  /// A hello's public keys: at most `maximumKeys`, each base64 of 32 bytes (whether each is
  /// a key of a device worth keeping is the store's to decide, by its SHA-256).
  public static func checkedKeys(_ texts: [String]) throws(SyncViolation) -> [[UInt8]] {
    guard texts.count <= maximumKeys else { throw SyncViolation(.malformed, "a sync-hello with \(texts.count) keys") }
    var keys: [[UInt8]] = []
    for text in texts {
      guard let key = PeerMessage.bytes(base64: text, count: 32) else {
        throw SyncViolation(.malformed, "a public key that is not 32 bytes of base64")
      }
      keys.append(key)
    }
    return keys
  }
}

import FoundationEssentials
import MemoCore

/// One notebook in a version-2 `sync-hello` (docs/PROTOCOL.md, "Sync, version 2"): the
/// sender shares it with the receiver. It says what each side is to the notebook, where the
/// receiver stands in it (knowledge, cursor), and — only to a member, from a member — the
/// notebook's name and keys.
public struct NotebookOffer: Codable, Equatable, Sendable {
  /// The notebook id (32 lowercase hex digits).
  public var id: String
  /// The sender's own role: `member` (holds the key) or `relay`.
  public var role: String
  /// The role the sender gives the receiver: `member` (with the keys) or `relay`.
  public var given: String
  /// The sender's knowledge in this notebook (its own replica included).
  public var knowledge: [String: UInt64]
  /// The sender's position in the receiver's feed, for this notebook.
  public var cursor: FeedPosition?
  /// The sender's name for the notebook (member to member only).
  public var name: String?
  /// Every key generation the sender holds (member to member only).
  public var keys: [KeyMaterial]?
  /// The devices the sender unshared the notebook from, and when: the receiver stops
  /// sharing it with them too, unless it shared it with them again since.
  public var removed: [Removal]?

  public init(
    id: NotebookID, role: NotebookRole, given: NotebookRole, knowledge: VersionVector, cursor: FeedPosition?,
    name: String? = nil, keys: [KeyMaterial]? = nil, removed: [Removal]? = nil
  ) {
    self.removed = removed
    self.id = id.rawValue
    self.role = role.rawValue
    self.given = given.rawValue
    self.knowledge = knowledge.textEntries
    self.cursor = cursor
    self.name = name
    self.keys = keys
  }

  enum CodingKeys: String, CodingKey {
    case id, role, knowledge, cursor, name, keys, removed
    case given = "as"
  }

  /// One generation of a notebook key, as a member delivers it to another member inside the
  /// trusted TLS connection.
  public struct KeyMaterial: Codable, Equatable, Sendable {
    public var id: String
    public var generation: Int64
    /// The 32 key bytes, base64.
    public var key: String

    public init(id: String, generation: Int64, key: String) {
      self.id = id
      self.generation = generation
      self.key = key
    }
  }

  /// A device the notebook was unshared from (compact device ID on the wire), and when (ms).
  public struct Removal: Codable, Equatable, Sendable {
    public var device: String
    public var at: Int64

    public init(device: DeviceID, at: Int64) {
      self.device = device.compact
      self.at = at
    }
  }
}

/// A `NotebookOffer` after its checks: every field in range and of its form.
public struct CheckedOffer: Equatable, Sendable {
  public var id: NotebookID
  public var role: NotebookRole
  public var given: NotebookRole
  public var knowledge: VersionVector
  public var cursor: FeedPosition?
  public var name: String?
  public var keys: [CheckedKey]
  public var removed: [CheckedRemoval]

  /// A device the offer says the notebook was unshared from, checked.
  public struct CheckedRemoval: Equatable, Sendable {
    public var device: DeviceID
    public var at: Timestamp
  }

  /// A key generation, checked; `key` is still the base64 text (the store decodes it into
  /// locked memory and wipes what it can).
  public struct CheckedKey: Equatable, Sendable {
    public var id: String
    public var generation: Int64
    public var key: String
  }
}

/// The rules for notebooks offered in a `sync-hello`: what an offer may hold, and whether
/// this device joins, accepts or declines it. Pure, so the session, the relay and the tests
/// share them.
public enum NotebookOffers {
  /// Notebooks one hello may offer: far beyond a household's, and a hello stays below the
  /// frame cap (each offer is a few hundred bytes plus its knowledge).
  public static let maximumOffers = 256
  /// Key generations one notebook may have: one per unshare, plus one per device migrated.
  public static let maximumKeys = 256
  /// Devices one offer may list as unshared.
  public static let maximumRemoved = 4096

  /// The offers of a hello, checked like the rest of it (`SyncRules`: knowledge and cursors
  /// in range, replica ids); any field malformed or out of range refuses the whole hello.
  public static func check(_ offers: [NotebookOffer]) throws(SyncViolation) -> [CheckedOffer] {
    guard offers.count <= maximumOffers else {
      throw SyncViolation(.malformed, "a sync-hello offering \(offers.count) notebooks")
    }
    guard Set(offers.map(\.id)).count == offers.count else {
      throw SyncViolation(.malformed, "a sync-hello offering one notebook twice")
    }
    var checked: [CheckedOffer] = []
    for offer in offers {
      let knowledge = try SyncRules.checkedVector(offer.knowledge, "a notebook's knowledge")
      if let cursor = offer.cursor {
        try SyncRules.checkNumber(cursor.position, "a notebook cursor")
      }
      guard let id = NotebookID(offer.id), let role = NotebookRole(rawValue: offer.role),
        let given = NotebookRole(rawValue: offer.given), offer.name.map(NotebookNames.isValid) ?? true,
        (offer.keys?.count ?? 0) <= maximumKeys, (offer.removed?.count ?? 0) <= maximumRemoved
      else { throw SyncViolation(.malformed, "a notebook offer with a field that is not of its form") }
      var removed: [CheckedOffer.CheckedRemoval] = []
      for removal in offer.removed ?? [] {
        guard let device = DeviceID(removal.device), device.compact == removal.device,
          SyncLimits.timestamps.contains(removal.at)
        else { throw SyncViolation(.malformed, "a notebook offer with a field that is not of its form") }
        removed.append(.init(device: device, at: removal.at))
      }
      var keys: [CheckedOffer.CheckedKey] = []
      for key in offer.keys ?? [] {
        guard SyncRecord.isKeyID(key.id), key.generation >= 1, key.generation <= Int64(maximumSequence),
          PeerMessage.bytes(base64: key.key, count: 32) != nil
        else { throw SyncViolation(.malformed, "a notebook key that is not one") }
        keys.append(.init(id: key.id, generation: key.generation, key: key.key))
      }
      // Keys and a name only travel to a member, from a member.
      if !keys.isEmpty && (role != .member || given != .member) {
        throw SyncViolation(.malformed, "notebook keys offered to or by a relay")
      }
      checked.append(
        CheckedOffer(
          id: id, role: role, given: given, knowledge: knowledge, cursor: offer.cursor, name: offer.name, keys: keys,
          removed: removed))
    }
    return checked
  }

  /// The largest sequence number or position a peer may send (2^53: exact in JSON).
  static let maximumSequence: UInt64 = 1 << 53

  /// What this device knows of an offered notebook before deciding.
  public struct Local: Equatable, Sendable {
    /// This device's role, nil when it does not hold the notebook.
    public var role: NotebookRole?
    /// The notebook was deleted here.
    public var isDeleted: Bool
    /// What this device gives the offering peer in this notebook, nil when nothing yet.
    public var peerRole: NotebookMember.Role?

    public init(role: NotebookRole?, isDeleted: Bool = false, peerRole: NotebookMember.Role?) {
      self.role = role
      self.isDeleted = isDeleted
      self.peerRole = peerRole
    }
  }

  public enum Decision: Equatable, Sendable {
    /// A notebook new here: hold it from now on, in this role, shared with the offering
    /// peer (which can read it when it offers it as a member).
    case join(NotebookRole)
    /// Sync it with the offering peer (adding it as a member or relay of the notebook here
    /// when it was not); `upgrade`: this device relayed it and now gets its keys.
    case accept(upgrade: Bool)
    case decline(DeclineReason)
  }

  public enum DeclineReason: String, Equatable, Sendable {
    /// This device unshared the notebook from the peer.
    case unshared
    /// This device deleted the notebook.
    case deleted
    /// Offered as a member without a key (only a member can give one).
    case noKey = "no-key"
    /// The `personal` notebook of a migrated store: every migrated store has it under the
    /// same id, so only an explicit `notebook share` here joins another device's.
    case migrated
  }

  public static func decide(_ offer: CheckedOffer, local: Local) -> Decision {
    if local.peerRole == .removed { return .decline(.unshared) }
    guard let role = local.role else {
      if offer.given == .member { return offer.keys.isEmpty ? .decline(.noKey) : .join(.member) }
      return .join(.relay)
    }
    if local.isDeleted { return .decline(.deleted) }
    if local.peerRole == nil && offer.id == .migrated { return .decline(.migrated) }
    return .accept(upgrade: role == .relay && offer.given == .member && !offer.keys.isEmpty)
  }
}

import MemoCore

/// One signed operation of a notebook's membership log (docs/design/sync-v3.md, section 4;
/// docs/PROTOCOL.md, "Notebook membership log"). Every change to who may read a notebook is
/// one of these, signed by the device that made it and naming the ops it had seen, so that
/// every device, relays included, can check it against the membership as it stood before.
///
/// A plain value: `NotebookOpCoding` turns it into bytes and back, `MembershipLog` checks
/// and orders it. Nothing here trusts the fields; the log decides what they are worth.
public struct NotebookOp: Equatable, Hashable, Sendable {
  /// The encoding's version byte; any other is refused.
  public static let version: UInt8 = 1

  public var notebook: NotebookID
  /// The author's raw Ed25519 public key (32 bytes); its SHA-256 is the author's device ID.
  public var author: [UInt8]
  /// The ids of the ops the author had seen, sorted, no duplicates, at most 64. Empty only
  /// for `create`.
  public var parents: [OpID]
  public var body: Body
  /// Ed25519 over `Signing.message(.op, bytes before the signature)`.
  public var signature: [UInt8]

  public init(notebook: NotebookID, author: [UInt8], parents: [OpID], body: Body, signature: [UInt8] = []) {
    self.notebook = notebook
    self.author = author
    self.parents = parents
    self.body = body
    self.signature = signature
  }

  /// The role a `share` gives.
  public enum Role: UInt8, Sendable, CaseIterable, Comparable {
    case member = 1
    case relay = 2

    /// Member ranks above relay: "the lesser role" of two is relay.
    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue > rhs.rawValue }
  }

  /// One recipient's copy of a new key generation.
  public struct SealedKey: Equatable, Hashable, Sendable {
    /// The recipient, a member.
    public var device: DeviceID
    /// `crypto_box_seal` of the 32-byte key to the device's public key: 80 bytes.
    public var sealed: [UInt8]

    public init(device: DeviceID, sealed: [UInt8]) {
      self.device = device
      self.sealed = sealed
    }
  }

  /// An earlier generation granted to a member: its key id and the key sealed to it.
  public struct GrantedKey: Equatable, Hashable, Sendable {
    public var keyID: [UInt8]
    public var sealed: [UInt8]

    public init(keyID: [UInt8], sealed: [UInt8]) {
      self.keyID = keyID
      self.sealed = sealed
    }
  }

  /// One replica's position in an unshare's cut: revisions of `replica` up to `sequence`
  /// are the removed device's last accepted ones in this notebook.
  public struct CutEntry: Equatable, Hashable, Sendable {
    public var replica: ReplicaID
    public var sequence: UInt64

    public init(replica: ReplicaID, sequence: UInt64) {
      self.replica = replica
      self.sequence = sequence
    }
  }

  /// What the op does; the wire's kind byte is `kind`.
  public enum Body: Equatable, Hashable, Sendable {
    /// Genesis. `nonce` is 16 bytes (the notebook id derives from author and nonce), or
    /// empty for a legacy notebook from before version 3.
    case create(nonce: [UInt8])
    case share(device: DeviceID, role: Role)
    case unshare(device: DeviceID, cut: [CutEntry])
    /// A new generation, sealed to every recipient (sorted by device, no duplicates).
    case key(generation: UInt64, keyID: [UInt8], sealed: [SealedKey])
    /// Earlier generations for `device` (sorted by key id, no duplicates).
    case grant(device: DeviceID, keys: [GrantedKey])
    /// The notebook's name, sealed (AES-256-GCM) under the generation `keyID` names.
    case rename(keyID: [UInt8], sealedName: [UInt8])
    /// Kind 7, retired: a purge op was in the first draft of version 3 and nothing ever acted
    /// on it; purges travel as their own signed statements (`Purge`), keyed by notebook and
    /// memo. Still decoded and kept, so a log that holds one stays whole and every device
    /// holds the same ops, but it changes nothing and no device makes one.
    case retiredPurge(memo: MemoID)

    public var kind: Kind {
      switch self {
      case .create: .create
      case .share: .share
      case .unshare: .unshare
      case .key: .key
      case .grant: .grant
      case .rename: .rename
      case .retiredPurge: .retiredPurge
      }
    }
  }

  /// The kind byte.
  public enum Kind: UInt8, Sendable, CaseIterable {
    case create = 1
    case share = 2
    case unshare = 3
    case key = 4
    case grant = 5
    case rename = 6
    /// Retired: decoded and kept, acts on nothing (`Body.retiredPurge`).
    case retiredPurge = 7
  }

  public var kind: Kind { body.kind }
}

/// The receiving limits of section 4, in one place: the codec refuses past them, the log
/// refuses a notebook's 4,097th op, `MembershipLog.missing` stays inside a frame's bounds.
public enum MembershipLimits {
  public static let parents = 64
  /// Recipients of a `key`, keys of a `grant`, entries of an `unshare`'s cut.
  public static let recipients = 1024
  /// A whole encoded op.
  public static let opBytes = 96 * 1024
  /// Characters of a notebook name; the sealed name is bounded by `sealedNameBytes`.
  public static let nameCharacters = 64
  /// AES-256-GCM's overhead (version byte, 12-byte nonce, 16-byte tag) and 64 characters of
  /// at most 4 UTF-8 bytes each.
  public static let sealedNameBytes = 29 + 4 * nameCharacters
  /// Ops one notebook's log holds.
  public static let opsPerNotebook = 4096
  /// Ops one author may have in one notebook's log: a device that floods a log with ops
  /// takes at most a quarter of it, and the members can still remove it.
  public static let opsPerAuthor = 1024
  /// What one `sync-ops` answer carries for a notebook: ops, and encoded bytes.
  public static let opsPerFrame = 4096
  public static let frameBytes = 1024 * 1024
  /// A sealed 32-byte key: `crypto_box_seal`'s 48 bytes and the key.
  public static let sealedKeyBytes = 80
  /// Key ids and create nonces.
  public static let keyIDBytes = 16
  public static let nonceBytes = 16
  public static let signatureBytes = 64
  public static let publicKeyBytes = 32
}

import MemoCore

/// What a notebook's log says, computed by `MembershipLog.state` from the set of ops alone
/// (docs/PROTOCOL.md, "Notebook membership log"): the same value on every device holding
/// the same ops, whatever order they came in. The store reads who is in, which keys are
/// real and which ops to ignore from here, never from a peer's claim.
public struct MembershipState: Equatable, Sendable {
  /// Devices in the notebook now, with their roles.
  public var members: [DeviceID: NotebookOp.Role] = [:]
  /// Authors of the valid geneses.
  public var creators: Set<DeviceID> = []
  /// Ops that are in the log but count for nothing (unauthorized, or concurrent with a
  /// removal of their author, or a key or grant that breaks the key rules).
  public var void: Set<OpID> = []
  /// Every valid key generation, by generation then op id. Two rotations made concurrently
  /// are two keys of one generation: both open records.
  public var keys: [KeyGeneration] = []
  /// Valid grants of earlier generations, in causal order.
  public var grants: [Grant] = []
  /// The notebook's sealed name: of the latest valid renames, the one with the lowest op id.
  public var name: Rename?
  /// For each device removed now: per replica, the last sequence accepted from it in this
  /// notebook. A replica absent from the cut: nothing of it is accepted. When several
  /// unshares removed the device concurrently, the lower position wins (removal wins).
  public var cuts: [DeviceID: [ReplicaID: UInt64]] = [:]
  /// The ops with no children, sorted.
  public var heads: [OpID] = []

  public init() {}

  public struct KeyGeneration: Equatable, Sendable {
    public var op: OpID
    public var author: DeviceID
    public var generation: UInt64
    public var keyID: [UInt8]
    /// Each recipient's sealed copy (a member of the op's past).
    public var sealed: [DeviceID: [UInt8]]
  }

  public struct Grant: Equatable, Sendable {
    public var op: OpID
    public var device: DeviceID
    public var keys: [NotebookOp.GrantedKey]
  }

  public struct Rename: Equatable, Sendable {
    public var op: OpID
    public var keyID: [UInt8]
    public var sealedName: [UInt8]
  }

  /// What a device may do to or with a notebook.
  public enum Action: Sendable, CaseIterable {
    case share, unshare, rotateKey, grant, rename, purge
    /// Hold its sealed records and forward them.
    case carry
    /// Receive its keys and read its records.
    case read
  }

  public func role(of device: DeviceID) -> NotebookOp.Role? { members[device] }

  /// The table of docs/PROTOCOL.md: members (the creator is one) may do everything; a
  /// relay only carries; anyone else nothing.
  public func may(_ device: DeviceID, _ action: Action) -> Bool {
    switch (members[device], action) {
    case (.member?, _): true
    case (.relay?, .carry): true
    default: false
    }
  }

  /// Who a new key generation is sealed to: the members, never a relay.
  public var keyRecipients: [DeviceID] { members.filter { $0.value == .member }.map(\.key).sorted() }

  /// The highest valid generation, 0 before the first key.
  public var generation: UInt64 { keys.last?.generation ?? 0 }

  /// The key new records are sealed under: the highest generation, and of two keys of it the
  /// one with the lower op id.
  public var currentKey: KeyGeneration? {
    keys.filter { $0.generation == generation }.min { $0.op < $1.op }
  }
}

import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// A notebook whose log has this device in it, that a person has not taken in yet
/// (docs/PROTOCOL.md, "Invitations"): nobody joins a notebook without a person saying so.
public struct NotebookInvitation: Sendable, Equatable {
  public enum State: String, Sendable {
    case pending, declined
  }

  public var notebook: NotebookID
  /// The device it came from (a member, or a relay passing it on).
  public var peer: DeviceID
  /// The member whose share put this device in the notebook (nil when not known).
  public var inviter: DeviceID?
  /// What the log makes this device: a member (reads and writes) or a relay.
  public var role: NotebookRole
  public var state: State
  public var received: Timestamp
  /// The notebook's name, when this device can already open it (a key sealed to it).
  public var name: String?
  /// Devices in the notebook, this one included.
  public var members: Int

  /// How a person reads it: the name (escaped, it came from elsewhere) or the id's start.
  public var displayName: String { name.map { $0.terminalSafe } ?? "notebook \(notebook.short)" }
}

extension MemoStore {
  /// Pending invitations one peer may leave here at once: a household shares a handful of
  /// notebooks; a device that invents notebooks by the hundred fills only its own share.
  public static let maximumPendingInvitations = 16

  enum InvitationDecision: Equatable {
    /// Keep the ops (`isNew`: it was not pending before).
    case keep(isNew: Bool)
    /// The peer has as many pending invitations here as it may.
    case overQuota
  }

  /// Records (or refreshes) the invitation `log` makes for this device: a declined one comes
  /// back only when the log has a share of this device made since it was declined.
  func invitation(
    _ notebook: NotebookID, log: MembershipLog, role: NotebookOp.Role, from peer: DeviceID, now: Timestamp
  ) throws -> InvitationDecision {
    let me = try thisDevice()
    let shares = Self.shares(of: me, in: log)
    let existing = try invitationRow(notebook)
    let inviter = shares.last.map(\.author)
    let roleText = role == .member ? NotebookRole.member.rawValue : NotebookRole.relay.rawValue
    switch existing?.state {
    case .pending?:
      try sql {
        let update = try db.prepare("UPDATE invitations SET role = ?, inviter = ? WHERE notebook = ?")
        try update.bind([.text(roleText), inviter.map { .device($0) } ?? .null, .id(notebook)])
        _ = try update.step()
      }
      return .keep(isNew: false)
    case .declined?:
      let seen = Set(existing?.declinedShares ?? [])
      guard shares.contains(where: { !seen.contains($0.id) }) else { return .keep(isNew: false) }
    case nil:
      break
    }
    let pending = try sql {
      try db.withCached("SELECT count(*) FROM invitations WHERE peer = ? AND state = 'pending'") { read in
        try read.bind(1, peer)
        _ = try read.step()
        return Int(read.int64(0))
      }
    }
    guard pending < Self.maximumPendingInvitations else { return .overQuota }
    try sql {
      let upsert = try db.prepare(
        """
        INSERT INTO invitations (notebook, peer, inviter, role, state, received, shares)
        VALUES (?1, ?2, ?3, ?4, 'pending', ?5, NULL)
        ON CONFLICT(notebook) DO UPDATE SET peer = ?2, inviter = ?3, role = ?4, state = 'pending', received = ?5,
          shares = NULL
        """)
      try upsert.bind([
        .id(notebook), .device(peer), inviter.map { .device($0) } ?? .null, .text(roleText),
        .integer(now),
      ])
      _ = try upsert.step()
    }
    return .keep(isNew: true)
  }

  /// The shares of `device` in `log`, in the log's order, with their ids and authors.
  static func shares(of device: DeviceID, in log: MembershipLog) -> [(id: OpID, author: DeviceID)] {
    log.ops.compactMap { op in
      guard case .share(let shared, _) = op.body, shared == device, let id = opVerifier.id(of: op),
        let author = opVerifier.device(of: op.author)
      else { return nil }
      return (id, author)
    }
  }

  private struct InvitationRow {
    var notebook: NotebookID
    var peer: DeviceID
    var inviter: DeviceID?
    var role: NotebookRole
    var state: NotebookInvitation.State
    var received: Timestamp
    var declinedShares: [OpID]
  }

  private func invitationRows(_ condition: String = "", _ value: String? = nil) throws -> [InvitationRow] {
    try sql {
      let read = try db.prepare(
        "SELECT notebook, peer, inviter, role, state, received, shares FROM invitations \(condition) "
          + "ORDER BY received, notebook")
      if let value { try read.bind(1, value) }
      var rows: [InvitationRow] = []
      while try read.step() {
        guard let notebook = read.notebook(0), let peer = read.device(1),
          let role = NotebookRole(rawValue: read.text(3)), let state = NotebookInvitation.State(rawValue: read.text(4))
        else { continue }
        let bytes = read.isNull(6) ? [] : read.blob(6)
        let shares = stride(from: 0, to: bytes.count - OpID.byteCount + 1, by: OpID.byteCount).compactMap {
          OpID(bytes: Array(bytes[$0..<$0 + OpID.byteCount]))
        }
        rows.append(
          InvitationRow(
            notebook: notebook, peer: peer, inviter: read.isNull(2) ? nil : read.device(2), role: role, state: state,
            received: read.int64(5), declinedShares: shares))
      }
      return rows
    }
  }

  private func invitationRow(_ notebook: NotebookID) throws -> InvitationRow? {
    try invitationRows("WHERE notebook = ?", notebook.rawValue).first
  }

  /// The invitations here, oldest first (`includingDeclined`: those declined too), each with
  /// the notebook's name when a key sealed to this device opens it already.
  public func invitations(includingDeclined: Bool = false) throws -> [NotebookInvitation] {
    try invitationRows(includingDeclined ? "" : "WHERE state = 'pending'").map { row in
      let state = try membershipState(row.notebook)
      return NotebookInvitation(
        notebook: row.notebook, peer: row.peer, inviter: row.inviter, role: row.role, state: row.state,
        received: row.received, name: try invitedName(row.notebook, state), members: state?.members.count ?? 0)
    }
  }

  /// The name the log gives an invited notebook, opened in memory with a key the log seals
  /// to this device (nothing is stored before a person accepts); nil when it cannot be.
  private func invitedName(_ notebook: NotebookID, _ state: MembershipState?) throws -> String? {
    guard let state, let rename = state.name, let me = ownDeviceID(),
      let box = state.keys.first(where: { $0.keyID == rename.keyID })?.sealed[me]
        ?? state.grants.filter({ $0.device == me }).flatMap(\.keys).first(where: { $0.keyID == rename.keyID })?.sealed,
      let signer = try? signer(), let material = try? SealedBox.open(box, with: signer),
      (try? SyncDerivations.keyID(of: material)) == rename.keyID, let sealer = try? AES256GCMKey(material),
      let bytes = try? sealer.open(
        rename.sealedName,
        associatedData: SealingContext.notebookName(notebook: notebook, keyID: Hex.encode(rename.keyID))),
      let name = String(validating: bytes, as: UTF8.self), NotebookNames.isValid(name)
    else { return nil }
    return name
  }

  /// The invitation `reference` names: its name (any case) or a prefix of its notebook id.
  private func findInvitation(_ reference: String, includingDeclined: Bool) throws -> NotebookInvitation {
    let all = try invitations(includingDeclined: includingDeclined)
    let matches = Self.named(reference, in: all, name: \.name, notebook: \.notebook)
    switch matches.count {
    case 1: return matches[0]
    case 0:
      throw MemoPeerError(
        .notFound, "no invitation is to a notebook named \(Self.quotedName(reference))",
        remedy: .listInvitations)
    default:
      throw MemoPeerError(
        .ambiguousID, "\(Self.quotedName(reference)) matches \(matches.count) invitations",
        hint: "give more characters of the notebook's id")
    }
  }

  /// A person accepts an invitation: the notebook is held here from now on, in the role the
  /// log gives this device (a member gets the keys sealed to it and the log's name, made
  /// unique here; a relay keeps sealed records), and syncs from the next sync on.
  public func acceptInvitation(_ reference: String, now: Timestamp) throws -> Notebook {
    try batch {
      let invitation = try findInvitation(reference, includingDeclined: true)
      guard let log = try membershipLog(invitation.notebook) else {
        throw MemoPeerError(.notFound, "the invitation's notebook log is no longer here")
      }
      let me = try thisDevice()
      guard let role = log.state.members[me] else {
        throw MemoPeerError(
          .invalidInput, "\(invitation.displayName) no longer has this device in it (it was removed since)",
          hint: "ask a member to share it again")
      }
      let local: NotebookRole = role == .member ? .member : .relay
      try insertNotebook(
        invitation.notebook, name: local == .member ? try freeName(invitation.name) : nil, role: local, now: now)
      if let nonce = Self.genesisNonce(of: invitation.notebook, in: log) {
        try setNotebookColumn(invitation.notebook, "nonce", .blob(nonce))
      }
      try sql {
        let drop = try db.prepare("DELETE FROM invitations WHERE notebook = ?")
        try drop.bind(1, invitation.notebook)
        _ = try drop.step()
      }
      try materialize(invitation.notebook, now: now)
      try grantMissingKeys(invitation.notebook, now: now)
      return try notebook(invitation.notebook).unwrapOrThrow().notebook
    }
  }

  /// The nonce of a genesis that derives `notebook`'s id (nil for a legacy notebook).
  static func genesisNonce(of notebook: NotebookID, in log: MembershipLog) -> [UInt8]? {
    for op in log.ops {
      guard case .create(let nonce) = op.body, !nonce.isEmpty, let creator = opVerifier.device(of: op.author),
        opVerifier.notebookID(creator: creator, nonce: nonce) == notebook
      else { continue }
      return nonce
    }
    return nil
  }

  /// A person declines an invitation: nothing of the notebook is synced, and it is not
  /// offered again unless a member shares it with this device anew.
  public func declineInvitation(_ reference: String, now: Timestamp) throws -> NotebookInvitation {
    try batch {
      var invitation = try findInvitation(reference, includingDeclined: false)
      let seen = try membershipLog(invitation.notebook).map { Self.shares(of: try thisDevice(), in: $0) } ?? []
      try sql {
        let update = try db.prepare("UPDATE invitations SET state = 'declined', shares = ? WHERE notebook = ?")
        try update.bind([.blob(seen.flatMap(\.id.bytes)), .id(invitation.notebook)])
        _ = try update.step()
      }
      invitation.state = .declined
      return invitation
    }
  }
}

import MemoCore
import MemoPresentation
import MemoStore

// The `--json` shapes of notebooks (docs/CLI.md, "JSON output").

/// One device a notebook is shared with.
public struct SharedJSON: Encodable, Sendable {
  public let name: String?
  public let deviceID: String
  public let role: String

  enum CodingKeys: String, CodingKey {
    case name, role
    case deviceID = "device_id"
  }

  public init(_ member: NotebookMember, names: Names) {
    name = names.devices[member.device]
    deviceID = member.device.description
    role = member.role.rawValue
  }
}

/// A notebook in `notebook list|show|new|rename|share|unshare --json`.
public struct NotebookJSON: Encodable, Sendable {
  public let id: String
  public let name: String?
  public let role: String
  public let isDefault: Bool
  public let memos: Int
  public let sealedRevisions: Int
  public let sharedWith: [SharedJSON]

  enum CodingKeys: String, CodingKey {
    case id, name, role, memos
    case isDefault = "default"
    case sealedRevisions = "sealed_revisions"
    case sharedWith = "shared_with"
  }

  public init(_ summary: NotebookSummary, names: Names) {
    id = summary.notebook.id.rawValue
    name = summary.notebook.name
    role = summary.notebook.role.rawValue
    isDefault = summary.notebook.isDefault
    memos = summary.memos
    sealedRevisions = summary.sealedRevisions
    sharedWith = summary.members.map { SharedJSON($0, names: names) }
  }
}

/// A relayed notebook as `list`, `search`, `export` and the widget show it: counts only.
public struct RelayedJSON: Encodable, Sendable {
  public let notebook: String
  public let sealedRevisions: Int
  public let relayFor: [SharedJSON]

  enum CodingKeys: String, CodingKey {
    case notebook
    case sealedRevisions = "sealed_revisions"
    case relayFor = "relay_for"
  }

  public init(_ summary: NotebookSummary, names: Names) {
    notebook = summary.notebook.id.rawValue
    sealedRevisions = summary.sealedRevisions
    relayFor = summary.members.map { SharedJSON($0, names: names) }
  }
}

/// `notebook list --json`.
public struct NotebookListJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let notebooks: [NotebookJSON]

  public init(_ summaries: [NotebookSummary], names: Names) {
    notebooks = summaries.map { NotebookJSON($0, names: names) }
  }
}

/// `{"schema", "notebook"}`: `notebook show|new|rename|default|share --json`.
public struct NotebookOnlyJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let notebook: NotebookJSON

  public init(_ summary: NotebookSummary, names: Names) { notebook = NotebookJSON(summary, names: names) }
}

/// `notebook delete --json`.
public struct DeletedNotebookJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let deleted: String
  public let moved: Int

  public init(_ deleted: DeletedNotebook) {
    self.deleted = deleted.notebook.id.rawValue
    moved = deleted.moved
  }
}

/// `notebook unshare --json`.
public struct UnsharedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let notebook: NotebookJSON
  public let unshared: String
  public let role: String
  public let keyRotated: Bool

  enum CodingKeys: String, CodingKey {
    case schema, notebook, unshared, role
    case keyRotated = "key_rotated"
  }

  public init(_ unshared: UnsharedNotebook, summary: NotebookSummary, names: Names) {
    notebook = NotebookJSON(summary, names: names)
    self.unshared = unshared.device.description
    role = unshared.result.role.rawValue
    keyRotated = unshared.result.rotated
  }
}

/// A notebook shared with this device that a person has not accepted yet.
public struct InvitationJSON: Encodable, Sendable {
  public let notebook: String
  /// Its name, when this device can already open it (a key sealed to it).
  public let name: String?
  /// What accepting makes this device: `member` or `relay`.
  public let role: String
  public let state: String
  /// The device it came from, and the member whose share put this device in.
  public let from: DeviceJSON
  public let invitedBy: DeviceJSON?
  public let members: Int
  public let received: String

  /// A device by ID, with its name here when it is trusted.
  public struct DeviceJSON: Encodable, Sendable {
    public let deviceID: String
    public let name: String?

    enum CodingKeys: String, CodingKey {
      case name
      case deviceID = "device_id"
    }

    init(_ device: DeviceID, names: Names) {
      deviceID = device.description
      name = names.devices[device]
    }
  }

  enum CodingKeys: String, CodingKey {
    case notebook, name, role, state, from, members, received
    case invitedBy = "invited_by"
  }

  public init(_ invitation: NotebookInvitation, names: Names) {
    notebook = invitation.notebook.rawValue
    name = invitation.name
    role = invitation.role.rawValue
    state = invitation.state.rawValue
    from = DeviceJSON(invitation.peer, names: names)
    invitedBy = invitation.inviter.map { DeviceJSON($0, names: names) }
    members = invitation.members
    received = TimeText.iso(invitation.received)
  }
}

/// `notebook invitations --json`.
public struct InvitationListJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let invitations: [InvitationJSON]

  public init(_ invitations: [NotebookInvitation], names: Names) {
    self.invitations = invitations.map { InvitationJSON($0, names: names) }
  }
}

/// `notebook decline --json`.
public struct DeclinedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let declined: InvitationJSON

  public init(_ invitation: NotebookInvitation, names: Names) { declined = InvitationJSON(invitation, names: names) }
}

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

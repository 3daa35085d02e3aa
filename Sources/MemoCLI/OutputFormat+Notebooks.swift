import MemoCore
import MemoStore

/// How notebooks look on stdout (docs/CLI.md, "JSON output").
extension OutputFormat {
  /// Names of notebooks and of trusted devices, read once per command, for memo lines and
  /// notebook JSON. A node that cannot read its trust store (locked) names devices by ID.
  struct Names {
    var notebooks: [NotebookID: Notebook] = [:]
    var devices: [String: String] = [:]

    init(store: MemoStore?, paths: NodePaths?) {
      for notebook in (try? store?.notebooks()) ?? [] { notebooks[notebook.id] = notebook }
      if let paths, let peers = try? TrustStore(paths: paths).load().peers {
        for peer in peers { devices[peer.deviceID] = peer.name }
      }
    }

    /// The notebook's name, nil for a relayed one (or one this device does not know).
    func notebook(_ id: NotebookID?) -> String? { id.flatMap { notebooks[$0]?.name } }

    /// A device as a person reads it: its trusted name, escaped, or its ID's first groups.
    func device(_ compact: String) -> String {
      devices[compact].map(\.terminalSafe) ?? (DeviceID(compact).map { $0.short + "…" } ?? "?")
    }

    /// Whether a memo in `id` needs its notebook named in a listing (not the default one).
    func isOther(_ id: NotebookID?) -> Bool { id.flatMap { notebooks[$0] }.map { !$0.isDefault } ?? false }
  }

  /// One device a notebook is shared with.
  struct SharedJSON: Encodable {
    let name: String?
    let deviceID: String
    let role: String

    enum CodingKeys: String, CodingKey {
      case name, role
      case deviceID = "device_id"
    }

    init(_ member: NotebookMember, names: Names) {
      name = names.devices[member.device]
      deviceID = DeviceID(member.device)?.description ?? member.device
      role = member.role.rawValue
    }
  }

  /// A notebook in `notebook list|show|new|rename|share|unshare --json`.
  struct NotebookJSON: Encodable {
    let id: String
    let name: String?
    let role: String
    let isDefault: Bool
    let memos: Int
    let sealedRevisions: Int
    let sharedWith: [SharedJSON]

    enum CodingKeys: String, CodingKey {
      case id, name, role, memos
      case isDefault = "default"
      case sealedRevisions = "sealed_revisions"
      case sharedWith = "shared_with"
    }

    init(_ summary: NotebookSummary, names: Names) {
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
  struct RelayedJSON: Encodable {
    let notebook: String
    let sealedRevisions: Int
    let relayFor: [SharedJSON]

    enum CodingKeys: String, CodingKey {
      case notebook
      case sealedRevisions = "sealed_revisions"
      case relayFor = "relay_for"
    }

    init(_ summary: NotebookSummary, names: Names) {
      notebook = summary.notebook.id.rawValue
      sealedRevisions = summary.sealedRevisions
      relayFor = summary.members.map { SharedJSON($0, names: names) }
    }
  }

  /// `notebook 3f2a9c1d…: 812 sealed revisions, relay for laptop-b, laptop-c`.
  static func relayedLine(_ summary: NotebookSummary, names: Names) -> String {
    let count = summary.sealedRevisions
    var text = "\(summary.notebook.displayName): \(count) sealed revision\(count == 1 ? "" : "s")"
    // Sorted: the same line on every run, whatever order the members joined in.
    let members = summary.members.map { names.device($0.device) }.sorted()
    if !members.isEmpty { text += ", relay for " + members.joined(separator: ", ") }
    return text
  }

  /// One line of `notebook list`.
  static func notebookLine(_ summary: NotebookSummary, names: Names) -> String {
    guard summary.notebook.role == .member else { return relayedLine(summary, names: names) }
    var text = summary.notebook.displayName
    if summary.notebook.isDefault { text += " (default)" }
    text += ": \(summary.memos) memo\(summary.memos == 1 ? "" : "s")"
    let shared = summary.members.map { "\(names.device($0.device)) (\($0.role.rawValue))" }
    text += shared.isEmpty ? ", not shared" : ", shared with " + shared.joined(separator: ", ")
    return text
  }
}

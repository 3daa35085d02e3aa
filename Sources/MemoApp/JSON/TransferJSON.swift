import MemoCore
import MemoPresentation
import MemoTransfer

// The `--json` shapes of `init`, `export` and `import`.

/// `init --json`: the node's paths and state.
public struct InitializedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let created: Bool
  public let dataDirectory: String
  public let keyDirectory: String
  public let schemaVersion: Int
  public let memos: Int
  public let protection: String
  public let state: String

  enum CodingKeys: String, CodingKey {
    case schema, created, memos, protection, state
    case dataDirectory = "data_directory"
    case keyDirectory = "key_directory"
    case schemaVersion = "schema_version"
  }

  public init(_ setup: NodeSetup) {
    created = setup.created
    dataDirectory = setup.paths.dataDirectory
    keyDirectory = setup.paths.keyDirectory
    schemaVersion = setup.schemaVersion
    memos = setup.memos
    protection = setup.protection.protection.rawValue
    state = setup.protection.lockState.name
  }
}

/// `export --json` (archive or Markdown): `{schema, exported, path}`, and `relayed`.
public struct ExportJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let exported: Int
  public let path: String
  /// Notebooks this device relays: not exported (it cannot read them); counts only.
  public var relayed: [RelayedJSON]?

  public init(exported: Int, path: String, relayed: [RelayedJSON]?) {
    self.exported = exported
    self.path = path
    self.relayed = relayed
  }
}

/// `import --json`: `{schema, added, updated, unchanged}`, and `ignored` and `refused` for
/// `--markdown`.
public struct ImportJSON: Encodable, Sendable {
  /// A file `import --markdown` left out: its path (exact; JSON escapes it), the error code
  /// and the message, which names the file and the problem, never its text.
  public struct RefusedJSON: Encodable, Sendable, Equatable {
    public let path: String
    public let code: String
    public let message: String
  }

  public let schema = JSONOutput.schema
  public let added: Int
  public let updated: Int
  public let unchanged: Int
  public var ignored: Int?
  public var refused: [RefusedJSON]?

  public init(_ counts: ImportCounts) {
    added = counts.added
    updated = counts.updated
    unchanged = counts.unchanged
  }

  public init(_ result: MarkdownImport) {
    added = result.summary.added
    updated = result.summary.updated
    unchanged = result.summary.unchanged
    ignored = result.summary.ignored
    refused = result.refused.map {
      RefusedJSON(path: $0.path, code: $0.error.code.rawValue, message: $0.error.message)
    }
  }
}

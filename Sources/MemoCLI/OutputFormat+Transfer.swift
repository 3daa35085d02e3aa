extension OutputFormat {
  /// `export --json` (archive or Markdown): `{schema, exported, path}`, and `relayed`.
  struct ExportJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let exported: Int
    let path: String
    /// Notebooks this device relays: not exported (it cannot read them); counts only.
    var relayed: [RelayedJSON]? = nil
  }

  /// `import --json`: `{schema, added, updated, unchanged}`, and `ignored` for `--markdown`.
  struct ImportJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let added: Int
    let updated: Int
    let unchanged: Int
    var ignored: Int?
  }
}

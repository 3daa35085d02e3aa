extension OutputFormat {
  /// `export --json` (archive or Markdown): `{schema, exported, path}`.
  struct ExportJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let exported: Int
    let path: String
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

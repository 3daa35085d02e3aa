import MemoCore

extension MemoStore {
  /// The ids of live memos starting with `prefix` (any prefix when empty), newest first,
  /// at most `limit`. Reads ids only, never a sealed field, so it works while locked and
  /// cannot reveal content (shell completion).
  public func liveMemoIDs(prefix: String, limit: Int) throws -> [MemoID] {
    let pattern = prefix.isEmpty ? "*" : try IDPrefix(prefix).rawValue + "*"
    return try sql {
      let query = try db.prepare("SELECT id FROM memos WHERE deleted = 0 AND id GLOB ? ORDER BY updated DESC LIMIT ?")
      try query.bind([.text(pattern), .integer(Int64(limit))])
      var ids: [MemoID] = []
      while try query.step() { ids.append(try memoID(query.text(0))) }
      return ids
    }
  }
}

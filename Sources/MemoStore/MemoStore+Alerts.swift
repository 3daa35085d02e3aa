import MemoCore

extension MemoStore {
  /// What desktop notifications compare: inbox entries and their senders, memos with
  /// conflict copies, held deletes per device, revocations peers passed on. Reads ids and counts only, no sealed field,
  /// so it works while locked.
  public func alertSnapshot() throws -> AlertSnapshot {
    var snapshot = AlertSnapshot(conflicted: try conflictedMemoIDs())
    try sql {
      let inbox = try db.prepare("SELECT id, sender FROM inbox")
      while try inbox.step() { snapshot.inbox[inbox.text(0)] = inbox.device(1) }
      let held = try db.prepare("SELECT device, count(*) FROM sync_held GROUP BY device")
      while try held.step() {
        guard let device = held.device(0) else { continue }
        snapshot.heldDeletes[device] = Int(held.int64(1))
      }
      let revoked = try db.prepare(
        "SELECT id, revoker, revoked, name FROM revocations WHERE state = 'applied' AND via IS NOT NULL")
      while try revoked.step() {
        guard let revoker = revoked.device(1), let device = revoked.device(2) else { continue }
        snapshot.revocations[revoked.text(0)] = AlertSnapshot.RevokedDevice(
          revoker: revoker, revokedName: revoked.isNull(3) ? device.short + "…" : revoked.text(3))
      }
    }
    return snapshot
  }

  /// The title and private mark of an inbox entry, for a notification; nil while locked
  /// (the entry is sealed under the device key) or when the entry is gone. Plain facts:
  /// MemoNode makes them `DesktopNoticeRules.ArrivedMemo`.
  public func inboxPreview(_ id: String) -> (title: String, isPrivate: Bool)? {
    guard lockState.canReadContent, let entry = try? inboxEntries().first(where: { $0.id == id }) else { return nil }
    return (entry.memo.title, entry.memo.isPrivate)
  }
}

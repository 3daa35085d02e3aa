/// How much history a device keeps (docs/FORMATS.md, "History"; `history` in config.json).
public struct HistoryLimits: Sendable, Equatable {
  /// Superseded revisions kept per memo (the newest).
  public var revisions: Int
  /// Days a superseded revision is kept after it was superseded here.
  public var days: Int
  /// Bytes of sealed history kept in all; the oldest go first.
  public var totalBytes: Int64
  /// Days a deleted memo stays in the trash.
  public var trashDays: Int

  public static let `default` = HistoryLimits(revisions: 100, days: 365, totalBytes: 256 << 20, trashDays: 30)

  /// The most `config.json` allows of each: what is kept while the config cannot be read,
  /// so that a typo in it never prunes history or empties a trash the person asked to keep.
  public static let mostAllowed = HistoryLimits(revisions: 100_000, days: 36_500, totalBytes: 1 << 40, trashDays: 3_650)

  public init(revisions: Int, days: Int, totalBytes: Int64, trashDays: Int) {
    self.revisions = revisions
    self.days = days
    self.totalBytes = totalBytes
    self.trashDays = trashDays
  }
}

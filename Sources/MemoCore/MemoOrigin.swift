/// Who made a memo's revision (`Memo.origin`): the replica whose dot it carries, or, for a
/// memo delivered without sync identity, the device that sent it (docs/FORMATS.md, schema
/// 4). Typed so that a replica id is never read as a device id or the reverse; it becomes
/// text only where it is stored (`memos.origin`) or exported (the archive's `origin`).
public enum MemoOrigin: Hashable, Sendable, CustomStringConvertible {
  case replica(ReplicaID)
  case device(DeviceID)

  /// Parses the stored text: a replica id (32 lowercase hex digits) or a device ID in its
  /// compact base32 form (52 upper-case characters), exactly as `text` writes them. Any
  /// other form, a grouped or lower-case device ID included, is refused (nil), so what is
  /// read back is always written back the same.
  public init?(_ text: String) {
    if let replica = ReplicaID(text) {
      self = .replica(replica)
    } else if let device = DeviceID(text), device.compact == text {
      self = .device(device)
    } else {
      return nil
    }
  }

  /// The text form of the store and the archive: a replica id's hex, a device ID's compact
  /// base32. The two never overlap (32 characters against 52).
  public var text: String {
    switch self {
    case .replica(let id): id.rawValue
    case .device(let id): id.compact
    }
  }

  public var description: String { text }
}

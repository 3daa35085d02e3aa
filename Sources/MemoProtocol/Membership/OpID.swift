import MemoCore

/// The id of a membership-log operation: SHA-256 of its encoded bytes, signature included
/// (docs/design/sync-v3.md, section 4). Ops name their parents by it, and a peer's heads
/// are a list of them, so it is what two devices compare to find what the other lacks.
public struct OpID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public static let byteCount = 32
  public let bytes: [UInt8]

  /// Exactly 32 bytes, or nil.
  public init?(bytes: [UInt8]) {
    guard bytes.count == Self.byteCount else { return nil }
    self.bytes = bytes
  }

  /// Lowercase hex, as logs and test failures show an op.
  public var description: String { Hex.encode(bytes) }
  /// The first 8 hex digits.
  public var short: String { String(description.prefix(8)) }

  /// Byte order: the tie-break the merge rule uses ("the lower op id"), the same everywhere.
  public static func < (lhs: OpID, rhs: OpID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

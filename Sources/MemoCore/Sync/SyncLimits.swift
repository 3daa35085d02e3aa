/// The documented limits of sync and delivery (docs/PROTOCOL.md, "Limits"). Every number a
/// peer sends is checked against them when it is decoded, so no arithmetic on a peer's
/// value can overflow and no peer can make a node keep more than these bounds allow.
/// The blind relay of notebooks (issue 15) applies the same rules: they live here, in the
/// pure core, for every receiver to share.
public enum SyncLimits {
  /// The largest sequence number, feed position, knowledge value or `pending` count a
  /// peer may send: 2^53, far beyond any real history (a replica making one revision per
  /// millisecond reaches it after 285,000 years) and still exact in a JSON double, so every
  /// `+ 1` or `+ count` on one is safe in 64 bits.
  public static let maximumSequence: UInt64 = 1 << 53

  /// The largest memo revision counter (`revision`), likewise.
  public static let maximumRevision: Int64 = 1 << 53

  /// Times (`created`, `updated`, `sent`): milliseconds since 1970, from 0 to 2^53.
  public static let timestamps: ClosedRange<Int64> = 0...(1 << 53)

  /// Replicas in one clock, in one knowledge, and known to one node in all: a home lab has
  /// a handful of devices (each database is one replica); 4,096 leaves room for every
  /// database a household will ever make, and keeps a `sync-hello` far below the 1 MiB
  /// frame cap (4,096 × about 60 bytes).
  public static let maximumReplicas = 4096

  /// New replicas one peer may introduce (bindings first received from it): a device has
  /// two (the one from before signing and its own), so a relay for a household of thirty
  /// devices stays well within it. Without a share per peer, one member could fill the
  /// 4,096 for everyone and every new device's first write would be refused for good.
  public static let maximumReplicasPerPeer = 64

  /// New memos one peer may add here by sync in one UTC day, notebook by notebook: a
  /// household writes far fewer; a device that floods one stops itself, and the rest waits
  /// for the next day. The first sync of a notebook with a device is not counted (a new
  /// laptop's first sync brings a household's memos).
  public static let maximumNewMemosPerPeerPerDay = 10_000

  /// New memos one peer may add in its first sync of a notebook with this device (not
  /// counted by the daily quota: a new laptop's first sync brings a household's memos).
  /// Bounded all the same: a member that floods a notebook just shared with this device,
  /// on a session that lives as long as a live link, stops at this many. Two and a half
  /// times the largest household the benchmarks sync (100,000 memos).
  public static let maximumFirstFillMemos = 250_000

  /// Sealed bytes a relay keeps of one author's records in one notebook: one device cannot
  /// fill the relay's disk for the others.
  public static let maximumRelayedBytesPerAuthor: Int64 = 256 * 1024 * 1024

  /// Live conflict copies one memo may have: beyond that a device is producing them in a
  /// loop, and merging one more head would cost time in every copy already there.
  public static let maximumConflictCopies = 32

  /// Deletes (and emptying edits) held back by the mass-delete guard for one peer: enough
  /// for a wiped device to ask about every memo of a large home store, bounded so that a
  /// device cannot fill the disk with them.
  public static let maximumHeldPerPeer = 65_536

  /// The mass-delete guard counts deletes from one peer across this window (milliseconds):
  /// nine deletes a sync, repeated, add up.
  public static let guardWindow: Int64 = 24 * 3_600_000

  /// A replica id is 16 random bytes in lowercase hex: exactly 32 characters of 0-9a-f.
  public static func isReplicaID(_ text: String) -> Bool { isLowercaseHex(text, count: 32) }

  /// Exactly `count` characters of 0-9a-f (replica, notebook and key ids). Read from the
  /// string's UTF-8 buffer where it has one: a received record names four or five ids.
  public static func isLowercaseHex(_ text: String, count: Int) -> Bool {
    let isHex = { (byte: UInt8) in (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) }
    guard text.utf8.count == count else { return false }
    return text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isHex) } ?? text.utf8.allSatisfy(isHex)
  }

  /// Whether `value` is a sequence number (1...2^53).
  public static func isSequence(_ value: UInt64) -> Bool { value >= 1 && value <= maximumSequence }
}

/// What one peer may bring, as config.json's `quotas` sets it (docs/FORMATS.md): the
/// defaults are `SyncLimits`'; a home server a household trusts with a large first fill
/// can allow more, a laptop less.
public struct SyncQuotas: Sendable, Equatable {
  public var newMemosPerDay: Int
  public var firstFillMemos: Int

  public init(
    newMemosPerDay: Int = SyncLimits.maximumNewMemosPerPeerPerDay,
    firstFillMemos: Int = SyncLimits.maximumFirstFillMemos
  ) {
    self.newMemosPerDay = newMemosPerDay
    self.firstFillMemos = firstFillMemos
  }

  /// What a key of `quotas` may be set to.
  public static let allowed: ClosedRange<Int> = 0...10_000_000
}

import MemoCore

/// The DNS-SD advertisement of a node, version 1 (docs/PROTOCOL.md).
///
/// Passive listeners must not be able to tell who is advertising or link two rotation
/// periods, so the instance name and the `tag` TXT value are both derived, per period, from
/// a per-device discovery key with HMAC-SHA256. Peers given the discovery key at pairing
/// recompute them and recognise the device; nobody else can.
public enum Advertisement {
  public static let protocolVersion = "1"
  /// Default rotation period: 15 minutes.
  public static let defaultRotationSeconds: Int64 = 15 * 60
  /// Rotation periods a node may use, and a peer's announced period must lie in: one
  /// second (tests) to one week.
  public static let rotationRange: ClosedRange<Int64> = 1...604_800
  /// Bytes of the HMAC kept for the tag (64 bits, as 16 hex digits).
  public static let tagBytes = 8

  /// The period number at `time`: whole rotation periods since the Unix epoch. A rotation
  /// outside `rotationRange` (a damaged trust store) is taken as its nearest bound, so the
  /// arithmetic here never overflows.
  public static func period(at time: Timestamp, rotationSeconds: Int64) -> UInt64 {
    UInt64(max(0, time) / 1000 / clamped(rotationSeconds))
  }

  /// When the period containing `time` ends, in milliseconds since the epoch.
  public static func periodEnd(at time: Timestamp, rotationSeconds: Int64) -> Timestamp {
    Timestamp(period(at: time, rotationSeconds: rotationSeconds) + 1) * clamped(rotationSeconds) * 1000
  }

  private static func clamped(_ rotation: Int64) -> Int64 {
    min(max(rotation, rotationRange.lowerBound), rotationRange.upperBound)
  }

  /// HMAC input for the tag of a period: `"memo-peer/1 tag"` ‖ period (u64 big-endian).
  public static func tagMessage(period: UInt64) -> [UInt8] { message("tag", period) }

  /// HMAC input for the instance name of a period.
  public static func nameMessage(period: UInt64) -> [UInt8] { message("name", period) }

  private static func message(_ label: String, _ period: UInt64) -> [UInt8] {
    Array("memo-peer/1 \(label)".utf8) + withUnsafeBytes(of: period.bigEndian, Array.init)
  }

  /// `tag` TXT value: the first 8 bytes of the tag HMAC in lowercase hex.
  public static func tag(fromMAC mac: [UInt8]) -> String { Hex.encode(mac.prefix(tagBytes)) }

  /// Instance name: `memo-peer-` and 8 hex digits of the name HMAC; says nothing about
  /// the person or the machine.
  public static func instanceName(fromMAC mac: [UInt8]) -> String { "memo-peer-" + Hex.encode(mac.prefix(4)) }

  /// The TXT record: protocol version and the rotating tag, nothing else.
  public static func txtRecord(tag: String) -> [String: String] { ["v": protocolVersion, "tag": tag] }

  /// The TXT record while a pairing window is open: `pair=1` and the display name the
  /// person chose, so the other person can pick this device. No tag: the same tag next to
  /// a display name would link the name to the device's regular advertisement.
  public static func pairingTXTRecord(displayName: String) -> [String: String] {
    ["v": protocolVersion, "pair": "1", "name": displayName]
  }

  /// Periods a recogniser accepts for a tag: the current one and its neighbours, so a clock
  /// a little off, or a rotation in flight, still matches.
  public static func candidatePeriods(at time: Timestamp, rotationSeconds: Int64) -> [UInt64] {
    let current = period(at: time, rotationSeconds: rotationSeconds)
    return current == 0 ? [0, 1] : [current - 1, current, current + 1]
  }
}

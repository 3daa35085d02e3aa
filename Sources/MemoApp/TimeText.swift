import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// Times as the `--json` shapes (and the web API) write them.
public enum TimeText {
  /// `2026-11-29T20:15:03.123Z`, for scripts.
  public static func iso(_ timestamp: Timestamp) -> String {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    let millis = Int(timestamp % 1000)
    let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
  }

  /// `2026-11-29 20:15` in local time, for people.
  public static func local(_ timestamp: Timestamp) -> String {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    return
      "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min))"
  }

  /// `iso(timestamp)`'s bytes appended to `bytes` without making strings (`list --json`
  /// writes two per memo); a test compares the two.
  public static func appendISO(_ timestamp: Timestamp, to bytes: inout [UInt8]) {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    // Negative times and years of other than four digits: as `iso` writes them.
    guard timestamp >= 0, (1000...9999).contains(parts.tm_year + 1900) else {
      bytes.append(contentsOf: iso(timestamp).utf8)
      return
    }
    let millis = Int32(timestamp % 1000)
    // `YYYY-MM-DDThh:mm:ss.mmmZ`, written in place and appended at once.
    var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &text) { out in
      writeDate(parts, to: out)
      out[10] = UInt8(ascii: "T")
      writeTwo(parts.tm_hour, to: out, at: 11)
      out[13] = UInt8(ascii: ":")
      writeTwo(parts.tm_min, to: out, at: 14)
      out[16] = UInt8(ascii: ":")
      writeTwo(parts.tm_sec, to: out, at: 17)
      out[19] = UInt8(ascii: ".")
      out[20] = 0x30 + UInt8(truncatingIfNeeded: millis / 100)
      writeTwo(millis % 100, to: out, at: 21)
      out[23] = UInt8(ascii: "Z")
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[..<24]))
    }
  }

  /// `local(timestamp)`'s bytes appended to `bytes` without making strings (`list` writes
  /// one per memo); a test compares the two.
  public static func appendLocal(_ timestamp: Timestamp, to bytes: inout [UInt8]) {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    guard (1000...9999).contains(parts.tm_year + 1900) else {
      bytes.append(contentsOf: local(timestamp).utf8)
      return
    }
    // `YYYY-MM-DD hh:mm`, written in place and appended at once.
    var text: (UInt64, UInt64) = (0, 0)
    withUnsafeMutableBytes(of: &text) { out in
      writeDate(parts, to: out)
      out[10] = UInt8(ascii: " ")
      writeTwo(parts.tm_hour, to: out, at: 11)
      out[13] = UInt8(ascii: ":")
      writeTwo(parts.tm_min, to: out, at: 14)
      bytes.append(contentsOf: UnsafeRawBufferPointer(out))
    }
  }

  /// `YYYY-MM-DD` of a four-digit year, into the first 10 bytes of `out`.
  private static func writeDate(_ parts: tm, to out: UnsafeMutableRawBufferPointer) {
    let year = parts.tm_year + 1900
    writeTwo(year / 100, to: out, at: 0)
    writeTwo(year % 100, to: out, at: 2)
    out[4] = UInt8(ascii: "-")
    writeTwo(parts.tm_mon + 1, to: out, at: 5)
    out[7] = UInt8(ascii: "-")
    writeTwo(parts.tm_mday, to: out, at: 8)
  }

  /// Two digits of a value from 0 to 99 (a leap second's 60 included).
  private static func writeTwo(_ value: Int32, to out: UnsafeMutableRawBufferPointer, at offset: Int) {
    out[offset] = 0x30 + UInt8(truncatingIfNeeded: value / 10)
    out[offset + 1] = 0x30 + UInt8(truncatingIfNeeded: value % 10)
  }

  private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

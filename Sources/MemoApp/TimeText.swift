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

  private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

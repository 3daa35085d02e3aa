import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// journald's stream protocol: when systemd connects stderr to the journal it sets
/// JOURNAL_STREAM to the stream's `DEVICE:INODE`, and a line that starts with `<N>` gets
/// syslog priority N, so `journalctl -p warning` shows only warnings and errors. Anywhere
/// else (a terminal, a file, a pipe) lines stay as they are.
enum JournalStream {
  /// syslog priorities (sd-daemon.h's SD_ERR … SD_DEBUG).
  enum Priority: Int, Sendable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7
  }

  /// Whether this process's stderr is the journal stream systemd named.
  static let isStderr = matches(ProcessInfo.processInfo.environment["JOURNAL_STREAM"], fd: 2)

  /// `<N>` when stderr is the journal, else nothing.
  static func prefix(_ priority: Priority) -> String { isStderr ? "<\(priority.rawValue)>" : "" }

  /// Whether `value` (`DEVICE:INODE`, decimal) names the file open on `fd`. A stderr that
  /// was redirected after systemd started the process no longer matches, as sd_journal
  /// clients require.
  static func matches(_ value: String?, fd: Int32) -> Bool {
    guard let parts = value?.split(separator: ":"), parts.count == 2, let device = UInt64(parts[0]),
      let inode = UInt64(parts[1])
    else { return false }
    var info = stat()
    guard fstat(fd, &info) == 0 else { return false }
    return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
  }
}

#if canImport(Glibc)
  import Glibc
#endif

/// Tells that a file in one folder was written, without reading the folder or its files:
/// an inotify watch (inotify(7)) whose queue the owner drains when it likes. `serve` watches
/// the store's folder so that a memo saved by another process (the CLI, the web page) wakes
/// live sync at once, where polling the database would open it every time.
///
/// inotify says only that *some* write happened, its own process's included; the owner
/// confirms with the store's change feed that something new is there. Events are never
/// lost to the owner: a full kernel queue (IN_Q_OVERFLOW) reads as a change too.
public final class FolderChangeWatch {
  private let descriptor: Int32

  /// Watches `folder` for writes, creations and renames into it.
  public init(folder: String) throws(SystemError) {
    descriptor = try System.call("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
    let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
    do {
      try System.call("inotify_add_watch") { inotify_add_watch(descriptor, folder, mask) }
    } catch {
      close(descriptor)
      throw error
    }
  }

  deinit { close(descriptor) }

  /// Whether anything happened in the folder since the last call; empties the queue. Never
  /// waits.
  public func takeChanges() -> Bool {
    var changed = false
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let (count, failure) = buffer.withUnsafeMutableBytes { bytes in
        let count = read(descriptor, bytes.baseAddress, bytes.count)
        return (count, count < 0 ? Errno.current : nil)
      }
      if count > 0 {
        changed = true
        continue
      }
      if failure == .interrupted { continue }
      // 0 or EAGAIN: the queue is empty. Any other error: report a change, so the owner
      // checks the store rather than missing an edit.
      return changed || (failure != nil && failure != .wouldBlock)
    }
  }
}

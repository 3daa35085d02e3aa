import CSystemShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Tells that a file in one of some folders was written, without reading the folders or
/// their files: one inotify instance (inotify(7)) and one pipe that another thread pokes.
/// `serve` sleeps on it instead of polling: a memo saved by another process (the CLI, the
/// web page), a consent granted, a trust store edited or a push that ended wakes the daemon
/// at once, and with nothing happening it wakes once a second (`wait(upTo:)`'s bound).
///
/// inotify says only that *some* write happened, its own process's included; the owner
/// confirms with what it reads (the store's change feed) that something new is there.
/// Events are never lost to the owner: a full kernel queue (IN_Q_OVERFLOW) or an unreadable
/// queue reads as a change of every folder. With `watchNetwork` it also wakes when this
/// machine's network links or addresses change (the kernel's netlink news, counted, never
/// parsed).
public final class FolderChangeWatch: Sendable {
  private let inotify: Int32
  /// The pipe's read end (polled) and write end (poked); both non-blocking.
  private let pokeRead: Int32
  private let pokeWrite: Int32
  private struct Watched {
    let folder: String
    let ignoring: [String]
  }
  /// Watch descriptor → folder, for the folders watched so far.
  private let watched = Mutex<[Int32: Watched]>([:])

  /// What woke a `wait`.
  public struct Wake: Sendable, Equatable {
    /// The folders in which something was written.
    public var folders: Set<String> = []
    /// Whether `poke` was called.
    public var poked = false
    /// Whether a network link or address changed on this machine (`watchNetwork`).
    public var network = false

    public init(folders: Set<String> = [], poked: Bool = false, network: Bool = false) {
      self.folders = folders
      self.poked = poked
      self.network = network
    }
  }

  /// The kernel's news of links and addresses (`watchNetwork`); -1 until then.
  private let route = Atomic<Int32>(-1)

  public init() throws(SystemError) {
    inotify = try System.call("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
    var ends: [Int32] = [-1, -1]
    guard ends.withUnsafeMutableBufferPointer({ pipe($0.baseAddress) }) == 0 else {
      let failure = Errno.current
      close(inotify)
      throw SystemError("pipe", failure)
    }
    for end in ends {
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
    }
    (pokeRead, pokeWrite) = (ends[0], ends[1])
  }

  /// Watches `folder` too, for what changes a file's content: a write (IN_MODIFY), a file
  /// renamed into it (IN_MOVED_TO: an atomic replace) or removed (IN_DELETE). Not for opens
  /// and closes: opening a file for writing and closing it unchanged (a lock file, SQLite
  /// opening its database) is no change, and a daemon that woke on it would wake itself
  /// each time it reads. Files whose name ends in one of `ignoring` do not count (SQLite's
  /// `-shm`, which readers write too). False when the folder cannot be watched yet (it does
  /// not exist). Watching a folder twice is one watch.
  @discardableResult
  public func watch(_ folder: String, ignoring suffixes: [String] = []) -> Bool {
    if watched.withLock({ $0.values.contains { $0.folder == folder } }) { return true }
    let mask = UInt32(IN_MODIFY | IN_MOVED_TO | IN_DELETE)
    guard let descriptor = try? System.call("inotify_add_watch", { inotify_add_watch(inotify, folder, mask) }) else {
      return false
    }
    watched.withLock { $0[descriptor] = Watched(folder: folder, ignoring: suffixes) }
    return true
  }

  /// Also wakes on every change of this machine's network links and addresses (an
  /// interface up or down, an address added or removed), from the kernel (netlink): `serve`
  /// then dials its peers at once instead of waiting out a pause. False when the kernel
  /// refuses it; calling it again does nothing.
  @discardableResult
  public func watchNetwork() -> Bool {
    guard route.load(ordering: .relaxed) < 0 else { return true }
    let fd = memo_open_route_watch()
    guard fd >= 0 else { return false }
    let (stored, _) = route.compareExchange(expected: -1, desired: fd, ordering: .relaxed)
    if !stored { close(fd) }
    return true
  }

  /// Whether `folder` is watched.
  public func isWatching(_ folder: String) -> Bool { watched.withLock { $0.values.contains { $0.folder == folder } } }

  deinit {
    let fd = route.load(ordering: .relaxed)
    if fd >= 0 { close(fd) }
    close(inotify)
    close(pokeRead)
    close(pokeWrite)
  }

  /// Wakes the thread in `wait` (or the next one) from any thread.
  public func poke() {
    var one: UInt8 = 1
    // A full pipe already holds a wake: nothing is lost when this write is refused.
    _ = write(pokeWrite, &one, 1)
  }

  /// Waits until something was written in a watched folder, `poke` was called, or `seconds`
  /// passed, whichever is first; says what happened since the last call (empty: the time
  /// passed). Blocking: run it on a thread of its own. One caller at a time.
  public func wait(upTo seconds: Double) -> Wake {
    let network = route.load(ordering: .relaxed)
    var descriptors = [
      pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: pokeRead, events: Int16(POLLIN), revents: 0),
    ]
    if network >= 0 { descriptors.append(pollfd(fd: network, events: Int16(POLLIN), revents: 0)) }
    let milliseconds = Int32(max(0, min(seconds, 3600)) * 1000)
    let ready = descriptors.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), milliseconds) }
    // Interrupted or failed: say nothing happened; the owner's next wait comes within `seconds`.
    guard ready > 0 else { return Wake() }
    return Wake(folders: takeChanges(), poked: drainPokes(), network: network >= 0 && drain(network))
  }

  /// The folders written in since the last call; empties the queue. Never waits.
  public func takeChanges() -> Set<String> {
    var changed: Set<String> = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let eventSize = MemoryLayout<inotify_event>.size
    while true {
      let (count, failure) = buffer.withUnsafeMutableBytes { bytes in
        let count = read(inotify, bytes.baseAddress, bytes.count)
        return (count, count < 0 ? Errno.current : nil)
      }
      if count > 0 {
        let folders = watched.withLock { $0 }
        var offset = 0
        // The kernel writes whole events; each names its watch, and its name's length.
        while offset + eventSize <= count {
          let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
          let nameStart = offset + eventSize
          let nameEnd = min(nameStart + Int(event.len), count)
          if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
            changed.formUnion(folders.values.map(\.folder))
          } else if let watched = folders[event.wd] {
            // The name is NUL-padded to its length.
            let name = String(decoding: buffer[nameStart..<max(nameStart, nameEnd)].prefix { $0 != 0 }, as: UTF8.self)
            if !watched.ignoring.contains(where: { name.hasSuffix($0) }) { changed.insert(watched.folder) }
          }
          offset = nameEnd
        }
        continue
      }
      if failure == .interrupted { continue }
      // 0 or EAGAIN: the queue is empty. Any other error: every folder changed, so the
      // owner checks rather than missing an edit.
      if let failure, failure != .wouldBlock { changed.formUnion(watched.withLock { $0.values.map(\.folder) }) }
      return changed
    }
  }

  private func drainPokes() -> Bool { drain(pokeRead) }

  /// Reads `fd` (non-blocking) until it is empty; whether anything was there. What was read
  /// is not looked at: a poke, or the kernel's news that something changed.
  private func drain(_ fd: Int32) -> Bool {
    var any = false
    var buffer = [UInt8](repeating: 0, count: 8192)
    while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 { any = true }
    return any
  }
}

import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

extension LockHolder {
  /// Who holds the write lock of the database at `path`, read from `/proc` (see
  /// `ProcLocks`); nil when nobody can be named (no `/proc`, or the lock is gone).
  static func find(database path: String) -> LockHolder? {
    let files = DatabaseFiles(
      database: lockedFile(path), sharedMemory: lockedFile(path + "-shm"),
      others: [path + "-wal", path + ".open-lock"].compactMap(lockedFile))
    guard let locks = try? PrivateFiles.read("/proc/locks", limit: 4 << 20),
      let pid = ProcLocks.writer(in: String(decoding: locks, as: UTF8.self), of: files, own: getpid())
    else { return nil }
    let stat = try? PrivateFiles.read("/proc/\(pid)/stat", limit: 64 << 10)
    let cmdline = try? PrivateFiles.read("/proc/\(pid)/cmdline", limit: 64 << 10)
    return LockHolder(
      pid: pid, state: stat.flatMap { ProcLocks.state(fromStat: String(decoding: $0, as: UTF8.self)) },
      command: cmdline.flatMap(ProcLocks.command(fromCmdline:)))
  }

  private static func lockedFile(_ path: String) -> LockedFile? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return LockedFile(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
  }
}

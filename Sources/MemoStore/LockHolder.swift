import MemoCore

/// Who holds the database's write lock, as Linux tells it: the pure part (reading
/// `/proc/locks`, `/proc/PID/stat` and `/proc/PID/cmdline`, and the message a person gets),
/// tested without I/O. `LockHolder+Proc.swift` reads the files.
///
/// A person's write waits at most `MemoStore.busyTimeoutMilliseconds` for the lock (issue
/// 39: a daemon stopped inside a write transaction holds it until it is continued, and no
/// code of ours can take it back). Then, rather than a bare "database is busy", the error
/// names the process that holds it, what it is doing (stopped, waiting on a disk, running)
/// and what to do: `/proc/locks` lists every POSIX and flock lock with its holder's pid, by
/// device and inode, so matching the database's files finds the writer.
public struct LockHolder: Equatable, Sendable {
  public let pid: Int32
  /// The state letter of `/proc/PID/stat` (`T`: stopped, `D`: waiting on a disk, `R`, `S`);
  /// nil when it could not be read (the process ended meanwhile).
  public let state: Character?
  /// What the process is, from its command line (`memo-peer serve`), made safe for a
  /// terminal; nil when unknown.
  public let command: String?

  public init(pid: Int32, state: Character?, command: String?) {
    self.pid = pid
    self.state = state
    self.command = command
  }
}

/// A file as `/proc/locks` names it: the device's major and minor number and the inode.
public struct LockedFile: Hashable, Sendable {
  public let major: UInt32
  public let minor: UInt32
  public let inode: UInt64

  public init(major: UInt32, minor: UInt32, inode: UInt64) {
    self.major = major
    self.minor = minor
    self.inode = inode
  }

  /// From `stat`'s `st_dev` (glibc's encoding of major and minor) and `st_ino`.
  public init(device: UInt64, inode: UInt64) {
    major = UInt32(truncatingIfNeeded: ((device >> 8) & 0xFFF) | ((device >> 32) & ~0xFFF))
    minor = UInt32(truncatingIfNeeded: (device & 0xFF) | ((device >> 12) & ~0xFF))
    self.inode = inode
  }
}

/// The files of one database whose locks say who writes: SQLite's write lock is a byte of
/// the `-shm` file in WAL mode (`WAL_WRITE_LOCK`, offset 120) and the reserved and pending
/// bytes of the file itself otherwise; `MemoStore.open` flocks `.open-lock` while it
/// creates or migrates.
public struct DatabaseFiles: Equatable, Sendable {
  public var database: LockedFile?
  public var sharedMemory: LockedFile?
  public var others: [LockedFile]

  public init(database: LockedFile?, sharedMemory: LockedFile?, others: [LockedFile] = []) {
    self.database = database
    self.sharedMemory = sharedMemory
    self.others = others
  }
}

public enum ProcLocks {
  /// One granted lock of `/proc/locks` (waiters, the `->` lines, are not holders).
  public struct Entry: Equatable, Sendable {
    public let exclusive: Bool
    public let pid: Int32
    public let file: LockedFile
    public let start: UInt64
    /// Nil: to the end of the file (`EOF`).
    public let end: UInt64?

    func covers(_ offset: UInt64) -> Bool { start <= offset && end.map { offset <= $0 } ?? true }
  }

  /// SQLite's WAL write lock in the `-shm` file, and its reserved and pending bytes in the
  /// database file (rollback journal mode).
  static let walWriteLock: UInt64 = 120
  static let pendingByte: UInt64 = 0x4000_0000
  static let reservedByte: UInt64 = 0x4000_0001

  /// Parses a line such as `1: POSIX  ADVISORY  WRITE 1234 08:01:5678 120 120`; nil for a
  /// waiter, a lock without a pid (`OFDLCK`'s -1) and anything else.
  public static func parse(_ line: Substring) -> Entry? {
    let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
    guard fields.count >= 8, fields[0].hasSuffix(":"), fields[1] != "->" else { return nil }
    guard let pid = Int32(fields[4]), pid > 0 else { return nil }
    let device = fields[5].split(separator: ":")
    guard device.count == 3, let major = UInt32(device[0], radix: 16), let minor = UInt32(device[1], radix: 16),
      let inode = UInt64(device[2]), let start = UInt64(fields[6])
    else { return nil }
    let end: UInt64?
    if fields[7] == "EOF" {
      end = nil
    } else {
      guard let value = UInt64(fields[7]) else { return nil }
      end = value
    }
    return Entry(
      exclusive: fields[3] == "WRITE", pid: pid, file: LockedFile(major: major, minor: minor, inode: inode),
      start: start, end: end)
  }

  /// The pid holding the write lock of `files`, from the text of `/proc/locks`: first a
  /// holder of SQLite's write lock (the `-shm` byte, or the database's reserved or pending
  /// byte), then any other exclusive lock on one of the files, a pid other than `own`
  /// first. Nil when nobody holds one.
  public static func writer(in text: String, of files: DatabaseFiles, own: Int32) -> Int32? {
    let entries = text.split(separator: "\n").compactMap(parse).filter(\.exclusive)
    func isWriteLock(_ entry: Entry) -> Bool {
      if entry.file == files.sharedMemory { return entry.covers(walWriteLock) }
      if entry.file == files.database { return entry.covers(pendingByte) || entry.covers(reservedByte) }
      return false
    }
    let known = Set([files.database, files.sharedMemory].compactMap { $0 } + files.others)
    let ranked = entries.filter(isWriteLock) + entries.filter { known.contains($0.file) && !isWriteLock($0) }
    return (ranked.first { $0.pid != own } ?? ranked.first)?.pid
  }

  /// The state letter of a `/proc/PID/stat` line: after the command name in parentheses,
  /// which may itself hold spaces and parentheses (so after the last `)`).
  public static func state(fromStat text: String) -> Character? {
    guard let close = text.lastIndex(of: ")") else { return nil }
    return text[text.index(after: close)...].first { $0 != " " }
  }

  /// What a process is, from its `/proc/PID/cmdline` (arguments separated by NUL): the name
  /// of the program and its first argument that is not an option (`memo-peer --debug
  /// serve` is `memo-peer serve`), escaped for a terminal (the bytes are another
  /// process's). Nil when empty (a kernel thread, or gone).
  public static func command(fromCmdline bytes: [UInt8]) -> String? {
    let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    guard let program = arguments.first, !program.isEmpty else { return nil }
    let name = program.split(separator: "/").last.map(String.init) ?? program
    let words = [name] + arguments.dropFirst().filter { !$0.isEmpty && !$0.hasPrefix("-") }.prefix(1)
    return TerminalText.render(words.joined(separator: " ")).text
  }
}

extension LockHolder {
  /// The busy error: who holds the lock and what to do, or the plain one when nobody
  /// could be named. `waited` is the bound a command waits (`busyTimeoutMilliseconds`).
  public static func busyError(_ holder: LockHolder?, waitedMilliseconds waited: Int, diagnostics: String?)
    -> MemoPeerError
  {
    let seconds = waited % 1000 == 0 ? "\(waited / 1000) s" : "\(waited) ms"
    guard let holder else {
      return MemoPeerError(
        .storage, "the memo database is busy (another memo-peer is writing to it); waited \(seconds)",
        hint: "wait for the other command to finish and try again", diagnostics: diagnostics)
    }
    let pid = holder.pid
    let who = "\(holder.command ?? "a process"), pid \(pid),"
    switch holder.state {
    case "T", "t":
      return MemoPeerError(
        .storage,
        "the memo database is busy: \(who) is stopped (state \(holder.state.map(String.init) ?? "T")) "
          + "while it holds the write lock; waited \(seconds)",
        hint: "let it go on with `kill -CONT \(pid)`, or end it with `kill \(pid); kill -CONT \(pid)`; "
          + "then try again",
        diagnostics: diagnostics)
    case "D":
      return MemoPeerError(
        .storage,
        "the memo database is busy: \(who) is waiting on a disk (state D) while it holds the write lock; "
          + "waited \(seconds)",
        hint: "try again once the disk answers; if it never does, check the disk (`dmesg`)",
        diagnostics: diagnostics)
    default:
      let state = holder.state.map { " (state \($0))" } ?? ""
      return MemoPeerError(
        .storage, "the memo database is busy: \(who) has held the write lock for more than \(seconds)\(state)",
        hint: "wait for it to finish and try again; if it keeps holding it, stop it (`kill \(pid)`)",
        diagnostics: diagnostics)
    }
  }
}

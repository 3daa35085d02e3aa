import MemoCore
import XCTest

@testable import MemoStore

/// Who holds the database's write lock, from /proc's text (issue 39): parsed and worded
/// without I/O.
final class LockHolderTests: XCTestCase {
  private let database = LockedFile(major: 0x08, minor: 0x01, inode: 5678)
  private let sharedMemory = LockedFile(major: 0x08, minor: 0x01, inode: 5680)
  private var files: DatabaseFiles { DatabaseFiles(database: database, sharedMemory: sharedMemory) }

  func testAGrantedLockLineIsParsed() {
    let entry = ProcLocks.parse("3: POSIX  ADVISORY  WRITE 1234 08:01:5680 120 120")
    XCTAssertEqual(entry?.pid, 1234)
    XCTAssertEqual(entry?.exclusive, true)
    XCTAssertEqual(entry?.file, sharedMemory)
    XCTAssertEqual(entry?.start, 120)
    XCTAssertEqual(entry?.end, 120)
    XCTAssertNil(ProcLocks.parse("3: FLOCK  ADVISORY  WRITE 77 fd:00:99 0 EOF")?.end)
  }

  func testWaitersLocksWithoutAPidAndGarbageAreNotHolders() {
    XCTAssertNil(ProcLocks.parse("3: -> POSIX  ADVISORY  WRITE 999 08:01:5680 120 120"))
    XCTAssertNil(ProcLocks.parse("4: OFDLCK ADVISORY  WRITE -1 08:01:5680 0 EOF"))
    XCTAssertNil(ProcLocks.parse("not a lock line"))
    XCTAssertNil(ProcLocks.parse("5: POSIX  ADVISORY  WRITE 12 zz:01:5680 0 EOF"))
  }

  func testTheWalWriteLockHolderIsChosenOverReadersAndOtherLocks() {
    let text = """
      1: POSIX  ADVISORY  READ 555 08:01:5678 1073741826 1073742335
      2: POSIX  ADVISORY  READ 555 08:01:5680 128 128
      3: POSIX  ADVISORY  WRITE 777 08:01:9999 120 120
      4: POSIX  ADVISORY  WRITE 888 08:01:5680 121 121
      5: POSIX  ADVISORY  WRITE 1234 08:01:5680 120 120
      5: -> POSIX  ADVISORY  WRITE 555 08:01:5680 120 120
      """
    XCTAssertEqual(ProcLocks.writer(in: text, of: files, own: 555), 1234)
  }

  func testTheReservedByteHoldsTheWriterInRollbackMode() {
    let text = "1: POSIX  ADVISORY  WRITE 42 08:01:5678 1073741825 1073741825\n"
    XCTAssertEqual(ProcLocks.writer(in: text, of: files, own: 1), 42)
  }

  func testAnOpenersFlockNamesItsHolderWhenNothingElseDoes() {
    let openLock = LockedFile(major: 8, minor: 1, inode: 7000)
    let text = "1: FLOCK  ADVISORY  WRITE 4321 08:01:7000 0 EOF\n"
    let withOpenLock = DatabaseFiles(database: database, sharedMemory: sharedMemory, others: [openLock])
    XCTAssertEqual(ProcLocks.writer(in: text, of: withOpenLock, own: 1), 4321)
    XCTAssertNil(ProcLocks.writer(in: text, of: files, own: 1))
  }

  func testAnotherProcessIsNamedBeforeThisOne() {
    let text = """
      1: POSIX  ADVISORY  WRITE 10 08:01:5680 120 120
      2: POSIX  ADVISORY  WRITE 20 08:01:5678 1073741824 1073741825
      """
    XCTAssertEqual(ProcLocks.writer(in: text, of: files, own: 10), 20)
    XCTAssertEqual(ProcLocks.writer(in: "1: POSIX  ADVISORY  WRITE 10 08:01:5680 120 120", of: files, own: 10), 10)
  }

  func testTheDeviceNumbersOfStatMatchThoseOfProcLocks() {
    // glibc's makedev(259, 3): major 259 (0x103), minor 3.
    let device: UInt64 = (259 & 0xFFF) << 8 | 3
    XCTAssertEqual(LockedFile(device: device, inode: 9), LockedFile(major: 0x103, minor: 3, inode: 9))
    XCTAssertEqual(
      ProcLocks.parse("1: POSIX  ADVISORY  WRITE 1 103:03:9 0 EOF")?.file, LockedFile(device: device, inode: 9))
  }

  func testTheStateComesAfterTheLastParenthesisOfTheName() {
    XCTAssertEqual(ProcLocks.state(fromStat: "1234 (memo-peer) T 1 1234 1234 0 -1"), "T")
    XCTAssertEqual(ProcLocks.state(fromStat: "1234 (a) b) (c) D 1 2"), "D")
    XCTAssertNil(ProcLocks.state(fromStat: "garbage"))
  }

  func testTheCommandIsTheProgramAndItsFirstArgumentEscaped() {
    XCTAssertEqual(
      ProcLocks.command(fromCmdline: Array("/usr/bin/memo-peer\0serve\0--debug\0".utf8)), "memo-peer serve")
    XCTAssertEqual(ProcLocks.command(fromCmdline: Array("memo-peer\0--debug\0serve\0".utf8)), "memo-peer serve")
    XCTAssertEqual(ProcLocks.command(fromCmdline: Array("memo-peer\0".utf8)), "memo-peer")
    XCTAssertNil(ProcLocks.command(fromCmdline: []))
    let hostile = ProcLocks.command(fromCmdline: Array("evil\u{1B}[2J\0serve\0".utf8)) ?? ""
    XCTAssertFalse(hostile.unicodeScalars.contains { TerminalText.isUnsafe($0) }, hostile)
  }

  func testAStoppedHolderIsNamedWithHowToLetItGoOn() {
    let error = LockHolder.busyError(
      LockHolder(pid: 1234, state: "T", command: "memo-peer serve"), waitedMilliseconds: 5000, diagnostics: nil)
    XCTAssertEqual(error.code, .storage)
    XCTAssertEqual(error.exitStatus, 7)
    XCTAssertTrue(error.message.contains("memo-peer serve, pid 1234, is stopped (state T)"), error.message)
    XCTAssertTrue(error.message.contains("waited 5 s"), error.message)
    XCTAssertTrue(error.hint?.contains("kill -CONT 1234") == true, error.hint ?? "")
  }

  func testARunningOrDiskBoundHolderIsNamedToo() {
    let running = LockHolder.busyError(
      LockHolder(pid: 99, state: "S", command: nil), waitedMilliseconds: 5000, diagnostics: nil)
    XCTAssertTrue(running.message.contains("a process, pid 99, has held the write lock for more than 5 s"))
    XCTAssertTrue(running.hint?.contains("kill 99") == true)
    let disk = LockHolder.busyError(
      LockHolder(pid: 7, state: "D", command: "memo-peer serve"), waitedMilliseconds: 5000, diagnostics: nil)
    XCTAssertTrue(disk.message.contains("pid 7, is waiting on a disk (state D)"), disk.message)
    let nobody = LockHolder.busyError(nil, waitedMilliseconds: 5000, diagnostics: nil)
    XCTAssertTrue(nobody.message.contains("the memo database is busy"), nobody.message)
  }
}

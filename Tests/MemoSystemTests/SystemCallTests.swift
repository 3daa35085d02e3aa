import MemoSystem
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// `System`'s contract with fake calls (which set errno and return -1 the way the C library
/// does) and one real one.
final class SystemCallTests: XCTestCase {
  /// A fake call: fails with each errno of `failures` in turn, then returns `result`.
  private final class FakeCall {
    var failures: [Int32]
    var calls = 0
    init(failing failures: [Int32]) { self.failures = failures }

    func run<R: FixedWidthInteger & SignedInteger>(returning result: R) -> R {
      calls += 1
      guard !failures.isEmpty else { return result }
      errno = failures.removeFirst()
      return -1
    }

    func pointer(_ result: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
      calls += 1
      guard !failures.isEmpty else { return result }
      errno = failures.removeFirst()
      return nil
    }
  }

  func testInterruptedCallsAreRetriedUntilTheyAnswer() throws {
    let fake = FakeCall(failing: [EINTR, EINTR, EINTR])
    XCTAssertEqual(try System.call("read") { fake.run(returning: 42 as Int) }, 42)
    XCTAssertEqual(fake.calls, 4, "three interruptions, then the answer")
  }

  func testOtherFailuresThrowTheCallsNameAndErrno() {
    let fake = FakeCall(failing: [EINTR, ENOSPC])
    XCTAssertThrowsError(try System.call("write") { fake.run(returning: Int32(0)) }) { error in
      let error = error as? SystemError
      XCTAssertEqual(error?.call, "write")
      XCTAssertEqual(error?.code, ENOSPC)
      XCTAssertEqual(error?.errno, Errno(ENOSPC))
      XCTAssertEqual(error?.description, "write: " + String(cString: strerror(ENOSPC)))
      XCTAssertEqual(error?.diagnostics, "write: errno \(ENOSPC)")
    }
    XCTAssertEqual(fake.calls, 2, "EINTR retried, ENOSPC not")
  }

  func testInterruptionsCanBeLeftToTheCaller() {
    let fake = FakeCall(failing: [EINTR])
    XCTAssertThrowsError(try System.call("connect", retryingOnInterrupt: false) { fake.run(returning: Int32(0)) }) {
      XCTAssertEqual(($0 as? SystemError)?.errno, .interrupted)
    }
    XCTAssertEqual(fake.calls, 1)
  }

  func testOnlyMinusOneIsAFailure() throws {
    XCTAssertEqual(try System.call("keyctl(READ)") { Int(0) }, 0)
    XCTAssertEqual(try System.call("lseek") { Int64(1 << 40) }, 1 << 40)
    XCTAssertEqual(try System.call("odd") { Int32(-2) }, -2, "only -1 reports an errno")
  }

  func testPointerCallsFailOnNil() throws {
    var storage = 0
    try withUnsafeMutableBytes(of: &storage) { bytes in
      let base = try XCTUnwrap(bytes.baseAddress)
      let fake = FakeCall(failing: [EINTR])
      XCTAssertEqual(try System.call("mkdtemp") { fake.pointer(base) }, base)
      XCTAssertEqual(fake.calls, 2)
      let failing = FakeCall(failing: [ENOENT])
      XCTAssertThrowsError(try System.call("mkdtemp") { failing.pointer(base) }) {
        XCTAssertEqual($0 as? SystemError, SystemError("mkdtemp", Errno(ENOENT)))
      }
    }
  }

  func testCallsReturningTheirErrorNumber() {
    XCTAssertNoThrow(try System.callReturningErrno("posix_spawn") { 0 })
    XCTAssertThrowsError(try System.callReturningErrno("posix_spawn") { ENOEXEC }) {
      XCTAssertEqual(($0 as? SystemError)?.diagnostics, "posix_spawn: errno \(ENOEXEC)")
    }
  }

  func testARealCallsFailure() {
    XCTAssertThrowsError(try System.call("open") { open("/nonexistent/memo-peer", O_RDONLY | O_CLOEXEC) }) {
      XCTAssertEqual($0 as? SystemError, SystemError("open", Errno(ENOENT)))
      XCTAssertEqual(Errno(ENOENT).description, "No such file or directory")
    }
  }
}

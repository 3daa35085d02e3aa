import XCTest

@testable import MemoSystem

/// The libraries only some commands use are loaded by them (CLazyLibraries): each loads by
/// its file name, more than once, and a failure says what to install.
final class LazyLibraryTests: XCTestCase {
  func testEveryLibraryLoadsByItsFileName() throws {
    XCTAssertEqual(
      LazyLibrary.allCases.map(\.soname),
      ["libdbus-1.so.3", "libdns_sd.so.1", "libavahi-client.so.3", "libsystemd.so.0", "libmicrohttpd.so.12"])
    for library in LazyLibrary.allCases {
      try library.load()
      try library.load()
    }
  }

  func testAFailureNamesTheLibraryAndItsPackage() {
    let error = LazyLibraryError(library: .microhttpd, reason: "libmicrohttpd.so.12: cannot open shared object file")
    XCTAssertEqual(
      error.message, "libmicrohttpd.so.12 cannot be loaded (libmicrohttpd.so.12: cannot open shared object file)")
    XCTAssertEqual(error.hint, "install the package libmicrohttpd12 (memo-peer's package depends on it)")
  }
}

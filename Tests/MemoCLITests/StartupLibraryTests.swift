import Foundation
import MemoTestSupport
import XCTest

/// Commands start without the libraries only some of them use (CLazyLibraries): the binary
/// names none of them as needed, exports none of their functions (its stubs are hidden, so
/// a library loaded later still reaches libdbus's own functions), and `--version` and
/// `list` run without loading them.
final class StartupLibraryTests: XCTestCase {
  static let lazy = ["libdbus-1.so", "libdns_sd.so", "libavahi-client.so", "libsystemd.so", "libmicrohttpd.so"]

  func testTheBinaryNeitherNeedsNorExportsTheLazyLibraries() throws {
    let readelf = try RequiredTool.path("readelf", package: "binutils")
    let dynamic = try ProcessRunner.run(readelf, ["-dW", CLIProcess.binary], environment: [:])
    XCTAssertEqual(dynamic.status, 0, dynamic.stderr)
    let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
    XCTAssertTrue(needed.contains { $0.contains("libsqlite3.so") }, dynamic.stdout)
    for library in Self.lazy {
      XCTAssertFalse(needed.contains { $0.contains(library) }, "\(library) is NEEDED: \(dynamic.stdout)")
    }
    let symbols = try ProcessRunner.run(readelf, ["--dyn-syms", "-W", CLIProcess.binary], environment: [:])
    XCTAssertEqual(symbols.status, 0, symbols.stderr)
    let exported: [String] = symbols.stdout.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ")
      guard fields.count >= 8, fields[6] != "UND", let name = fields.last else { return nil }
      return ["dbus_", "MHD_", "sd_", "DNSService", "TXTRecord", "avahi_"].contains { name.hasPrefix($0) }
        ? String(name) : nil
    }
    XCTAssertEqual(exported, [], "the stubs must stay inside the binary")
  }

  func testVersionAndListLoadNoneOfThem() throws {
    let cli = try CLIProcess()
    _ = try cli.new("a memo\n")
    for arguments in [["--version"], ["list"]] {
      // ld.so names every library it loads on stderr under LD_DEBUG=libs.
      let result = try cli.run(arguments, extraEnvironment: ["LD_DEBUG": "libs"])
      XCTAssertEqual(result.status, 0, result.stderr)
      XCTAssertTrue(result.stderr.contains("libsqlite3.so"), "LD_DEBUG had no effect: \(result.stderr.prefix(500))")
      for library in Self.lazy {
        XCTAssertFalse(result.stderr.contains(library), "\(arguments) loaded \(library)")
      }
    }
  }
}

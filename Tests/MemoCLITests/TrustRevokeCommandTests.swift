import Foundation
import XCTest

/// `trust remove`, `trust revoke` and `--here-only` as a script and a person see them; the
/// revocation reaching other devices is the lab's (NotebookLabTests) and the store's.
final class TrustRevokeCommandTests: XCTestCase {
  static let peerID = "5HUOJLKAPDGZ36YZNUDCM3MKC7OEYQTJLE4KXELYDPX3COPYZXFA"
  static let otherID = "KFJ2ZBWVMNQ3P5BIF2OYLJ5QJSQZWV2QDVUQJWQ6ZC5CDHHOXN4A"

  func testRevokeSignsARevocationThatStatusAndTrustListShowAndHereOnlySignsNothing() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", Self.peerID, "--name", "stolen"]).status, 0)
    XCTAssertEqual(try cli.run(["trust", "add", Self.otherID, "--name", "old"]).status, 0)

    let revoked = try cli.json(["trust", "revoke", "stolen", "--json"])
    XCTAssertEqual(revoked["revoked"] as? Bool, true)
    XCTAssertEqual(revoked["name"] as? String, "stolen")
    let list = try cli.json(["trust", "list", "--json"])
    XCTAssertEqual((list["peers"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["old"])
    let revocations = try XCTUnwrap(list["revocations"] as? [[String: Any]])
    XCTAssertEqual(revocations.map { $0["state"] as? String }, ["applied"])
    XCTAssertEqual(revocations.first?["name"] as? String, "stolen")
    XCTAssertTrue(try cli.run(["status"]).stdout.contains("revoked: stolen by this device"))
    XCTAssertTrue(try cli.run(["peers"]).stdout.contains("revoked: stolen by this device"))

    let local = try cli.run(["trust", "remove", "old", "--here-only"])
    XCTAssertEqual(local.status, 0, local.stderr)
    XCTAssertTrue(local.stdout.contains("here only"), local.stdout)
    XCTAssertEqual(
      (try cli.json(["trust", "list", "--json"])["revocations"] as? [[String: Any]])?.count, 1,
      "--here-only signs nothing")

    let misuse = try cli.run(["trust", "revoke", "stolen", "--here-only"])
    XCTAssertEqual(misuse.status, 2, misuse.stderr)
    XCTAssertTrue(misuse.stderr.contains("a revocation always spreads"), misuse.stderr)
    let unknown = try cli.run(["trust", "revoke", "nobody"])
    XCTAssertNotEqual(unknown.status, 0)
    XCTAssertFalse(unknown.stderr.contains("Fatal"), unknown.stderr)
  }
}

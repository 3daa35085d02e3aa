import Foundation
import MemoApp
import MemoCore
import MemoPresentation
import MemoStore
import XCTest

/// Protection, lock state and status as the CLI and the page see them.
final class StatusUseCaseTests: XCTestCase {
  func testUnlockAsksForThePassphraseOnlyWhenItIsNeeded() throws {
    let node = try AppFixture()
    XCTAssertThrowsError(
      try node.app().protection.unlock {
        XCTFail("not asked")
        return node.secret()
      }
    ) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notProtected)
    }
    let look = try node.app().protection.protect(
      nil, currentPassphrase: { node.secret() }, newPassphrase: { node.secret() })
    XCTAssertNil(look.changed, "nothing asked for: a look")
    XCTAssertEqual(look.status.protection, .none)
    var asked = 0
    let protected = try node.app().protection.protect(
      .complete,
      currentPassphrase: {
        XCTFail("no passphrase yet")
        return node.secret()
      },
      newPassphrase: {
        asked += 1
        return node.secret()
      })
    XCTAssertEqual(protected.changed, true)
    XCTAssertEqual(asked, 1)
    XCTAssertEqual(protected.status.lockState, .unlocked)
    let already = try node.app().protection.unlock {
      XCTFail("unlocked already")
      return node.secret()
    }
    XCTAssertEqual(already.changed, false)
    XCTAssertEqual(try node.app().protection.lock().status.lockState.canReadContent, false)
    XCTAssertThrowsError(try node.app().protection.unlock { node.secret("wrong passphrase") }) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .passphrase)
    }
    let unlocked = try node.app().protection.unlock { node.secret() }
    XCTAssertEqual(unlocked.changed, true)
    XCTAssertEqual(unlocked.status.lockState, .unlocked)
  }

  func testTheStatusOfAFreshNode() throws {
    let node = try AppFixture()
    let status = try node.app().status.current()
    XCTAssertNil(status.serve, "no daemon runs")
    XCTAssertEqual(Set(status.consent.values.map(\.name)), ["undetermined"])
    let json = try XCTUnwrap(
      try JSONSerialization.jsonObject(with: Data(JSONOutput.encode(StatusJSON(status)))) as? [String: Any])
    // `network` is there when the machine running the tests is on one (its own business).
    XCTAssertEqual(
      Set(json.keys),
      Set(["schema", "consent", "running", "protection", "revocations", "invitations", "kept_aside"])
        .union(status.network == nil ? [] : ["network"]))
    // On a machine with a network: this one, not decided, as nothing is consented yet.
    if let network = json["network"] as? [String: Any] {
      XCTAssertEqual(network["state"] as? String, "undetermined", "\(network)")
      XCTAssertTrue((network["id"] as? String ?? "").hasPrefix("net-"), "\(network)")
    }
    XCTAssertEqual((json["revocations"] as? [Any])?.count, 0)
    XCTAssertEqual((json["invitations"] as? [Any])?.count, 0)
    XCTAssertEqual((json["kept_aside"] as? [Any])?.count, 0)
    XCTAssertEqual(json["running"] as? Bool, false)
    XCTAssertEqual((json["consent"] as? [String: String])?.count, ConsentScope.allCases.count)
  }
}

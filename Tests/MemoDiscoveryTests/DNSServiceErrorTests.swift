import MemoDiscovery
import XCTest

final class DNSServiceErrorTests: XCTestCase {
  func testNoAuthIsTheDocumentedCode() {
    XCTAssertEqual(DNSServiceError.noAuth.code, -65555)
    XCTAssertEqual(DNSServiceError.noAuth.name, "NoAuth")
  }

  func testPolicyDeniedIsDefinedAlthoughAvahiLacksIt() {
    XCTAssertEqual(DNSServiceError.policyDenied.code, -65570)
    XCTAssertEqual(DNSServiceError.policyDenied.description, "PolicyDenied (-65570)")
  }

  func testUnknownCodesKeepTheirNumber() {
    XCTAssertEqual(DNSServiceError(code: -1).name, "Error(-1)")
    XCTAssertEqual(DNSServiceError.serviceNotRunning.code, -65563)
  }
}

import Dispatch
import Foundation
import Synchronization
import XCTest

/// Two hosts write at once with live sync on (issue 39): each link of the pair carries the
/// other's writes while its own commit, so a write comes back over the pair's other link
/// while a session runs. Neither daemon may take that echo for a forgery: no `own-origin`,
/// no refusal of any kind, nothing kept aside, and both hold every memo.
final class LiveWritersLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  func testTwoHostsWritingTwoHundredMemosEachAtOnceNeverBlameEachOther() throws {
    try meshOfLiveDaemons()
    let perHost = 200
    let hosts = Self.hosts
    let failed = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: hosts.count) { index in
      let host = hosts[index]
      for number in 0..<perHost {
        let result = try? Lab.exec(host, ["new", "--title", "\(host) \(number)"], stdin: "made on \(host)\n")
        if result?.status != 0 { failed.withLock { $0.append("\(host) \(number): \(result?.stderr ?? "no run")") } }
      }
    }
    XCTAssertEqual(failed.withLock { $0 }, [], "every write was taken")
    let total = perHost * Self.hosts.count
    var counts: [String: Int] = [:]
    let converged = try Lab.waitUntil(seconds: 120) {
      for host in Self.hosts {
        counts[host] = (object(try ok(host, ["list", "--json"]))["memos"] as? [Any])?.count ?? 0
      }
      return Self.hosts.allSatisfy { counts[$0] == total }
    }
    XCTAssertTrue(converged, "both hold all \(total) memos: \(counts)")
    for host in Self.hosts {
      let log = daemons[host]?.text ?? ""
      for accusation in ["own-origin", "future-clock", "refused its data", "refused this node's data"] {
        XCTAssertFalse(log.contains(accusation), "\(host)'s daemon logged \(accusation): \(log.suffix(2000))")
      }
      let status = object(try ok(host, ["status", "--json"]))
      XCTAssertEqual((status["kept_aside"] as? [Any])?.count ?? 0, 0, "\(host) kept nothing aside: \(status)")
    }
  }
}

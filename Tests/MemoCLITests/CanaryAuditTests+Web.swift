import Foundation
import MemoTestSupport
import XCTest

extension CanaryAuditTests {
  /// `web --debug` while its API hands out memo text: sign in, list, show the private memo,
  /// search for its body (the text in the request body, from stdin, never in argv or a
  /// URL), and while locked a wrong passphrase. The audit then checks web's own output.
  func webScenario(_ cli: CLIProcess, runtime: String, secret: String, locked: Bool) -> AuditScenario {
    let (environment, home, body) = (cli.environment, cli.home, canaries[.privateBody])
    return AuditScenario(
      ["web", "--port", "0"], status: 0,
      run: .inBackground(
        ready: { Self.webLink(runtime) != nil },
        finish: { pid in
          Self.useThePage(
            runtime: runtime, home: home, environment: environment, secret: secret, body: body, locked: locked)
          kill(pid, SIGTERM)
        }))
  }

  /// The sign-in link in the runtime directory's web.json.
  static func webLink(_ runtime: String) -> String? {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
    for entry in entries where entry.hasPrefix("memo-peer-web-") {
      guard let data = FileManager.default.contents(atPath: runtime + "/" + entry + "/web.json"),
        let info = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
      else { continue }
      return info["url"] as? String
    }
    return nil
  }

  static func useThePage(
    runtime: String, home: String, environment: [String: String], secret: String, body: String, locked: Bool
  ) {
    guard let link = webLink(runtime) else { return XCTFail("web wrote no link") }
    let base = link.components(separatedBy: "/login")[0]
    let jar = home + "/audit-web-cookies"
    func curl(_ arguments: [String], stdin: String = "") -> String {
      (try? ProcessRunner.run(
        "/usr/bin/curl", ["-s", "-m", "20", "-b", jar, "-c", jar, "-H", "Origin: \(base)"] + arguments,
        stdin: Array(stdin.utf8), environment: environment))?.stdout ?? ""
    }
    _ = curl([link])
    XCTAssertTrue(curl([base + "/api/memos"]).contains("\"memos\""), "signed in")
    let shown = curl([base + "/api/memos/" + secret])
    let search = curl(
      ["-H", "Content-Type: application/json", "--data-binary", "@-", base + "/api/search"],
      stdin: "{\"text\": \"\(body)\"}")
    if locked {
      XCTAssertTrue(shown.contains("\"locked\""), "show is refused while locked")
      _ = curl(
        ["-H", "Content-Type: application/octet-stream", "--data-binary", "@-", base + "/api/unlock"],
        stdin: "not the passphrase")
    } else {
      XCTAssertTrue(shown.contains(body), "the API served the memo's text")
      XCTAssertTrue(search.contains(secret), "the search found it")
    }
  }
}

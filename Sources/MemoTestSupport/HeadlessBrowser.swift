import Foundation
import XCTest

/// Debian's chromium, headless, driven by python3-selenium through chromium-driver (all
/// three installed by scripts/deps.sh): what the browser tests (Tests/browser) run on.
/// Shared by the single-host page test and the lab's two-host one.
public enum HeadlessBrowser {
  public static let chromium = "/usr/lib/chromium/chromium"
  public static let chromedriver = "/usr/bin/chromedriver"
  public static let python = "/usr/bin/python3"
  static let selenium = "/usr/lib/python3/dist-packages/selenium"

  /// Skips the test (fails it under CI=true) unless the browser, its driver, Python with
  /// selenium and every tool of `tools` are there; `alsoMissing` names what else the caller
  /// found missing (root, say).
  public static func require(
    tools: [String] = [], alsoMissing: [String] = [], file: StaticString = #filePath, line: UInt = #line
  ) throws {
    var missing = ([chromium, chromedriver, python] + tools).filter { access($0, X_OK) != 0 }
    if access(selenium, F_OK) != 0 { missing.append("python3-selenium") }
    missing += alsoMissing
    guard missing.isEmpty else {
      let text = "the browser test needs " + missing.joined(separator: ", ") + " (scripts/deps.sh installs them)"
      if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail(text + "; CI=true requires it to run", file: file, line: line)
        throw XCTSkip("browser unavailable under CI=true: reported as a failure above")
      }
      throw XCTSkip(text)
    }
  }
}

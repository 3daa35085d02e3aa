import Foundation
import XCTest

/// A Debian tool a test needs (installed by scripts/deps.sh). Missing under CI=true is a
/// failure, not a skip: CI must run every test.
enum RequiredTool {
  /// The tool's path, or a failure (CI) or skip (elsewhere) naming the package to install.
  static func path(_ name: String, package: String, file: StaticString = #filePath, line: UInt = #line) throws -> String
  {
    for directory in ["/usr/bin", "/bin", "/usr/sbin"]
    where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
      return directory + "/" + name
    }
    if ProcessInfo.processInfo.environment["CI"] == "true" {
      XCTFail("\(name) is missing (Debian package \(package), installed by scripts/deps.sh)", file: file, line: line)
    }
    throw XCTSkip("\(name) is missing (Debian package \(package)): run `make deps`")
  }

  /// A file a package installs (bash-completion's framework), with the same rule.
  static func file(_ path: String, package: String, file: StaticString = #filePath, line: UInt = #line) throws -> String
  {
    if FileManager.default.fileExists(atPath: path) { return path }
    if ProcessInfo.processInfo.environment["CI"] == "true" {
      XCTFail("\(path) is missing (Debian package \(package), installed by scripts/deps.sh)", file: file, line: line)
    }
    throw XCTSkip("\(path) is missing (Debian package \(package)): run `make deps`")
  }
}

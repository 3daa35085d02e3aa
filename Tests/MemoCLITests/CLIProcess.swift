import Foundation
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// Runs the real `memo-peer` binary in a temporary node home, as a user would.
final class CLIProcess {
  typealias Result = ProcessOutput

  let home: String
  var environment: [String: String]

  static var binary: String {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("memo-peer").path
  }

  init() throws {
    home = try PrivateFiles.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "memo-peer-cli")
    // The node's home exists, as after `memo-peer init`: a MEMO_PEER_HOME that does not is
    // refused by every command but init.
    mkdir(home + "/node", 0o700)
    environment = [
      "MEMO_PEER_HOME": home + "/node", "PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "TZ": "UTC",
    ]
  }

  deinit { try? FileManager.default.removeItem(atPath: home) }

  var dataDirectory: String { home + "/node/data" }
  var keyDirectory: String { home + "/node/keys" }

  /// Runs memo-peer with `arguments`, feeding `stdin` (an empty pipe when nil).
  @discardableResult
  func run(_ arguments: [String], stdin: [UInt8]? = nil, extraEnvironment: [String: String] = [:]) throws -> Result {
    try run(executable: Self.binary, arguments, stdin: stdin, extraEnvironment: extraEnvironment)
  }

  func run(executable: String, _ arguments: [String], stdin: [UInt8]?, extraEnvironment: [String: String] = [:])
    throws -> Result
  {
    try ProcessRunner.run(
      executable, arguments, stdin: stdin ?? [], environment: environment.merging(extraEnvironment) { $1 })
  }

  /// Creates a memo from `body` and returns its id.
  func new(_ body: String, _ options: [String] = []) throws -> String {
    let result = try run(["new"] + options, stdin: Array(body.utf8))
    XCTAssertEqual(result.status, 0, result.stderr)
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  func json(_ arguments: [String], stdin: [UInt8]? = nil) throws -> [String: Any] {
    let result = try run(arguments + ["--json"], stdin: stdin)
    XCTAssertEqual(result.status, 0, result.stderr)
    return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
  }

  func listedIDs() throws -> [String] {
    try (json(["list"])["memos"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
  }

  /// Writes an executable shell script under the home and returns its path.
  func script(_ name: String, _ body: String) throws -> String {
    let path = home + "/" + name
    try ("#!/bin/sh\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o755)
    return path
  }

  /// Every byte of every file under the data directory.
  func rawDataBytes() throws -> Data {
    var data = Data()
    for name in try FileManager.default.contentsOfDirectory(atPath: dataDirectory) {
      data += try Data(contentsOf: URL(fileURLWithPath: dataDirectory + "/" + name))
    }
    return data
  }
}

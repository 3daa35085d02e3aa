import Foundation
import MemoCore
import MemoSystem
import XCTest

@_spi(Fuzzing) @testable import MemoStore
@_spi(Fuzzing) @testable import MemoVault

final class ConsentLogTests: XCTestCase {
  func record(_ decision: ConsentDecision, note: String? = nil) -> ConsentRecord {
    ConsentRecord(
      decision: decision, scope: .localNetwork, usageText: LocalNetworkManifest.builtIn.promptText,
      serviceTypes: ["_memo-peer._tcp"], user: "ana", uid: 1000, time: 5, method: .prompt, note: note)
  }

  func testAppendsAndReadsBackEveryRecord() throws {
    let node = try TemporaryNode()
    let log = ConsentLog(paths: node.paths)
    XCTAssertEqual(try log.records(), [])
    try log.append(record(.granted, note: "set up by ana"))
    try log.append(record(.revoked))
    XCTAssertEqual(try log.records(), [record(.granted, note: "set up by ana"), record(.revoked)])
    var info = stat()
    stat(log.path, &info)
    XCTAssertEqual(info.st_mode & 0o777, 0o600)
    let text = try String(contentsOfFile: log.path, encoding: .utf8)
    XCTAssertEqual(text.split(separator: "\n").count, 2)
    XCTAssertTrue(text.contains("\"usage_text\":\"memo-peer would like"))
    XCTAssertTrue(text.contains("\"method\":\"prompt\""))
  }

  func testATornLastLineIsIgnoredButDamageIsAnError() throws {
    let node = try TemporaryNode()
    let log = ConsentLog(paths: node.paths)
    try log.append(record(.granted))
    let handle = try XCTUnwrap(FileHandle(forWritingAtPath: log.path))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data("{\"version\":1,\"decis".utf8))
    try handle.close()
    XCTAssertEqual(try log.records(), [record(.granted)])
    try Data("garbage\n".utf8 + Array(try Data(contentsOf: URL(fileURLWithPath: log.path)))).write(
      to: URL(fileURLWithPath: log.path))
    assertMemoError(.storage, try log.records()) { XCTAssertTrue($0.message.contains("line 1")) }
  }

  func testConfigAddsServiceTypesAndRejectsBadOnes() throws {
    let node = try TemporaryNode()
    XCTAssertEqual(try NodeConfig.load(paths: node.paths).manifest, LocalNetworkManifest.builtIn)
    try FileManager.default.createDirectory(atPath: node.paths.configDirectory, withIntermediateDirectories: true)
    let path = node.paths.configDirectory + "/config.json"
    try Data(#"{"service_types": ["_ipp._tcp"]}"#.utf8).write(to: URL(fileURLWithPath: path))
    XCTAssertEqual(try NodeConfig.load(paths: node.paths).manifest.serviceTypes, ["_memo-peer._tcp", "_ipp._tcp"])
    try Data(#"{"service_types": ["printer"]}"#.utf8).write(to: URL(fileURLWithPath: path))
    assertMemoError(.invalidInput, try NodeConfig.load(paths: node.paths))
  }

  /// Each history limit is read on its own, the defaults fill the rest, and a value out of
  /// its range is refused naming the key and the range.
  func testConfigHistoryLimitsAreCheckedEachOnItsOwn() throws {
    let parse = { (json: String) in try NodeConfig.parse(Array(json.utf8), path: "config.json").history }
    XCTAssertEqual(try parse(#"{}"#), HistoryLimits.default)
    XCTAssertEqual(
      try parse(#"{"history": {"days": 7, "total_mib": 2}}"#),
      HistoryLimits(revisions: 100, days: 7, totalBytes: 2 << 20, trashDays: 30))
    XCTAssertEqual(
      try parse(#"{"history": {"revisions": 0, "trash_days": 3650}}"#),
      HistoryLimits(revisions: 0, days: 365, totalBytes: 256 << 20, trashDays: 3_650))
    for (key, bad, range) in [
      ("revisions", "100001", "0 to 100000"), ("days", "-1", "0 to 36500"),
      ("total_mib", "1048577", "0 to 1048576"), ("trash_days", "3651", "0 to 3650"),
    ] {
      assertMemoError(.invalidInput, try parse(#"{"history": {"\#(key)": \#(bad)}}"#)) {
        XCTAssertEqual($0.message, "config.json: history.\(key) must be from \(range)")
      }
    }
  }

  func testDiscoveryKeyIsSeparateFromTheDeviceKey() throws {
    let node = try TemporaryNode()
    _ = try node.open()
    let discovery = try KeyFile.discovery(node.paths).loadOrCreate()
    XCTAssertTrue(discovery.constantTimeEquals(try KeyFile.discovery(node.paths).load()))
    XCTAssertFalse(discovery.constantTimeEquals(try KeyFile.device(node.paths).load()))
    XCTAssertEqual(
      Array(try PrivateFiles.read(KeyFile.discovery(node.paths).path, limit: 64)[0..<4]), Array("MPDS".utf8))
  }
}

import Foundation
import XCTest

/// Sending memos between lab hosts: a sends, b receives; c is a stranger b does not trust.
final class DeliveryLabTests: LabTestCase {
  // MARK: - Helpers

  /// a and b trust each other by ID, both with consent.
  func trustBoth() throws {
    for host in ["a", "b"] { try ok(host, ["consent", "grant"]) }
    try ok("a", ["trust", "add", try deviceID("b"), "--name", "bee"])
    try ok("b", ["trust", "add", try deviceID("a"), "--name", "ay"])
  }

  func serve(_ host: String, receiptDelayMilliseconds: Int? = nil) throws -> Background {
    let server: Background
    if let delay = receiptDelayMilliseconds {
      // The test-only build of memo-peer, whose serve pauses before each receipt.
      server = try XCTUnwrap(
        Lab.startTool(host, Lab.testNodeBinary, ["--receipt-delay-ms", String(delay), "--debug", "serve"]))
      background.append(server)
    } else {
      server = try start(host, ["--debug", "serve"])
    }
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { server.text.contains("advertising") }, server.text)
    return server
  }

  func newMemo(_ host: String, _ body: String) throws -> String {
    try ok(host, ["new"], stdin: body).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  func entries(_ host: String, _ command: String) throws -> [[String: Any]] {
    let json = try JSONSerialization.jsonObject(with: Data(try ok(host, [command, "--json"]).utf8))
    return (json as? [String: Any])?["entries"] as? [[String: Any]] ?? []
  }

  func outboxStates(_ host: String) throws -> [String] {
    try entries(host, "outbox").map { ($0["state"] as? String ?? "?") + ":" + ($0["reason"] as? String ?? "") }
  }

  // MARK: - Acceptance

  func testASendsToBAndBsInboxHasItAndAsOutboxSaysDelivered() throws {
    try trustBoth()
    _ = try serve("b")
    let memo = try newMemo("a", "Lab delivery body\nsecond line\n")
    let sent = try Lab.exec("a", ["send", memo, "--to", "bee", "--wait", "30", "--json"])
    XCTAssertEqual(sent.status, 0, sent.stderr)
    let outbox = try entries("a", "outbox")
    XCTAssertEqual(outbox.count, 1)
    XCTAssertEqual(outbox.first?["state"] as? String, "delivered")
    XCTAssertNotNil(outbox.first?["delivered"] as? String, "delivered with its time")
    let inbox = try entries("b", "inbox")
    XCTAssertEqual(inbox.map { $0["title"] as? String }, ["Lab delivery body"])
    XCTAssertEqual(inbox.first?["from"] as? String, "ay")
    XCTAssertEqual(inbox.first?["id"] as? String, outbox.first?["id"] as? String)

    // Accept moves it into b's memos, keeping the text.
    try ok("b", ["inbox", "accept", try XCTUnwrap(inbox.first?["id"] as? String)])
    XCTAssertEqual(try entries("b", "inbox").count, 0)
    XCTAssertTrue(try ok("b", ["list"]).contains("Lab delivery body"))
  }

  func testAnUntrustedHostCannotDeliver() throws {
    for host in ["b", "c"] { try ok(host, ["consent", "grant"]) }
    try ok("c", ["trust", "add", try deviceID("b"), "--name", "bee"])
    _ = try serve("b")
    let memo = try newMemo("c", "from a stranger")
    let sent = try Lab.exec("c", ["send", memo, "--to", "bee", "--wait", "8"])
    XCTAssertNotEqual(sent.status, 0, "b refuses c at the handshake: \(sent.stderr)")
    XCTAssertEqual(try entries("b", "inbox").count, 0)
    let states = try outboxStates("c")
    XCTAssertEqual(states.count, 1)
    XCTAssertTrue(states[0].hasPrefix("waiting:"), "\(states)")
  }

  func testBOfflineThenStartedGetsTheMemoFromAsDaemonAlone() throws {
    try trustBoth()
    _ = try serve("a")
    let memo = try newMemo("a", "queued while b is away")
    try ok("a", ["send", memo, "--to", "bee"])
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 30) { try outboxStates("a").first?.hasPrefix("waiting:peer") == true },
      "\((try? outboxStates("a")) ?? [])")
    _ = try serve("b")
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 90) { try outboxStates("a").first == "delivered:" },
      "\((try? outboxStates("a")) ?? [])")
    XCTAssertEqual(try entries("b", "inbox").count, 1)
  }

  func testWithoutConsentTheEntryWaitsForItAndAGrantDeliversIt() throws {
    try trustBoth()
    _ = try serve("b")
    _ = try serve("a")
    try ok("a", ["consent", "revoke"])
    let memo = try newMemo("a", "waits for consent")
    try ok("a", ["send", memo, "--to", "bee"])
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 20) { try outboxStates("a").first == "waiting:local-network consent" },
      "\((try? outboxStates("a")) ?? [])")
    XCTAssertEqual(try entries("b", "inbox").count, 0)
    try ok("a", ["consent", "grant"])
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 60) { try outboxStates("a").first == "delivered:" },
      "\((try? outboxStates("a")) ?? [])")
    XCTAssertEqual(try entries("b", "inbox").count, 1)
  }

  /// kill -9 of either daemon at random points of deliveries, then restarts: every memo ends
  /// up in b's inbox exactly once. b pauses 300 ms between storing an entry and its receipt,
  /// so many kills land where the receipt is lost and a retransmission follows.
  func testKillNineOnEitherSideLosesNothingAndDuplicatesNothing() throws {
    try trustBoth()
    let delay = 300
    var servers = ["a": try serve("a"), "b": try serve("b", receiptDelayMilliseconds: delay)]
    let rounds = 20
    let perRound = 3
    var generator = SystemRandomNumberGenerator()
    for round in 0..<rounds {
      for index in 0..<perRound {
        let memo = try newMemo("a", "kill round \(round) memo \(index)")
        try ok("a", ["send", memo, "--to", "bee"])
      }
      Thread.sleep(forTimeInterval: Double.random(in: 0.5...2.5, using: &generator))
      let victim = Bool.random(using: &generator) ? "a" : "b"
      if let process = servers[victim] {
        kill(process.process.processIdentifier, SIGKILL)
        process.process.waitUntilExit()
      }
      servers[victim] = try serve(victim, receiptDelayMilliseconds: victim == "b" ? delay : nil)
    }
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 240) { try outboxStates("a").allSatisfy { $0 == "delivered:" } },
      "\((try? outboxStates("a")) ?? [])")
    let outbox = try entries("a", "outbox").compactMap { $0["id"] as? String }
    let inbox = try entries("b", "inbox").compactMap { $0["id"] as? String }
    XCTAssertEqual(outbox.count, rounds * perRound)
    XCTAssertEqual(inbox.count, rounds * perRound, "no duplicate, no loss")
    XCTAssertEqual(Set(inbox), Set(outbox))
    let retransmissions = background.map { $0.text.components(separatedBy: "(earlier)").count - 1 }.reduce(0, +)
    print("kill -9 test: \(retransmissions) retransmission(s) recognised by b after a lost receipt")
  }

  /// tcpdump on b sees the delivery (and, as a check that it captures at all, the mDNS
  /// service type in clear), but never the memo's text.
  func testAPacketCaptureOfTheDeliveryDoesNotContainTheMemoText() throws {
    try trustBoth()
    _ = try serve("b")
    let capture = "\(Lab.directory)/delivery-\(UUID().uuidString).pcap"
    defer { try? FileManager.default.removeItem(atPath: capture) }
    let tcpdump = try XCTUnwrap(
      Lab.startTool("b", "tcpdump", ["-i", "any", "--immediate-mode", "-U", "-Z", "root", "-w", capture]))
    background.append(tcpdump)
    let marker = "capture-marker-\(UUID().uuidString)"
    let memo = try newMemo("a", "\(marker)\n\(marker) in the body too\n")
    let sent = try Lab.exec("a", ["send", memo, "--to", "bee", "--wait", "30"])
    XCTAssertEqual(sent.status, 0, sent.stderr)
    XCTAssertEqual(try entries("b", "inbox").count, 1)
    Thread.sleep(forTimeInterval: 1.5)
    tcpdump.terminate()
    let bytes = try Data(contentsOf: URL(fileURLWithPath: capture))
    XCTAssertNotNil(
      bytes.range(of: Data("_memo-peer".utf8)), "the capture holds the (clear) mDNS traffic: \(tcpdump.text)")
    XCTAssertGreaterThan(bytes.count, 2000, "and the TLS connection")
    XCTAssertNil(bytes.range(of: Data(marker.utf8)), "the memo text never crosses the network in clear")
  }
}

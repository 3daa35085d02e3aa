import Foundation
import XCTest

/// A stranger takes the address a trusted device was reached at, on a network that filters
/// multicast DNS: the daemon that remembers the address dials it, and each dial is one
/// handshake the stranger's key fails, at the address's back-off steps; nothing is trusted
/// and no memo goes either way.
final class StrangerAtOldAddressLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b", "c"] }

  override func tearDown() {
    _ = try? Lab.run(Lab.script, ["multicast", "on"], environment: Lab.labEnvironment)
    super.tearDown()
  }

  func testAStrangerAtARememberedAddressGetsRefusedHandshakesAtTheBackOffSteps() throws {
    for host in Self.hosts {
      try ok(host, ["consent", "grant"])
      try ok(host, ["consent", "grant", "--scope", "background-sync"])
    }
    let (a, b) = (try deviceID("a"), try deviceID("b"))
    try ok("a", ["trust", "add", b, "--name", "host-b"])
    try ok("b", ["trust", "add", a, "--name", "host-a"])
    try Lab.shareOneNotebook(["a", "b"])
    try startDaemon("a")
    try startDaemon("b")
    XCTAssertTrue(try Lab.waitUntil(seconds: 60) { try livePeers("a") == 1 }, "a and b linked")
    let reached = object(try ok("a", ["trust", "address", "host-b", "list", "--json"]))
    let place = try XCTUnwrap(
      ((reached["addresses"] as? [String: Any])?["reached"] as? [[String: Any]])?.first?["address"] as? String,
      "\(reached)")
    let parts = place.split(separator: ":")
    let (address, port) = (String(parts[0]), String(parts[1]))

    // b leaves; the stranger c takes b's address and port, with its own key.
    XCTAssertEqual(try Lab.run(Lab.script, ["multicast", "off"], environment: Lab.labEnvironment).status, 0)
    daemons["b"]?.terminate()
    XCTAssertEqual(try Lab.exec("b", ["addr", "flush", "dev", "eth0"], tool: "ip").status, 0)
    XCTAssertEqual(try Lab.exec("c", ["addr", "flush", "dev", "eth0"], tool: "ip").status, 0)
    XCTAssertEqual(try Lab.exec("c", ["addr", "add", "\(address)/16", "dev", "eth0"], tool: "ip").status, 0)
    _ = try ok("c", ["new", "--title", "the stranger's"], stdin: "not for a\n")
    let stranger = try start("c", ["--debug", "serve", "--port", port])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { stranger.text.contains("advertising") }, stranger.text)

    // An idle live link hears of its peer's end at its next keepalive (30 s of quiet, then
    // 3 s for the pong); from then on a dials b where it was.
    XCTAssertTrue(try Lab.waitUntil(seconds: 60) { try livePeers("a") == 0 }, "a's link with b ended")
    // a's daemon then tries to reach b where it was: the first try is one refused handshake
    // (after the pause that follows a lost link: a fixed 20 s window missed it in CI).
    let refused = { stranger.text.components(separatedBy: "connection refused").count - 1 }
    XCTAssertTrue(
      Lab.waitUntil(seconds: 60) { refused() >= 1 },
      "a did dial the remembered address: \(stranger.text.suffix(2000)); a: \(daemons["a"]?.text.suffix(3000) ?? "")")
    // For 20 s more, each try is one refused handshake, spaced by the back-off (1, 2, 4, 8 s
    // …), never a stream of them.
    let first = refused()
    let watched = 20.0
    Thread.sleep(forTimeInterval: watched)
    let refusals = refused() - first
    print("the stranger at \(address):\(port) refused \(refusals) more handshake(s) in \(Int(watched)) s")
    XCTAssertLessThanOrEqual(refusals, 8, "one per back-off step (1+2+4+8 s in 20 s, and a's own pauses)")
    XCTAssertEqual(try livePeers("a"), 0, "no link with the stranger")
    let list = object(try ok("a", ["trust", "list", "--json"]))["peers"] as? [[String: Any]] ?? []
    XCTAssertEqual(list.compactMap { $0["name"] as? String }, ["host-b"], "nobody new trusted")
    let memos = object(try ok("a", ["list", "--json"]))["memos"] as? [[String: Any]] ?? []
    XCTAssertEqual(memos.count, 0, "nothing came from the stranger")
    let theirs = object(try ok("c", ["list", "--json"]))["memos"] as? [[String: Any]] ?? []
    XCTAssertEqual(theirs.count, 1, "and nothing went to it")
  }
}

import Foundation
import XCTest

/// Trusted connections between lab hosts: a and b pair (or trust each other by ID), c is
/// the stranger and the impostor; `openssl s_client` is the external client.
final class TrustLabTests: LabTestCase {
  // MARK: - Helpers

  func trustedNames(_ host: String) throws -> [String] {
    let json = try JSONSerialization.jsonObject(with: Data(try ok(host, ["trust", "list", "--json"]).utf8))
    return ((json as? [String: Any])?["peers"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
  }

  /// a and b trust each other by ID (the headless way), both with consent; a serves.
  func trustedPairWithServer(arguments: [String] = []) throws -> Background {
    for host in ["a", "b"] { _ = try ok(host, ["consent", "grant"]) }
    _ = try ok("a", ["trust", "add", try deviceID("b"), "--name", "bee"])
    _ = try ok("b", ["trust", "add", try deviceID("a"), "--name", "ay"])
    let server = try start("a", ["--debug", "serve"] + arguments)
    XCTAssertTrue(Lab.waitUntil(seconds: 5) { server.text.contains("advertising") }, server.text)
    return server
  }

  func servePort(_ host: String) throws -> Int {
    let json = try JSONSerialization.jsonObject(with: Data(try ok(host, ["status", "--json"]).utf8))
    return try XCTUnwrap(((json as? [String: Any])?["serve"] as? [String: Any])?["port"] as? Int)
  }

  /// a opens a pairing window, b pairs with it; each person answers as given.
  func pair(answerOnA: String, answerOnB: String, hostExitsWithin: Double = 20) throws -> (
    a: Int32?, b: Int32?, codes: (String?, String?)
  ) {
    for host in ["a", "b"] { _ = try ok(host, ["consent", "grant"]) }
    let (host, hostInput) = try Lab.startOnTerminal("a", ["pair", "--accept", "--name", "ay", "--window", "60"])
    background.append(host)
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { host.text.contains("Pairing window open") }, host.text)
    let (guest, guestInput) = try Lab.startOnTerminal("b", ["pair", "ay", "--name", "bee"])
    background.append(guest)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 20) { code(in: host.text) != nil && code(in: guest.text) != nil },
      "host: \(host.text)\nguest: \(guest.text)")
    // The answer to the code, then Enter at "Share notebooks with …?" (none: the default).
    hostInput.write(Data((answerOnA + "\n\n").utf8))
    guestInput.write(Data((answerOnB + "\n\n").utf8))
    let guestStatus = guest.exitStatus(within: 20)
    let hostStatus = host.exitStatus(within: hostExitsWithin)
    return (hostStatus, guestStatus, (code(in: host.text), code(in: guest.text)))
  }

  func browseTrustedInstances(on host: String, name: String) throws -> [String] {
    let result = try Lab.exec(host, ["browse", "--json", "--timeout", "3"])
    return result.stdout.split(separator: "\n").compactMap {
      let object = try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
      return object?["trusted_name"] as? String == name ? object?["instance"] as? String : nil
    }
  }

  // MARK: - Acceptance

  func testPairingByCodeThenBrowseNamesThePeerAcrossRotations() throws {
    // a rotates every 3 s (from its config), and tells b so when they pair.
    let config = "\(Lab.directory)/a/home/config"
    try FileManager.default.createDirectory(
      atPath: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    try Data(#"{"rotation_seconds": 3}"#.utf8).write(to: URL(fileURLWithPath: config + "/config.json"))
    let outcome = try pair(answerOnA: "y", answerOnB: "y")
    XCTAssertNotNil(outcome.codes.0)
    XCTAssertEqual(outcome.codes.0, outcome.codes.1, "both screens show the same code")
    XCTAssertEqual(outcome.a, 0)
    XCTAssertEqual(outcome.b, 0)
    XCTAssertEqual(try trustedNames("a"), ["bee"])
    XCTAssertEqual(try trustedNames("b"), ["ay"])

    let server = try start("a", ["serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 5) { server.text.contains("advertising") }, server.text)
    let first = try browseTrustedInstances(on: "b", name: "ay")
    XCTAssertFalse(first.isEmpty, "b recognises a by its rotating tag")
    Thread.sleep(forTimeInterval: 3.5)
    let later = try browseTrustedInstances(on: "b", name: "ay")
    XCTAssertFalse(later.isEmpty)
    XCTAssertGreaterThanOrEqual(
      Set(first + later).count, 2, "a rotated its pseudonym, and b still names each one: \(first) \(later)")
  }

  func testARefusalOnEitherSideStoresNothing() throws {
    let outcome = try pair(answerOnA: "y", answerOnB: "n", hostExitsWithin: 3)
    XCTAssertEqual(outcome.b, 10, "the refusing side reports a cancellation")
    XCTAssertNil(outcome.a, "the window stays open for another attempt")
    let host = try XCTUnwrap(background.first)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 5) { host.text.contains("the other device refused the pairing") }, "the host learns of it")
    XCTAssertTrue(host.text.contains("the pairing window stays open"), host.text)
    XCTAssertEqual(try trustedNames("a"), [])
    XCTAssertEqual(try trustedNames("b"), [])
  }

  func testAnImpostorAdvertisingAsTheTrustedPeerIsRefused() throws {
    let server = try trustedPairWithServer()
    XCTAssertEqual(try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "15"]).status, 0)
    let browse = try Lab.exec("b", ["browse", "--json", "--timeout", "3"])
    let advertised = try XCTUnwrap(
      browse.stdout.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
      }.first { $0["trusted_name"] as? String == "ay" }, browse.stdout)
    let instance = try XCTUnwrap(advertised["instance"] as? String)
    let tag = try XCTUnwrap(advertised["tag"] as? String)
    server.terminate()

    // c has its own key and serves with it, but advertises a's current name and tag.
    _ = try ok("c", ["consent", "grant"])
    let impostor = try start("c", ["serve", "--port", "7411"])
    XCTAssertTrue(Lab.waitUntil(seconds: 5) { impostor.text.contains("advertising") }, impostor.text)
    let publish = Lab.startTool(
      "c", "avahi-publish-service", [instance, "_memo-peer._tcp", "7411", "v=1", "tag=\(tag)"])
    defer { publish?.terminate() }
    let result = try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "15"])
    XCTAssertEqual(result.status, 16, result.stderr)
    XCTAssertTrue(result.stderr.contains("refused the device advertising as ay"), result.stderr)
    XCTAssertTrue(result.stderr.contains("not the one pinned"), result.stderr)
  }

  func testOpenSSLClientNeedsATrustedCertificateAndTLS13() throws {
    let server = try trustedPairWithServer()
    let port = try servePort("a")
    let key = "\(Lab.directory)/tool-key.pem"
    let certificate = "\(Lab.directory)/tool-cert.pem"
    XCTAssertEqual(
      try Lab.run("/usr/bin/openssl", ["genpkey", "-algorithm", "ed25519", "-out", key], environment: [:]).status, 0)
    XCTAssertEqual(
      try Lab.run(
        "/usr/bin/openssl",
        ["req", "-x509", "-new", "-key", key, "-subj", "/CN=tool", "-days", "2", "-out", certificate],
        environment: [:]
      ).status, 0)
    func sClient(_ extra: [String]) throws -> Lab.Result {
      // stdin stays open for a second so the client reads what the server answers.
      try Lab.exec(
        "b",
        [
          "-c",
          "sleep 1 | openssl s_client -connect 169.254.77.11:\(port) -alpn memo-peer/1 -brief "
            + extra.joined(separator: " "),
        ],
        tool: "/bin/sh")
    }
    let untrusted = try sClient(["-cert", certificate, "-key", key])
    XCTAssertNotEqual(untrusted.status, 0, untrusted.stderr)
    XCTAssertTrue(untrusted.stderr.contains("alert"), untrusted.stderr)
    XCTAssertFalse(untrusted.stdout.contains("discovery_key"), "a stranger gets nothing")
    let noCertificate = try sClient([])
    XCTAssertTrue(noCertificate.stderr.contains("alert certificate required"), noCertificate.stderr)
    let tls12 = try sClient(["-tls1_2", "-cert", certificate, "-key", key])
    XCTAssertNotEqual(tls12.status, 0)
    XCTAssertTrue(tls12.stderr.contains("alert protocol version"), tls12.stderr)
    XCTAssertTrue(Lab.waitUntil(seconds: 3) { server.text.contains("connection refused: untrusted-peer") }, server.text)

    // The same external client, once its key is trusted, gets the hello.
    let toolID = try Lab.run(
      "/bin/sh", ["-c", "openssl pkey -in \(key) -pubout -outform DER | tail -c 32 | sha256sum | cut -c1-64"],
      environment: [:]
    ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let base32 = try Lab.run(
      "/usr/bin/python3",
      ["-c", "import base64,sys; print(base64.b32encode(bytes.fromhex(sys.argv[1])).decode().rstrip('='))", toolID],
      environment: [:]
    ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    _ = try ok("a", ["trust", "add", base32, "--name", "tool"])
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 5) {
        try sClient(["-cert", certificate, "-key", key]).stdout.contains("\"discovery_key\"")
      }, "a trusted external client gets the hello frame: \(server.text.suffix(3000))")
  }

  func testTheWidgetCountsATrustedPeerThatConnectedAsOnline() throws {
    _ = try trustedPairWithServer()
    XCTAssertTrue(try ok("a", ["widget", "--format", "plain"]).contains("0 online"))
    XCTAssertEqual(try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "15"]).status, 0)
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 5) { try ok("a", ["widget", "--format", "plain"]).contains("1 online") },
      "b's trusted connection makes it count as online on a")
    _ = try ok("a", ["trust", "remove", "bee"])
    XCTAssertTrue(try ok("a", ["widget", "--format", "plain"]).contains("0 online"), "a removed device is not counted")
  }

  func testTrustRemoveClosesTheLiveConnectionAndRefusesTheNext() throws {
    let server = try trustedPairWithServer()
    let pinger = try start("b", ["ping", "ay", "--count", "200", "--interval", "0.1", "--timeout", "15"])
    XCTAssertTrue(Lab.waitUntil(seconds: 15) { pinger.text.contains("pong from ay") }, pinger.text)
    _ = try ok("a", ["trust", "remove", "bee"])
    XCTAssertEqual(pinger.exitStatus(within: 5), 17, "the live connection is closed at once: \(pinger.text)")
    XCTAssertTrue(pinger.text.contains("closed the connection"), pinger.text)
    let next = try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "20"])
    XCTAssertEqual(next.status, 16, next.stderr)
    XCTAssertTrue(next.stderr.contains("ay refused this device"), next.stderr)
    XCTAssertTrue(server.text.contains("connection refused: untrusted-peer"), server.text)
  }

  /// The compact device IDs `host`'s daemon has a live link with (`status --json`).
  func livePeers(_ host: String) throws -> [String] {
    (object(try ok(host, ["status", "--json"]))["serve"] as? [String: Any])?["live_peers"] as? [String] ?? []
  }

  /// Issue 38: a handshake, and a whole session, started right after `trust remove` were
  /// still answered for about 3 s. Now, when the command returns, the daemon has closed the
  /// device's live links (both ways) and its served connections, and the very next
  /// handshake from it fails.
  func testTrustRemoveHoldsWhenTheCommandReturns() throws {
    for host in ["a", "b"] { _ = try ok(host, ["consent", "grant", "--scope", "background-sync"]) }
    let server = try trustedPairWithServer()
    let peerDaemon = try start("b", ["--debug", "serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { peerDaemon.text.contains("advertising") }, peerDaemon.text)
    let bee = try deviceID("b").replacingOccurrences(of: "-", with: "")
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 60) { try livePeers("a").contains { $0.caseInsensitiveCompare(bee) == .orderedSame } },
      "a links with b: \(server.text)")
    let pinger = try start("b", ["ping", "ay", "--count", "600", "--interval", "0.1", "--timeout", "15"])
    XCTAssertTrue(Lab.waitUntil(seconds: 15) { pinger.text.contains("pong from ay") }, pinger.text)

    let removal = object(try ok("a", ["trust", "remove", "bee", "--json"]))
    let next = try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "20"])
    XCTAssertEqual(removal["daemon"] as? String, "confirmed", "the daemon said it closed b's links: \(removal)")
    XCTAssertEqual(try livePeers("a"), [], "no live link with b once the command returned")
    XCTAssertEqual(next.status, 16, "the handshake right after the command is refused: \(next.stderr)")
    XCTAssertTrue(next.stderr.contains("ay refused this device"), next.stderr)
    XCTAssertEqual(pinger.exitStatus(within: 5), 17, "the served connection was closed: \(pinger.text)")
  }

  func testAConnectionWaitsForConsentAndForThePeerThenProceeds() throws {
    _ = try ok("a", ["consent", "grant"])
    _ = try ok("a", ["trust", "add", try deviceID("b"), "--name", "bee"])
    _ = try ok("b", ["trust", "add", try deviceID("a"), "--name", "ay"])
    let pinger = try start("b", ["ping", "ay", "--count", "1", "--timeout", "40"])
    XCTAssertTrue(Lab.waitUntil(seconds: 5) { pinger.text.contains("waiting (local-network consent)") }, pinger.text)
    _ = try ok("b", ["consent", "grant"])
    XCTAssertTrue(Lab.waitUntil(seconds: 5) { pinger.text.contains("waiting (peer not found") }, pinger.text)
    XCTAssertTrue(pinger.process.isRunning, "still waiting, not failed")
    _ = try start("a", ["serve"])
    XCTAssertEqual(pinger.exitStatus(within: 20), 0, pinger.text)
    XCTAssertTrue(pinger.text.contains("ready"), pinger.text)
    XCTAssertTrue(pinger.text.contains("pong from ay"), pinger.text)
  }
}

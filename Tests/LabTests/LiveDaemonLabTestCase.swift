import Foundation
import XCTest

/// A lab test case whose hosts run `serve --web` with live sync, as the user unit does: the
/// mesh LiveSyncLabTests and LiveSyncBrowserLabTests start from.
class LiveDaemonLabTestCase: LabTestCase {
  /// Each host's `serve --web` daemon, by host.
  var daemons: [String: Background] = [:]

  override func tearDown() {
    // A stopped daemon only ends once it is continued.
    for daemon in daemons.values where daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGCONT) }
    daemons = [:]
    super.tearDown()
  }

  /// Every host trusts every other, shares one notebook with all, grants both consents, and
  /// runs `serve --web`; returns once every daemon has a live link with each of the others.
  func meshOfLiveDaemons() throws {
    var ids: [String: String] = [:]
    for host in Self.hosts {
      try ok(host, ["consent", "grant"])
      try ok(host, ["consent", "grant", "--scope", "background-sync"])
      ids[host] = try deviceID(host)
    }
    for host in Self.hosts {
      for other in Self.hosts where other != host {
        try ok(host, ["trust", "add", try XCTUnwrap(ids[other]), "--name", "host-\(other)"])
      }
    }
    try Lab.shareOneNotebook(Self.hosts)
    for host in Self.hosts { try startDaemon(host) }
    for host in Self.hosts {
      XCTAssertTrue(
        try Lab.waitUntil(seconds: 60) { try livePeers(host) == Self.hosts.count - 1 },
        "\(host) links: \((try? livePeers(host)) ?? -1); \(daemons[host]?.text ?? "")")
    }
  }

  func startDaemon(_ host: String) throws {
    let daemon = try start(host, ["--debug", "serve", "--web"])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { daemon.text.contains("advertising") }, daemon.text)
    daemons[host] = daemon
  }

  /// How many live links `host`'s daemon has up (`status --json`'s `serve.live_peers`).
  func livePeers(_ host: String) throws -> Int {
    ((object(try ok(host, ["status", "--json"]))["serve"] as? [String: Any])?["live_peers"] as? [Any])?.count ?? 0
  }

  /// A memo made on `host` with the command line; its id.
  func newMemo(_ host: String, title: String) throws -> String {
    try ok(host, ["new", "--title", title], stdin: "made on \(host)\n").trimmingCharacters(in: .whitespacesAndNewlines)
  }
}

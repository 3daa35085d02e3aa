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

  /// `owner` makes notebook `name`, shares it with `invited` and writes `count` memos in it
  /// (after the share, so that the first memo's push carries the share: an invitation, and
  /// none of the records, the notebook not being held there); returns once `invited` lists
  /// the invitation (within 10 s; nil if it does not): the notebook's id, and the memos'
  /// titles by id.
  func shareNewNotebook(_ name: String, from owner: String, with invited: String, memos count: Int) throws -> (
    notebook: String?, memos: [String: String]
  ) {
    try ok(owner, ["notebook", "new", name])
    try ok(owner, ["notebook", "share", name, "--with", "host-\(invited)"])
    var memos: [String: String] = [:]
    for index in 0..<count {
      let title = "\(name) \(index)"
      let id = try ok(owner, ["new", "--notebook", name, "--title", title], stdin: "made on \(owner)\n")
      memos[id.trimmingCharacters(in: .whitespacesAndNewlines)] = title
    }
    var notebook: String?
    _ = Lab.waitUntil(seconds: 10) {
      notebook = invitations(invited).first
      return notebook != nil
    }
    return (notebook, memos)
  }

  /// The notebooks `host` is invited to (`notebook invitations --json`).
  func invitations(_ host: String) -> [String] {
    guard let listed = try? Lab.exec(host, ["notebook", "invitations", "--json"]), listed.status == 0 else { return [] }
    return (object(listed.stdout)["invitations"] as? [[String: Any]] ?? []).compactMap { $0["notebook"] as? String }
  }

  /// The ids of the memos `host` lists (`list --json`).
  func listedIDs(_ host: String) throws -> Set<String> {
    Set(
      (object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
  }

  /// A memo made on `host` with the command line; its id.
  func newMemo(_ host: String, title: String) throws -> String {
    try ok(host, ["new", "--title", title], stdin: "made on \(host)\n").trimmingCharacters(in: .whitespacesAndNewlines)
  }
}

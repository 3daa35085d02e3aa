import Foundation
import MemoTestSupport
import XCTest

/// A stranger on the LAN publishes a pairing window (with `avahi-publish-service`, a client
/// nobody here wrote) whose instance name and TXT `name` hold ESC, CR and a forged code line.
/// `pair` and `browse` run on a real terminal (tmux) on host b: every byte they write is
/// recorded raw, and the screen is read back. Nothing of the fake may reach the terminal as a
/// control sequence, and the real code line stays the only code line.
final class TerminalSafetyLabTests: LabTestCase {
  /// ESC[8m hides what follows, ESC[2K erases the line, CR returns to its start: written raw,
  /// they would draw a forged code line where memo-peer's is.
  let fake = "ay\u{1B}[8m\u{1B}[2K\r  code:          999 999"
  /// Byte sequences of the fake that must never reach the terminal.
  var forbidden: [String] { ["\u{1B}[8m", "\u{1B}[2K", "\r  code:          999"] }

  func publishFake() throws -> Background {
    let publisher = try XCTUnwrap(
      Lab.startTool("c", "avahi-publish-service", [fake, "_memo-peer._tcp", "7412", "v=1", "pair=1", "name=\(fake)"]))
    background.append(publisher)
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { publisher.text.contains("Established") }, publisher.text)
    return publisher
  }

  /// A tmux pane whose output is recorded raw to the returned file.
  func terminal() throws -> (TmuxPane, String) {
    try TmuxPane.require()
    let pane = try TmuxPane(environment: [
      "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MEMO_PEER_LAB_DIR": Lab.directory, "MEMO_PEER_LAB_PREFIX": Lab.prefix,
    ])
    let raw = Lab.directory + "/pane-\(UUID().uuidString.prefix(8)).raw"
    try pane.recordOutput(to: raw)
    return (pane, raw)
  }

  /// The shell command that runs memo-peer on host b.
  func onB(_ arguments: [String]) -> String {
    ([Lab.script, "exec", "b", Lab.binary] + arguments).map(TmuxPane.quoted).joined(separator: " ")
  }

  func assertNoByteOfTheFakeReachedTheTerminal(_ pane: TmuxPane, raw: String, line: UInt = #line) throws {
    let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
    XCTAssertFalse(bytes.isEmpty, "the pane's output was recorded", line: line)
    for sequence in forbidden {
      XCTAssertNil(
        bytes.range(of: Data(sequence.utf8)), "\(sequence.debugDescription) reached the terminal", line: line)
    }
    // What a person saw: no attribute was turned on (a capture with attributes holds no ESC
    // when nothing set one), and the fake's bytes are there as visible escapes.
    let shown = pane.historyWithAttributes()
    XCTAssertFalse(shown.contains("\u{1B}"), "an escape sequence changed the terminal: \(shown)", line: line)
    XCTAssertTrue(shown.contains(#"ay\x1b[8m\x1b[2K\x0d  code:"#), shown, line: line)
    XCTAssertTrue(shown.contains("[escaped]"), shown, line: line)
  }

  func testAFakePairingAdvertisementCannotForgeTheCodeThatPairShows() throws {
    for host in ["a", "b"] { _ = try ok(host, ["consent", "grant"]) }
    _ = try publishFake()
    let (host, hostInput) = try Lab.startOnTerminal("a", ["pair", "--accept", "--name", "ay", "--window", "60"])
    background.append(host)
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { host.text.contains("Pairing window open") }, host.text)
    let (pane, raw) = try terminal()
    try pane.type(onB(["pair", "--name", "bee", "--timeout", "5"]))
    XCTAssertTrue(pane.waitFor { $0.contains("Does the other device show the same code?") }, pane.screen())
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { code(in: host.text) != nil }, host.text)
    let hostCode = try XCTUnwrap(code(in: host.text))
    // The only line that reads as a code is the real one, and it is the host's code.
    let lines = pane.historyWithAttributes().split(separator: "\n").map(String.init)
    let codeLines = lines.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("code:") }
    XCTAssertEqual(codeLines.count, 1, "\(lines)")
    XCTAssertEqual(code(in: codeLines.first ?? ""), hostCode)
    XCTAssertTrue(lines.contains { $0.contains("ignored a pairing advertisement") }, "\(lines)")
    try pane.type("y")
    // The code, then Enter at "Share notebooks with …?" (none: the default).
    hostInput.write(Data("y\n\n".utf8))
    XCTAssertTrue(pane.waitFor { $0.contains("Paired: this device now trusts ay") }, pane.screen())
    XCTAssertTrue(pane.waitFor { $0.contains("Share notebooks with ay?") }, pane.screen())
    try pane.type("")
    XCTAssertEqual(host.exitStatus(within: 20), 0, host.text)
    try assertNoByteOfTheFakeReachedTheTerminal(pane, raw: raw)
    let trusted = try JSONSerialization.jsonObject(with: Data(try ok("b", ["trust", "list", "--json"]).utf8))
    let names = ((trusted as? [String: Any])?["peers"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
    XCTAssertEqual(names, ["ay"], "b trusts the real device only")
  }

  func testAFakeAdvertisementIsEscapedAndMarkedInBrowse() throws {
    _ = try ok("b", ["consent", "grant"])
    _ = try publishFake()
    let (pane, raw) = try terminal()
    // The marker is computed by the shell, so the typed command line does not match it.
    try pane.type(onB(["browse", "--timeout", "4"]) + "; echo BROWSE-$((40+2))")
    XCTAssertTrue(pane.waitFor { $0.contains("BROWSE-42") }, pane.screen())
    let lines = pane.historyWithAttributes().split(separator: "\n").map(String.init)
    // Searched within lines, not at their start: when the typed command line exactly fills
    // the pane's last row (it depends on the clone's path), `capture-pane -J` joins the
    // first line of output to it.
    let seen = try XCTUnwrap(
      lines.lazy.compactMap { line in line.range(of: "+ ay").map { String(line[$0.lowerBound...]) } }.first,
      "\(lines)")
    XCTAssertTrue(seen.contains("pairing window open"), seen)
    XCTAssertTrue(seen.contains("(not a valid name: `pair` ignores it)"), seen)
    try assertNoByteOfTheFakeReachedTheTerminal(pane, raw: raw)
    // --json keeps the exact value (JSON escapes it).
    let json = try Lab.exec("b", ["browse", "--json", "--timeout", "4"])
    XCTAssertTrue(
      json.jsonLines.contains { $0["instance"] as? String == fake && $0["pairing_name"] as? String == fake })
  }
}

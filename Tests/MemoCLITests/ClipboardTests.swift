import Foundation
import MemoTestSupport
import XCTest

/// `show --copy` and `new --from-clipboard` on a real X server (xvfb-run) with xclip, read
/// back before and after the clearing time; the memo never shows up in a process's argv.
final class ClipboardTests: XCTestCase {
  /// Runs `script` under xvfb-run with memo-peer on PATH; returns its output lines.
  func underX(_ cli: CLIProcess, _ script: String, _ arguments: [String]) throws -> ProcessOutput {
    let xvfb = try RequiredTool.path("xvfb-run", package: "xvfb")
    _ = try RequiredTool.path("xclip", package: "xclip")
    let directory = (CLIProcess.binary as NSString).deletingLastPathComponent
    let path = try cli.script("clipboard.sh", script)
    return try cli.run(
      executable: xvfb, ["-a", path] + arguments, stdin: nil,
      extraEnvironment: ["PATH": directory + ":/usr/bin:/bin", "XAUTHORITY": cli.home + "/Xauthority"])
  }

  func value(_ output: ProcessOutput, _ key: String) -> String? {
    output.stdout.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
  }

  func testCopyIsReadBackThenClearedAndAChangedClipboardIsKept() throws {
    let cli = try CLIProcess()
    let body = "SECRET-CLIP line one\nline two ünïcode"
    let id = try cli.new(body)
    // Only counts and sizes are printed, so the memo is not in any file this test writes.
    let script = """
      set -u
      cd "$HOME"
      memo-peer show "$1" --copy --clear-after 4 > copy.out; echo "copy_status=$?"
      echo "copy_printed=$(grep -c 'S[E]CRET' copy.out)"
      echo "before_matches=$(xclip -selection clipboard -out | grep -c 'S[E]CRET-CLIP')"
      echo "before_bytes=$(xclip -selection clipboard -out | wc -c)"
      echo "argv_with_memo=$(grep -l 'S[E]CRET-CLIP' /proc/[0-9]*/cmdline 2>/dev/null | wc -l)"
      i=0
      while [ "$i" -lt 60 ] && [ -n "$(xclip -selection clipboard -out 2>/dev/null)" ]; do sleep 1; i=$((i + 1)); done
      echo "after_bytes=$(xclip -selection clipboard -out 2>/dev/null | wc -c)"
      memo-peer show "$1" --copy --clear-after 2 > /dev/null
      printf 'changed by the user' | xclip -selection clipboard -in
      sleep 4
      echo "kept=$(xclip -selection clipboard -out)"
      printf 'From the clipboard\\nsecond line' | xclip -selection clipboard -in
      echo "new_id=$(memo-peer new --from-clipboard)"
      """
    let result = try underX(cli, script, [id])
    XCTAssertEqual(result.status, 0, result.output)
    XCTAssertEqual(value(result, "copy_status"), "0", result.output)
    XCTAssertEqual(value(result, "copy_printed"), "0", "show --copy prints nothing of the memo")
    XCTAssertEqual(value(result, "before_matches"), "1", result.output)
    XCTAssertEqual(value(result, "before_bytes"), String(body.utf8.count), result.output)
    XCTAssertEqual(value(result, "argv_with_memo"), "0", "the memo is in no process's arguments")
    XCTAssertEqual(value(result, "after_bytes"), "0", "cleared after the time")
    XCTAssertEqual(value(result, "kept"), "changed by the user", "a clipboard changed meanwhile is left alone")
    let newID = try XCTUnwrap(value(result, "new_id"))
    let memo = try XCTUnwrap(try cli.json(["show", newID])["memo"] as? [String: Any])
    XCTAssertEqual(memo["body"] as? String, "From the clipboard\nsecond line")
    XCTAssertEqual(memo["title"] as? String, "From the clipboard")
  }

  func testWithoutADisplayOrToolTheErrorSaysWhatToInstall() throws {
    let cli = try CLIProcess()
    let id = try cli.new("body")
    let none = try cli.run(["show", id, "--copy"])
    XCTAssertEqual(none.status, 2)
    XCTAssertTrue(none.stderr.contains("neither WAYLAND_DISPLAY nor DISPLAY is set"), none.stderr)
    let wayland = try cli.run(
      ["show", id, "--copy"], extraEnvironment: ["WAYLAND_DISPLAY": "wayland-9", "PATH": cli.home])
    XCTAssertTrue(wayland.stderr.contains("install wl-clipboard"), wayland.stderr)
    let x11 = try cli.run(["new", "--from-clipboard"], extraEnvironment: ["DISPLAY": ":99", "PATH": cli.home])
    XCTAssertTrue(x11.stderr.contains("install xclip"), x11.stderr)
    XCTAssertEqual(try cli.run(["show", id, "--copy", "--clear-after", "0"]).status, 2)
    XCTAssertEqual(try cli.run(["show", id, "--copy", "--json"]).status, 2)
  }
}

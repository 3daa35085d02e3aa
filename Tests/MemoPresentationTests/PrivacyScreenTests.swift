import MemoCore
import MemoPresentation
import XCTest

final class TerminalInputDecoderTests: XCTestCase {
  func testFocusReportsAndKeys() {
    var decoder = TerminalInputDecoder()
    XCTAssertEqual(decoder.decode(Array("\u{1B}[O".utf8)), [.focusLost])
    XCTAssertEqual(decoder.decode(Array("\u{1B}[I".utf8)), [.focusGained])
    XCTAssertEqual(decoder.decode(Array("j\u{1B}[Ak\u{1B}[6~q".utf8)), [.lineDown, .lineUp, .lineUp, .pageDown, .quit])
    XCTAssertEqual(decoder.decode(Array("x\u{1B}[99Z".utf8)), [])
  }

  func testSequencesSplitAcrossReadsAtEveryPoint() {
    let stream = Array("\u{1B}[O\u{1B}[I\u{1B}[5~q".utf8)
    for split in 0...stream.count {
      var decoder = TerminalInputDecoder()
      let events = decoder.decode(stream[..<split]) + decoder.decode(stream[split...])
      XCTAssertEqual(events, [.focusLost, .focusGained, .pageUp, .quit], "split at \(split)")
    }
    // One byte at a time, too.
    var decoder = TerminalInputDecoder()
    var events: [TerminalInputEvent] = []
    for byte in stream { events += decoder.decode([byte]) }
    XCTAssertEqual(events, [.focusLost, .focusGained, .pageUp, .quit])
  }
}

final class PrivacyScreenTests: XCTestCase {
  let canary = "CANARY-7b1e"

  func written(_ actions: [PrivacyScreen.Action]) -> String {
    actions.reduce(into: "") { text, action in
      if case .write(let bytes) = action { text += String(decoding: bytes, as: UTF8.self) }
    }
  }

  func testStartDrawsTheMemoOnTheAlternateScreenWithFocusReports() {
    var screen = PrivacyScreen(document: ["Title", "", "body \(canary)"], rows: 24, columns: 80)
    let actions = screen.handle(.start)
    XCTAssertEqual(actions.first, .enterViewerMode)
    let text = written(actions)
    XCTAssertTrue(text.hasPrefix("\u{1B}[?1049h\u{1B}[?1004h"), text)
    XCTAssertTrue(text.contains(canary))
  }

  func testSuspendShowsThePlaceholderLeavesAndOnlyThenStops() {
    var screen = PrivacyScreen(document: [canary], rows: 24, columns: 80)
    _ = screen.handle(.start)
    let actions = screen.handle(.suspend)
    XCTAssertEqual(actions.count, 3)
    let text = written(actions)
    XCTAssertFalse(text.contains(canary))
    XCTAssertTrue(text.contains("memo hidden (suspended)"))
    // The placeholder comes before the alternate screen is cleared and left …
    let placeholder = text.range(of: "memo hidden")!.lowerBound
    let leave = text.range(of: "\u{1B}[?1049l")!.lowerBound
    XCTAssertLessThan(placeholder, leave)
    // … and the process stops last.
    XCTAssertEqual(Array(actions.suffix(2)), [.restoreMode, .stopProcess])
    XCTAssertEqual(screen.hidden, .suspended)
    let back = screen.handle(.resume)
    XCTAssertEqual(back.first, .enterViewerMode)
    XCTAssertTrue(written(back).contains(canary))
    XCTAssertNil(screen.hidden)
  }

  func testFocusLossHidesAndFocusGainRedraws() {
    var screen = PrivacyScreen(document: [canary], rows: 24, columns: 80)
    _ = screen.handle(.start)
    let lost = written(screen.handle(.input(.focusLost)))
    XCTAssertFalse(lost.contains(canary))
    XCTAssertTrue(lost.contains("not in focus"))
    // Nothing scrolls the memo back into view while unfocused.
    XCTAssertFalse(written(screen.handle(.input(.redraw))).contains(canary))
    XCTAssertTrue(written(screen.handle(.input(.focusGained))).contains(canary))
  }

  func testQuitClearsAndLeavesTheAlternateScreen() {
    var screen = PrivacyScreen(document: [canary], rows: 24, columns: 80)
    _ = screen.handle(.start)
    let actions = screen.handle(.input(.quit))
    XCTAssertEqual(actions.last, .finish)
    XCTAssertEqual(written(actions), "\u{1B}[H\u{1B}[2J\u{1B}[?1004l\u{1B}[?25h\u{1B}[?1049l")
    XCTAssertTrue(screen.finished)
    XCTAssertEqual(screen.handle(.input(.focusGained)), [])
  }

  func testScrollingLongMemos() {
    let document = (1...100).map { "line \($0)" }
    var screen = PrivacyScreen(document: document, rows: 11, columns: 80)
    let first = written(screen.handle(.start))
    XCTAssertTrue(first.contains("line 1\r\n") && first.contains("line 10\u{1B}["), first)
    XCTAssertFalse(first.contains("line 11"))
    let next = written(screen.handle(.input(.pageDown)))
    XCTAssertFalse(next.contains("line 1\r\n"))
    XCTAssertTrue(next.contains("line 11\r\n") && next.contains("lines 11–20 of 100"), next)
    XCTAssertEqual(screen.scroll, 10)
    _ = screen.handle(.input(.bottom))
    XCTAssertEqual(screen.scroll, 90)
    XCTAssertEqual(screen.handle(.input(.lineDown)), [])
    _ = screen.handle(.input(.top))
    XCTAssertEqual(screen.scroll, 0)
  }

  func testEscapeSequencesInAMemoAreDrawnInertly() {
    var screen = PrivacyScreen(document: ["a\u{1B}[?1049lb\u{9B}c\td"], rows: 5, columns: 40)
    let text = written(screen.handle(.start))
    XCTAssertFalse(text.contains("\u{1B}[?1049l"))
    XCTAssertFalse(text.contains("\u{9B}"))
    XCTAssertTrue(text.contains("a\u{FFFD}[?1049lb\u{FFFD}c    d"), text)
  }

  func testWrapsToTheTerminalWidth() {
    var screen = PrivacyScreen(document: [String(repeating: "a", count: 25)], rows: 5, columns: 10)
    let text = written(screen.handle(.start))
    XCTAssertTrue(text.contains("aaaaaaaaaa\r\naaaaaaaaaa\r\naaaaa"), text)
  }
}

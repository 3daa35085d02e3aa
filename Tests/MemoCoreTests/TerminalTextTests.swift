import XCTest

@testable import MemoCore

final class TerminalTextTests: XCTestCase {
  func testEveryControlAndBidiCharacterIsEscapedAndNothingElse() {
    var unsafe: [UInt32] = Array(0x00...0x1F) + [0x7F] + Array(0x80...0x9F)
    unsafe += Array(0x202A...0x202E) + Array(0x2066...0x2069) + [0x200E, 0x200F, 0x061C, 0x2028, 0x2029]
    for value in unsafe {
      let scalar = Unicode.Scalar(value)!
      let rendering = TerminalText.render("a" + String(Character(scalar)) + "b")
      XCTAssertTrue(rendering.escaped, "U+\(String(value, radix: 16))")
      XCTAssertFalse(rendering.text.unicodeScalars.contains(where: TerminalText.isUnsafe), rendering.text)
      XCTAssertTrue(rendering.text.hasPrefix("a\\") && rendering.text.hasSuffix("b"), rendering.text)
    }
    for text in ["laptop", "Ana’s desk", "日本語のノート", "naïve café", "emoji 🎉", "tab-less"] {
      XCTAssertEqual(TerminalText.render(text), .init(text: text, escaped: false, truncated: false))
    }
  }

  func testEscapesAreReadableAndUnambiguous() {
    XCTAssertEqual(TerminalText.render("x\u{1B}[8my").text, #"x\x1b[8my"#)
    XCTAssertEqual(TerminalText.render("\r\n\u{0}\u{7F}\u{9B}").text, #"\x0d\x0a\x00\x7f\x9b"#)
    XCTAssertEqual(TerminalText.render("abc\u{202E}fdp.exe").text, #"abc\u{202e}fdp.exe"#)
    // Text with nothing to escape is shown as is; in a value that needed an escape, a
    // backslash is doubled, so text that spells an escape differs from an escaped byte.
    XCTAssertEqual(TerminalText.render(#"C:\x1b"#), .init(text: #"C:\x1b"#, escaped: false, truncated: false))
    XCTAssertEqual(TerminalText.render(#"\x1b"# + "\u{1B}").text, #"\\x1b\x1b"#)
    XCTAssertNotEqual(TerminalText.display(#"\x1b"#), TerminalText.display("\u{1B}"))
  }

  func testDisplayMarksEscapedValuesOnly() {
    XCTAssertEqual(TerminalText.display("desk"), "desk")
    XCTAssertEqual(TerminalText.display("de\u{1B}sk"), #"de\x1bsk [escaped]"#)
    XCTAssertEqual(TerminalText.display(#"back\slash"#), #"back\slash"#, "a backslash alone is not a warning")
  }

  func testLengthsAreCapped() {
    let long = String(repeating: "x", count: 500)
    let rendering = TerminalText.render(long)
    XCTAssertTrue(rendering.truncated)
    XCTAssertEqual(rendering.text, String(repeating: "x", count: TerminalText.nameLimit) + "…")
    // Escapes grow the text, but the cap counts the original characters: bounded output.
    let escapes = TerminalText.render(String(repeating: "\u{202E}", count: 1000), limit: 10)
    XCTAssertEqual(escapes.text.count, 10 * #"\u{202e}"#.count + 1)
    XCTAssertEqual(TerminalText.render("exactly", limit: 7).truncated, false)
    XCTAssertEqual(TerminalText.render("", limit: 0), .init(text: "", escaped: false, truncated: false))
  }

  func testAForgedCodeLineCannotStartALine() {
    let forged = "ay\u{1B}[2K\r  code:          999 999"
    let shown = TerminalText.display(forged)
    XCTAssertFalse(shown.contains("\r") || shown.contains("\u{1B}") || shown.contains("\n"))
    XCTAssertTrue(shown.hasSuffix(TerminalText.escapedMarker))
  }

  func testPairingNamesArePrintableTextOfAtMost63Bytes() {
    for good in ["laptop", "Ana’s desk", "büro", "ノート", String(repeating: "x", count: 63), "a b"] {
      XCTAssertTrue(DeviceName.isValidPairingName(good), good)
      XCTAssertNoThrow(try DeviceName.validatePairingName(good))
    }
    let bad = [
      "", " lead", "trail ", "-dash", "esc\u{1B}[8m", "cr\rcode: 1", "new\nline", "rlo\u{202E}x", "zw\u{200B}j",
      "iso\u{2066}x", "del\u{7F}", "c1\u{85}", String(repeating: "x", count: 64),
      String(repeating: "é", count: 32),  // 64 bytes
      "pua\u{E000}", "nbsp-end\u{00A0}",
    ]
    for name in bad {
      XCTAssertFalse(DeviceName.isValidPairingName(name), name.debugDescription)
      XCTAssertThrowsError(try DeviceName.validatePairingName(name)) {
        XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
        let message = ($0 as? MemoPeerError)?.message ?? ""
        XCTAssertFalse(message.unicodeScalars.contains(where: TerminalText.isUnsafe), "the name is not echoed")
      }
    }
  }

  func testTrustNamesRefuseFormatCharactersToo() {
    for bad in ["rlo\u{202E}gpj.exe", "zero\u{200B}width", "bom\u{FEFF}"] {
      XCTAssertThrowsError(try TrustList.validate(name: bad), bad.debugDescription)
    }
    XCTAssertNoThrow(try TrustList.validate(name: "Ana’s laptop (2)"))
  }
}

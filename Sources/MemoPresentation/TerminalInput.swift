import MemoCore

/// What a person (or the terminal itself) typed while a memo is on screen.
public enum TerminalInputEvent: Sendable, Equatable {
  /// `q`, Enter or Ctrl-D: leave the memo.
  case quit
  /// Scrolling (`k`/`j`/arrows, `b`/space/PgUp/PgDn, `g`/`G`/Home/End).
  case lineUp, lineDown, pageUp, pageDown, top, bottom
  /// Ctrl-L: draw everything again.
  case redraw
  /// `ESC [ O`: the terminal lost focus (reported once DECSET 1004 is on).
  case focusLost
  /// `ESC [ I`: the terminal has focus again.
  case focusGained
}

/// Turns the bytes read from the terminal into events. Escape sequences may arrive split
/// over several reads, so an unfinished one is kept for the next call; anything unknown is
/// dropped. Pure, so every split is a unit test.
public struct TerminalInputDecoder: Sendable {
  private var pending: [UInt8] = []

  public init() {}

  public mutating func decode(_ bytes: some Sequence<UInt8>) -> [TerminalInputEvent] {
    pending.append(contentsOf: bytes)
    var events: [TerminalInputEvent] = []
    var index = 0
    while index < pending.count {
      let byte = pending[index]
      if byte == 0x1B {
        guard index + 1 < pending.count else { break }  // maybe the start of a sequence
        guard pending[index + 1] == 0x5B else {  // ESC followed by something else: drop the ESC
          index += 1
          continue
        }
        // CSI: parameters (digits, ';') then one final byte in 0x40...0x7E.
        var end = index + 2
        while end < pending.count, (0x30...0x3F).contains(pending[end]) { end += 1 }
        guard end < pending.count else { break }  // unfinished: wait for more bytes
        let parameters = String(decoding: pending[(index + 2)..<end], as: UTF8.self)
        if let event = Self.csi(parameters: parameters, final: pending[end]) { events.append(event) }
        index = end + 1
        continue
      }
      if let event = Self.key(byte) { events.append(event) }
      index += 1
    }
    pending.removeFirst(index)
    // A lone ESC that is never followed by anything must not grow the buffer forever.
    if pending.count > 32 { pending.removeAll() }
    return events
  }

  private static func key(_ byte: UInt8) -> TerminalInputEvent? {
    switch byte {
    case UInt8(ascii: "q"), UInt8(ascii: "Q"), 0x0D, 0x0A, 0x04: .quit
    case UInt8(ascii: "j"): .lineDown
    case UInt8(ascii: "k"): .lineUp
    case UInt8(ascii: " "), UInt8(ascii: "f"): .pageDown
    case UInt8(ascii: "b"): .pageUp
    case UInt8(ascii: "g"): .top
    case UInt8(ascii: "G"): .bottom
    case 0x0C: .redraw
    default: nil
    }
  }

  private static func csi(parameters: String, final: UInt8) -> TerminalInputEvent? {
    switch (parameters, final) {
    case ("", UInt8(ascii: "I")): .focusGained
    case ("", UInt8(ascii: "O")): .focusLost
    case ("", UInt8(ascii: "A")): .lineUp
    case ("", UInt8(ascii: "B")): .lineDown
    case ("5", UInt8(ascii: "~")): .pageUp
    case ("6", UInt8(ascii: "~")): .pageDown
    case ("", UInt8(ascii: "H")), ("1", UInt8(ascii: "~")): .top
    case ("", UInt8(ascii: "F")), ("4", UInt8(ascii: "~")): .bottom
    default: nil
    }
  }
}

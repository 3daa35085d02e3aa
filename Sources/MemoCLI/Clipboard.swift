import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The desktop clipboard through the system's tools, chosen at run time: wl-copy/wl-paste
/// (package wl-clipboard) on Wayland, xclip on X11. The text always goes through a pipe to
/// the tool's stdin (or from its stdout), never through argv or a file.
struct Clipboard {
  enum Tool: Equatable {
    case wayland(copy: String, paste: String)
    case x11(xclip: String)

    var name: String {
      switch self {
      case .wayland: "wl-copy"
      case .x11: "xclip"
      }
    }
  }

  /// 45 s, as `pass -c`.
  static let defaultClearSeconds = 45
  let tool: Tool

  /// The tool for this session: Wayland when WAYLAND_DISPLAY is set and wl-copy exists,
  /// else X11 when DISPLAY is set and xclip exists (XWayland included).
  static func find(_ environment: [String: String]) throws -> Clipboard {
    let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    func which(_ name: String) -> String? {
      path.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
    let wayland = !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
    let x11 = !(environment["DISPLAY"] ?? "").isEmpty
    if wayland, let copy = which("wl-copy"), let paste = which("wl-paste") {
      return Clipboard(tool: .wayland(copy: copy, paste: paste))
    }
    if x11, let xclip = which("xclip") { return Clipboard(tool: .x11(xclip: xclip)) }
    guard wayland || x11 else {
      throw MemoPeerError(
        .usage, "there is no graphical session to hold a clipboard (neither WAYLAND_DISPLAY nor DISPLAY is set)",
        hint: "run it in your desktop session, or use `memo-peer show ID --plain`")
    }
    throw MemoPeerError(
      .usage, "no clipboard tool was found for this \(wayland ? "Wayland" : "X11") session",
      hint: wayland ? "install wl-clipboard (apt install wl-clipboard)" : "install xclip (apt install xclip)")
  }

  /// Puts `text` on the clipboard.
  func copy(_ text: [UInt8]) throws {
    switch tool {
    case .wayland(let copy, _): try run(copy, ["--type", "text/plain;charset=utf-8"], input: text)
    case .x11(let xclip): try run(xclip, ["-selection", "clipboard", "-in"], input: text)
    }
  }

  /// The clipboard's text, at most `limit` bytes (nil: more than that); empty when the
  /// clipboard holds no text.
  func paste(limit: Int) throws -> [UInt8]? {
    switch tool {
    case .wayland(_, let paste): try read(paste, ["--no-newline", "--type", "text/plain"], limit: limit)
    case .x11(let xclip): try read(xclip, ["-selection", "clipboard", "-out"], limit: limit)
    }
  }

  func clear() throws {
    switch tool {
    case .wayland(let copy, _): try run(copy, ["--clear"], input: [])
    case .x11(let xclip): try run(xclip, ["-selection", "clipboard", "-in"], input: [])
    }
  }

  // MARK: - Clearing later

  /// Starts a helper (this program, `clipboard-clear`) that clears the clipboard after
  /// `seconds` if it still holds `text`, and returns at once. The helper gets only the
  /// SHA-256 of the text, on its stdin: the text itself is not passed on anywhere.
  func clearLater(_ text: [UInt8], after seconds: Int) throws {
    let digest = try SHA256.hash(text)
    try ToolProcess.run(try Self.ownExecutable(), [Self.clearCommand, String(seconds)], input: digest, detach: true)
  }

  /// The hidden command the helper runs as (not in the command table: people never type it).
  static let clearCommand = "clipboard-clear"

  /// The helper: reads the digest, waits, and clears the clipboard if what it holds has the
  /// same digest (compared in constant time). Survives the terminal closing.
  static func runClearHelper(arguments: [String], environment: [String: String]) -> Int32 {
    signal(SIGHUP, SIG_IGN)
    guard arguments.count == 1, let seconds = UInt32(arguments[0]), seconds <= 86400,
      let digest = try? PrivateFiles.readAll(0, limit: SHA256.size, what: "stdin"), digest.count == SHA256.size,
      let clipboard = try? find(environment)
    else { return 2 }
    sleep(seconds)
    guard let current = try? clipboard.paste(limit: MemoRules.maxBodyBytes), let now = try? SHA256.hash(current)
    else { return 0 }
    guard SecureBytes(copying: now).constantTimeEquals(SecureBytes(copying: digest)) else { return 0 }
    return (try? clipboard.clear()) == nil ? 1 : 0
  }

  static func ownExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = try PrivateFiles.call("readlink", orThrow: "cannot find the memo-peer executable") {
      readlink("/proc/self/exe", &buffer, buffer.count - 1)
    }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  // MARK: - Running the tools

  private func run(_ executable: String, _ arguments: [String], input: [UInt8]) throws {
    let result = try ToolProcess.run(executable, arguments, input: input)
    guard result.status == 0 else {
      throw MemoPeerError(
        .io, "\(tool.name) failed (status \(result.status)); the clipboard was not changed",
        hint: "check that the desktop session is running")
    }
  }

  /// Nil when the clipboard holds more than `limit` bytes; empty when it holds no text
  /// (both tools fail then).
  private func read(_ executable: String, _ arguments: [String], limit: Int) throws -> [UInt8]? {
    let result = try ToolProcess.run(executable, arguments, input: nil, captureLimit: limit)
    guard let output = result.output else { return nil }
    return result.status == 0 ? output : []
  }
}

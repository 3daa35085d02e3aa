/// memo-peer(1) in roff (man macros), written from the command table and `Manual`, the same
/// source as `--help`: a command or option cannot be in one and missing from the other.
enum ManPage {
  /// The whole page. `date` is the page's date (YYYY-MM-DD); the package build passes the
  /// date of SOURCE_DATE_EPOCH so two builds give the same bytes.
  static func render(commands: [Command], version: String, date: String) -> String {
    var out: [String] = []
    out.append(".TH MEMO\\-PEER 1 \"\(date)\" \"memo\\-peer \(version)\" \"User Commands\"")
    out += [".SH NAME", "memo\\-peer \\- private memos, shared only with your own devices on the local network"]
    out += [
      ".SH SYNOPSIS", ".B memo\\-peer", "[\\fB\\-\\-debug\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]",
      ".br", ".B memo\\-peer", "\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR",
    ]
    out += [".SH DESCRIPTION"]
    out += paragraphs(
      """
      memo-peer keeps short text memos encrypted on each machine (AES-256-GCM under a key that
      never leaves the device), finds your other machines with DNS-SD through the system's
      avahi-daemon, proves who they are with pinned device keys over TLS 1.3, and shares memos
      between them. Nothing touches the local network until a person acts and a consent is on
      record (`memo-peer consent`).
      Every command has --help; mistyped commands and options get the closest spelling
      suggested. Memo text never goes through process arguments or into an error message.
      """)
    out.append(".SH COMMANDS")
    for command in commands { out += section(command) }
    out += [".SH COMMON OPTIONS", "Every command accepts these:"]
    for option in ArgumentParser.common { out += optionItem(option) }
    out += [".TP", "\\fB\\-\\-version\\fR", "(before the command) print the version and exit"]
    out.append(".SH EXIT STATUS")
    for row in Manual.exitStatuses {
      out += [
        ".TP", ".B \(row.status)", escape(row.meaning) + (row.codes.isEmpty ? "" : " (" + escape(codeList(row)) + ")"),
      ]
    }
    out.append(".SH ENVIRONMENT")
    for variable in Manual.environment { out += [".TP", ".B \(escape(variable.name))", escape(variable.meaning)] }
    out.append(".SH FILES")
    out += paragraphs(
      "With MEMO_PEER_HOME=H the data, keys, state and config directories are H/data, H/keys, H/state and H/config.")
    for file in Manual.files { out += [".TP", ".I \(escape(file.path))", escape(file.meaning)] }
    out.append(".SH EXAMPLES")
    for example in Manual.examples {
      out += [
        ".PP", escape(example.meaning) + ":", ".RS 4", ".nf", "\\fB" + escape(example.command) + "\\fR", ".fi", ".RE",
      ]
    }
    out.append(".SH SEE ALSO")
    out.append(
      Manual.seeAlso.map { "\\fB\(escape($0.page))\\fR(\($0.section))" }.joined(separator: ",\n") + ",\n"
        + "the units \\fImemo\\-peer.service\\fR (system and user), and /usr/share/doc/memo\\-peer/.")
    return out.joined(separator: "\n") + "\n"
  }

  private static func codeList(_ row: Manual.ExitStatus) -> String {
    row.codes.joined(separator: ", ")
  }

  private static func section(_ command: Command) -> [String] {
    var out = [".SS \"" + escape(command.usageLine) + "\"", escape(command.summary)]
    if !command.details.isEmpty { out += [".PP"] + paragraphs(command.details) }
    if !command.positionals.isEmpty {
      for positional in command.positionals {
        out += [
          ".TP", "\\fI" + escape(positional.name) + "\\fR" + (positional.optional ? " (optional)" : ""),
          escape(positional.help),
        ]
      }
    }
    for option in command.options { out += optionItem(option) }
    return out
  }

  private static func optionItem(_ option: OptionSpec) -> [String] {
    var flag = option.short.map { "\\fB\\-\(escape(String($0)))\\fR, " } ?? ""
    flag += "\\fB\\-\\-" + escape(option.name) + "\\fR"
    if let value = option.value { flag += " \\fI" + escape(value) + "\\fR" }
    return [".TP", flag, escape(option.help)]
  }

  /// Text with hard line breaks as filled roff; lines indented by two spaces or more stay as
  /// they are (no-fill), as in the help's small tables.
  static func paragraphs(_ text: String) -> [String] {
    var out: [String] = []
    var literal = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let isLiteral = line.hasPrefix("  ")
      if isLiteral != literal {
        out += isLiteral ? [".RS 2", ".nf"] : [".fi", ".RE"]
        literal = isLiteral
      }
      if line.isEmpty {
        if !literal { out.append(".PP") }
        continue
      }
      out.append(escape(isLiteral ? String(line.dropFirst(2)) : String(line)))
    }
    if literal { out += [".fi", ".RE"] }
    return out
  }

  /// Escapes text for roff: backslashes, a leading control character, minus signs (so what
  /// is typed can be copied), `code` spans as bold, and characters outside ASCII as named
  /// glyphs that every groff output device has.
  static func escape(_ text: String) -> String {
    var out = ""
    var inCode = false
    let hasPairedBackticks = text.filter { $0 == "`" }.count % 2 == 0
    for character in text {
      switch character {
      case "\\": out += "\\e"
      case "-": out += "\\-"
      case "`" where hasPairedBackticks:
        out += inCode ? "\\fR" : "\\fB"
        inCode.toggle()
      case "\u{2014}": out += "\\(em"
      case "\u{2013}": out += "\\(en"
      case "\u{201C}": out += "\\(lq"
      case "\u{201D}": out += "\\(rq"
      case "\u{2018}": out += "\\(oq"
      case "\u{2019}": out += "\\(cq"
      case "\u{2026}": out += "..."
      case "\u{00B7}", "\u{25CF}", "\u{2022}": out += "\\(bu"
      case "\u{2192}": out += "\\(->"
      case "\u{00D7}": out += "\\(mu"
      default:
        if character.isASCII {
          out.append(character)
        } else {
          for scalar in character.unicodeScalars {
            out += scalar.isASCII ? String(scalar) : "\\[u" + hex4(scalar.value) + "]"
          }
        }
      }
    }
    if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
    return out
  }

  private static func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }
}

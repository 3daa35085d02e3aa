import FoundationEssentials
import MemoCore

/// The JSON that memo-peer prints for scripts (`--json`) and answers on its web page's API:
/// one encoder and one error shape for both, so the two never drift apart (docs/CLI.md,
/// docs/WEB.md). Fields are only ever added; `schema` changes if one must change meaning.
public enum JSONOutput {
  /// The `schema` field of every object.
  public static let schema = 1

  /// Sorted keys, slashes unescaped, a newline at the end.
  public static func encode(_ value: some Encodable) -> [UInt8] {
    encodeFragment(value, with: makeEncoder()) + [0x0A]
  }

  /// The encoder `encode` uses, to encode many values with one (`encodeFragment`).
  public static func makeEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }

  /// One value as it appears inside a larger document: `encode` without the newline.
  public static func encodeFragment(_ value: some Encodable, with encoder: JSONEncoder) -> [UInt8] {
    // Encoding our own plain structs cannot fail.
    (try? encoder.encode(value)).map(Array.init) ?? Array("{}".utf8)
  }

  /// A JSON string as `makeEncoder()`'s encoder writes it, for writers that make the same
  /// bytes without the encoder (`list --json`): `"` and `\` escaped, control characters as
  /// JSONEncoder writes them (the short forms where JSON has them, else `\u00xx`), slashes
  /// and everything else as their UTF-8.
  public static func appendString(_ text: String, to bytes: inout [UInt8]) {
    JSONStringBytes.append(text, to: &bytes, escapingSlashes: false)
  }
}

/// `{"schema": 1, "error": {"code", "message", "hint", "remedy", "dns_sd_error"}}`: an error as
/// the command line prints it on stderr with `--json`, and as the web API answers it. `hint`
/// is worded for its reader (the command line names commands, the page does not); `remedy`
/// is the stable code of what to do next (`Remedy.Code`), the same for both.
public struct ErrorJSON: Encodable, Sendable {
  public struct Detail: Encodable, Sendable {
    public let code: String
    public let message: String
    public let hint: String?
    /// `Remedy.Code`'s raw value, where the error carries a remedy.
    public let remedy: String?
    /// dns_sd.h's code (NoAuth -65555, PolicyDenied -65570, …) where there is one.
    public let dnsServiceCode: Int32?

    enum CodingKeys: String, CodingKey {
      case code, message, hint, remedy
      case dnsServiceCode = "dns_sd_error"
    }

    public init(code: String, message: String, hint: String?, remedy: String? = nil, dnsServiceCode: Int32?) {
      self.code = code
      self.message = message
      self.hint = hint
      self.remedy = remedy
      self.dnsServiceCode = dnsServiceCode
    }

    /// The error's code, message, hint with its remedy as `wording` words it (the command
    /// line's or the page's), and the remedy's code where that reader has words for it (the
    /// page leaves out what only a shell can do); never its diagnostics.
    public init(_ error: MemoPeerError, wording: (Remedy) -> String?) {
      self.init(
        code: error.code.rawValue, message: error.message, hint: error.hint(wording: wording),
        remedy: error.remedy.flatMap { wording($0) == nil ? nil : $0.code.rawValue },
        dnsServiceCode: error.dnsServiceCode)
    }
  }

  public let schema = JSONOutput.schema
  public let error: Detail

  public init(error: Detail) { self.error = error }
}

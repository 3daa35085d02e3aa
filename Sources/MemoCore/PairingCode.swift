/// The six-digit code two people compare when pairing (docs/PROTOCOL.md).
///
/// It comes from the TLS exporter of the pairing connection (RFC 8446 §7.5), which depends
/// on the whole handshake, both certificates included. A machine in the middle runs two
/// handshakes, one with each side, and cannot make their exporters agree; so the codes on
/// the two screens differ, unless it guesses right once in a million.
public enum PairingCode {
  /// Label for SSL_export_keying_material.
  public static let exporterLabel = "EXPORTER-memo-peer-pairing-code"
  /// Exporter output length: 8 bytes, reduced mod 10^6 (bias below 10^-13).
  public static let exporterLength = 8

  public static func code(fromExporter bytes: [UInt8]) -> String {
    let value = bytes.prefix(exporterLength).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
    let digits = String(value % 1_000_000)
    return String(repeating: "0", count: 6 - digits.count) + digits
  }

  /// `123 456`: easier to read aloud and compare.
  public static func display(_ code: String) -> String { code.prefix(3) + " " + code.dropFirst(3) }
}

import MemoCore

/// The only addresses `memo-peer web` listens on: this machine's loopback addresses. The
/// page shows memo text, so nothing on the network may reach it; asking for any other
/// address is refused, never quietly narrowed.
public enum LoopbackAddress: String, CaseIterable, Sendable {
  case ipv4 = "127.0.0.1"
  case ipv6 = "::1"

  /// The address as it appears in a URL and in the `Host` header: `127.0.0.1`, `[::1]`.
  public var urlHost: String { self == .ipv6 ? "[::1]" : rawValue }

  /// `127.0.0.1:8426`, `[::1]:8426`.
  public func authority(port: UInt16) -> String { "\(urlHost):\(port)" }

  /// The addresses asked for with `--address` (repeatable): `127.0.0.1`, `::1` (or `[::1]`),
  /// `localhost` (both). None given: both.
  public static func parse(_ values: [String]) throws -> [LoopbackAddress] {
    guard !values.isEmpty else { return allCases }
    var chosen: [LoopbackAddress] = []
    for value in values {
      let found: [LoopbackAddress]
      switch value.lowercased() {
      case "127.0.0.1": found = [.ipv4]
      case "::1", "[::1]": found = [.ipv6]
      case "localhost": found = allCases
      default: throw refusal(value)
      }
      for address in found where !chosen.contains(address) { chosen.append(address) }
    }
    return chosen
  }

  static func refusal(_ value: String) -> MemoPeerError {
    // Repeated only when it looks like an address: anything else may be text typed in the
    // wrong place.
    let looksLikeAddress =
      value.count <= 64
      && value.unicodeScalars.allSatisfy { $0.isASCII && "0123456789abcdefABCDEF:.[]%".contains(Character($0)) }
    let shown = looksLikeAddress ? "\(value) is" : "that address is"
    return MemoPeerError(
      .usage,
      "memo-peer web listens only on this machine (127.0.0.1 and ::1): \(shown) not a loopback address, and the "
        + "page shows your memos, so it is refused",
      hint: "use --address 127.0.0.1, ::1 or localhost; to reach the page from another machine, forward the port "
        + "over SSH (ssh -L 8426:127.0.0.1:8426 THIS-HOST)")
  }
}

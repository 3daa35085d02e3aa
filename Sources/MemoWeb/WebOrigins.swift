/// The names the server answers to: DNS-rebinding and cross-site defence.
///
/// A page on another site can make a browser send requests here (a form, an image, a
/// script's fetch), and a name an attacker controls can be made to resolve to 127.0.0.1.
/// So every request must carry `Host: 127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`
/// (no other name, no other port), and every request that changes something must carry an
/// `Origin` that is this very server.
public struct WebOrigins: Sendable, Equatable {
  public let port: UInt16
  /// The addresses listened on, in the order their URLs are printed.
  public let addresses: [LoopbackAddress]

  public init(port: UInt16, addresses: [LoopbackAddress]) {
    self.port = port
    self.addresses = addresses
  }

  /// Every accepted `Host` value, lowercase.
  public var hosts: [String] { addresses.map { $0.authority(port: port) } + ["localhost:\(port)"] }

  /// Whether `host` (the one `Host` header) names this server.
  public func accepts(host: String?) -> Bool {
    guard let host else { return false }
    return hosts.contains(host.lowercased())
  }

  /// Whether `origin` is this server as reached through `host` (already accepted): the
  /// page's own scripts send exactly that.
  public func accepts(origin: String?, host: String) -> Bool {
    guard let origin else { return false }
    return origin.lowercased() == "http://" + host.lowercased()
  }

  /// `http://127.0.0.1:8426` (the first address listened on).
  public var baseURL: String { "http://" + (addresses.first ?? .ipv4).authority(port: port) }

  /// The one-time sign-in URL for `token`.
  public func signInURL(token: String) -> String { baseURL + "/login?token=" + token }
}

/// The headers every response carries, whatever its status: a refusal, an asset or memo
/// JSON alike (docs/WEB.md).
public enum ResponsePolicy {
  /// Only memo-peer's own files run, style or load; no inline script or style, no framing,
  /// no plug-ins, no `<base>`, forms post only back here.
  public static let contentSecurityPolicy = [
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
    "font-src 'none'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
  ].joined(separator: "; ")

  public static let headers: [HTTPField] = [
    HTTPField("Content-Security-Policy", contentSecurityPolicy),
    // Nothing memo-peer sends may be kept on disk by a browser or a proxy.
    HTTPField("Cache-Control", "no-store"),
    HTTPField("Pragma", "no-cache"),
    HTTPField("Referrer-Policy", "no-referrer"),
    HTTPField("X-Content-Type-Options", "nosniff"),
    // For browsers older than frame-ancestors.
    HTTPField("X-Frame-Options", "DENY"),
    HTTPField("Cross-Origin-Opener-Policy", "same-origin"),
    HTTPField("Cross-Origin-Resource-Policy", "same-origin"),
    HTTPField("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()"),
  ]

  /// The response with the policy's headers; a header of the same name is replaced, so no
  /// handler can weaken the policy.
  public static func apply(_ response: HTTPResponse) -> HTTPResponse {
    var result = response
    let names = Set(headers.map { $0.name.lowercased() })
    result.headers.removeAll { names.contains($0.name.lowercased()) }
    result.headers += headers
    return result
  }
}

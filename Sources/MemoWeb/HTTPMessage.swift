import MemoCore

/// One header, cookie or query parameter: a name and its value as received (names of
/// headers are compared case-insensitively, cookies and parameters exactly).
public struct HTTPField: Sendable, Equatable {
  public let name: String
  public let value: String

  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

/// A request as libmicrohttpd parsed it. Every byte of it is hostile until the front door
/// has checked it (`WebFrontDoor`).
public struct HTTPRequest: Sendable {
  public var method: String
  /// The path without the query, as libmicrohttpd decoded it.
  public var path: String
  public var query: [HTTPField]
  public var headers: [HTTPField]
  public var cookies: [HTTPField]
  /// The body, complete (or empty while only the head has arrived).
  public var body: [UInt8]

  public init(
    method: String, path: String, query: [HTTPField] = [], headers: [HTTPField] = [], cookies: [HTTPField] = [],
    body: [UInt8] = []
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.cookies = cookies
    self.body = body
  }

  /// Every value of the header `name`, in order.
  public func headerValues(_ name: String) -> [String] {
    let lowered = name.lowercased()
    return headers.filter { $0.name.lowercased() == lowered }.map(\.value)
  }

  /// The header's value when it was sent exactly once; nil when missing or repeated, so a
  /// second `Host` or `Origin` can never be the one that was checked.
  public func singleHeader(_ name: String) -> String? {
    let values = headerValues(name)
    return values.count == 1 ? values[0] : nil
  }

  /// The value of a query parameter given exactly once.
  public func queryValue(_ name: String) -> String? {
    let values = query.filter { $0.name == name }
    return values.count == 1 ? values[0].value : nil
  }

  /// The value of a cookie, when exactly one cookie has the name.
  public func cookie(_ name: String) -> String? {
    let values = cookies.filter { $0.name == name }
    return values.count == 1 ? values[0].value : nil
  }

  /// GET and HEAD only read; everything else changes state and must prove its origin.
  public var changesState: Bool { method != "GET" && method != "HEAD" }
}

/// A response before the security headers are added (`ResponsePolicy`).
public struct HTTPResponse: Sendable, Equatable {
  public var status: Int
  public var headers: [HTTPField]
  public var body: [UInt8]

  public init(status: Int, headers: [HTTPField] = [], body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// A JSON answer (the bytes of `JSONOutput.encode`).
  public static func json(_ status: Int, _ bytes: [UInt8]) -> HTTPResponse {
    HTTPResponse(status: status, headers: [HTTPField("Content-Type", "application/json; charset=utf-8")], body: bytes)
  }

  /// A JSON answer encoding `value`.
  public static func json(_ status: Int, encoding value: some Encodable) -> HTTPResponse {
    json(status, JSONOutput.encode(value))
  }

  /// An error in the shape the command line prints with `--json`.
  public static func error(_ status: Int, code: String, _ message: String, hint: String? = nil) -> HTTPResponse {
    json(status, encoding: ErrorJSON(error: .init(code: code, message: message, hint: hint, dnsServiceCode: nil)))
  }

  /// A memo-peer error, with the HTTP status its code maps to.
  public static func error(_ error: MemoPeerError) -> HTTPResponse {
    json(WebStatus.of(error.code), encoding: ErrorJSON(error: .init(error)))
  }

  public func header(_ name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }
}

/// The HTTP status of each memo-peer error code on the API (docs/WEB.md). A code not
/// listed (a storage or key failure, or one added later) is a 500.
public enum WebStatus {
  static let statuses: [MemoPeerError.Code: Int] = [
    .usage: 400, .invalidInput: 400, .invalidUTF8: 400, .ambiguousID: 400, .tooLarge: 413, .notFound: 404,
    .passphrase: 403, .notProtected: 409, .consentRequired: 403, .policyDenied: 403, .noAuth: 403, .locked: 423,
    .conflict: 409, .syncHeld: 409, .cancelled: 409, .untrustedPeer: 502, .connection: 502,
    .daemonUnavailable: 502, .discovery: 502,
  ]

  public static func of(_ code: MemoPeerError.Code) -> Int { statuses[code] ?? 500 }
}

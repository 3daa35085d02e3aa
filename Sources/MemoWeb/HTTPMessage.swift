import MemoCore
import MemoPresentation

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
  /// The path or a query parameter did not decode (`percentDecoded`): refused.
  public var malformed = false
  /// The Unix user whose socket opened the connection (the kernel's record, `ss -e`), nil
  /// when it could not be told: who may use a session is decided on it (`WebUserRule`).
  public var user: UInt32?
  /// The request line's version (`HTTP/1.1`), as libmicrohttpd passed it on.
  public var version = "HTTP/1.1"

  public init(
    method: String, path: String, query: [HTTPField] = [], headers: [HTTPField] = [], cookies: [HTTPField] = [],
    body: [UInt8] = [], user: UInt32? = nil
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.cookies = cookies
    self.body = body
    self.user = user
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

  /// The most values of one cookie name that are looked at (`cookieValues`).
  public static let maxCookieValues = 16

  /// Every value sent under the cookie `name`, at most the last `maxCookieValues`.
  ///
  /// Cookies do not keep ports apart: a page another local user serves on another loopback
  /// port can set a cookie of this very name for `Path=/api`, and the browser then sends
  /// both. A name sent twice must not sign the person out, so every value is a candidate
  /// (the caller takes any that is a live session). Browsers send cookies with longer paths
  /// first (RFC 6265, 5.4), so the session's own (`Path=/`) comes last: the last values are
  /// the ones kept, and no number of shadows on longer paths pushes it out.
  public func cookieValues(_ name: String) -> [String] {
    Array(cookies.lazy.filter { $0.name == name }.map(\.value).suffix(Self.maxCookieValues))
  }

  /// Decodes `%XX` escapes strictly: nil for a `%` without two hex digits, for an escape or
  /// a byte that is a control character (`%00` above all: in C it would end the string),
  /// for a raw space, and for bytes that are not UTF-8. libmicrohttpd leaves escapes alone for this.
  public static func percentDecoded(_ raw: String) -> String? {
    var bytes: [UInt8] = []
    var iterator = Array(raw.utf8).makeIterator()
    func hex(_ byte: UInt8?) -> UInt8? {
      switch byte {
      case .some(let b) where b >= 0x30 && b <= 0x39: b - 0x30
      case .some(let b) where b | 0x20 >= 0x61 && b | 0x20 <= 0x66: (b | 0x20) - 0x61 + 10
      default: nil
      }
    }
    while let byte = iterator.next() {
      var value = byte
      // A raw space could only have come from a request line read loosely.
      guard byte != 0x20 else { return nil }
      if byte == 0x25 {
        guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
        value = high << 4 | low
      }
      guard value >= 0x20 && value != 0x7F else { return nil }
      bytes.append(value)
    }
    return String(validating: bytes, as: UTF8.self)
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

  /// A memo-peer error, with the HTTP status its code maps to and its remedy worded for the
  /// page.
  public static func error(_ error: MemoPeerError) -> HTTPResponse {
    json(WebStatus.of(error.code), encoding: ErrorJSON(error: .init(error, wording: PageRemedyText.words)))
  }

  public func header(_ name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }
}

/// The HTTP status of each memo-peer error code on the API (docs/WEB.md). A switch without
/// `default`: a code added to `MemoPeerError.Code` does not compile until it has a status
/// here (and its line in WebRoutingTests), so none becomes a 500 by omission.
public enum WebStatus {
  public static func of(_ code: MemoPeerError.Code) -> Int {
    switch code {
    // The request itself was wrong.
    case .usage, .invalidInput, .invalidUTF8, .ambiguousID: 400
    case .tooLarge: 413
    case .notFound: 404
    // Refused until a person acts: a passphrase, a consent, a declared service type; or the
    // memo is sealed for the members of a notebook this device only relays.
    case .passphrase, .consentRequired, .policyDenied, .noAuth, .sealed: 403
    case .locked: 423
    // Not in the state it would need: a key without a passphrase, a conflict, held deletes,
    // a declined confirmation.
    case .notProtected, .conflict, .syncHeld, .cancelled: 409
    // Another device, or the system's mDNS daemon, failed or misbehaved.
    case .untrustedPeer, .connection, .daemonUnavailable, .discovery, .protocolViolation: 502
    // This device's own failure: its files, keys, database, libraries or editor.
    case .permissionsTooOpen, .keyMissing, .wrongKey, .integrity, .corruptDatabase, .foreignDatabase, .newerDatabase,
      .diskFull, .storage, .crypto, .io, .editor, .archive:
      500
    }
  }
}

/// A device's identity as people see it: the SHA-256 of its Ed25519 public key (raw 32
/// bytes), written in RFC 4648 base32 without padding and grouped by four, like
/// `MFRG-GZDF-…`. Long enough that nobody can forge a key with the same ID; grouped so that
/// two people can read it aloud. Prefixes (any case, dashes optional) name a device on the
/// command line, as short git hashes do.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
  public static let byteCount = 32
  /// The fingerprint bytes: SHA-256 of the raw public key.
  public let bytes: [UInt8]

  public init?(bytes: [UInt8]) {
    guard bytes.count == Self.byteCount else { return nil }
    self.bytes = bytes
  }

  /// Parses a full ID as printed by `memo-peer id` (case, dashes and spaces ignored).
  public init?(_ text: String) {
    guard let decoded = Base32.decode(Self.normalize(text)), let id = DeviceID(bytes: decoded) else { return nil }
    self = id
  }

  /// The ID in base32, 52 characters, no grouping.
  public var compact: String { Base32.encode(bytes) }

  /// The ID as shown to people: groups of four joined by dashes.
  public var description: String {
    var groups: [Substring] = []
    var rest = Substring(compact)
    while !rest.isEmpty {
      groups.append(rest.prefix(4))
      rest = rest.dropFirst(4)
    }
    return groups.joined(separator: "-")
  }

  /// The first group or two: enough to tell devices apart in a list.
  public var short: String { String(description.prefix(9)) }

  /// Upper-case base32 letters only: what a prefix is compared against.
  public static func normalize(_ text: String) -> String {
    String(text.uppercased().filter { $0 != "-" && $0 != " " })
  }

  public func hasPrefix(_ prefix: String) -> Bool {
    let wanted = Self.normalize(prefix)
    return !wanted.isEmpty && compact.hasPrefix(wanted)
  }

  public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

/// In JSON (files, the wire, `--json`) a device ID is its compact base32 text; anything that
/// does not parse as one is a decoding error, so a malformed ID never becomes a device.
extension DeviceID: Codable {
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    guard let id = DeviceID(try container.decode(String.self)) else {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a device ID")
    }
    self = id
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(compact)
  }
}

/// As a JSON object's key (`serve.json`'s `trusted_contacts`) a device ID is its compact
/// text too; a key that is not one fails the decoding, as a value does.
extension DeviceID: CodingKeyRepresentable {
  public var codingKey: any CodingKey { DeviceIDKey(stringValue: compact) }

  public init?<T: CodingKey>(codingKey: T) {
    guard let id = DeviceID(codingKey.stringValue) else { return nil }
    self = id
  }

  private struct DeviceIDKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }
}

/// RFC 4648 base32 (upper-case alphabet, no padding). Foundation has no base32; this is an
/// encoding, not a parser of untrusted structure, and is checked against the RFC's vectors.
public enum Base32 {
  static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

  public static func encode(_ bytes: [UInt8]) -> String {
    var output: [UInt8] = []
    output.reserveCapacity((bytes.count * 8 + 4) / 5)
    var buffer: UInt32 = 0
    var bits = 0
    for byte in bytes {
      buffer = (buffer << 8) | UInt32(byte)
      bits += 8
      while bits >= 5 {
        output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
        bits -= 5
      }
    }
    if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
    return String(decoding: output, as: UTF8.self)
  }

  /// Decodes unpadded upper-case base32; nil on any other character or on leftover bits
  /// that are not zero (a non-canonical encoding).
  public static func decode(_ text: String) -> [UInt8]? {
    var output: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for character in text.utf8 {
      guard let value = alphabet.firstIndex(of: character) else { return nil }
      buffer = (buffer << 5) | UInt32(value)
      bits += 5
      if bits >= 8 {
        output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
        bits -= 8
      }
    }
    guard bits < 5, buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
    return output
  }
}

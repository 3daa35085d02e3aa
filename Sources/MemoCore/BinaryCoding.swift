/// Appends big-endian integers and length-prefixed strings.
public struct ByteWriter {
  public var bytes: [UInt8] = []

  public init() {}

  public mutating func u8(_ value: UInt8) { bytes.append(value) }
  public mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
  public mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
  public mutating func string(_ value: String) {
    u32(UInt32(value.utf8.count))
    bytes.append(contentsOf: value.utf8)
  }
  /// u32 length, then the bytes as they are.
  public mutating func data(_ value: [UInt8]) {
    u32(UInt32(value.count))
    bytes.append(contentsOf: value)
  }
}

/// Reads what `ByteWriter` wrote; every read returns nil instead of running past the end.
public struct ByteReader {
  private let bytes: [UInt8]
  private var offset = 0

  public init(_ bytes: [UInt8]) { self.bytes = bytes }

  public var isAtEnd: Bool { offset == bytes.count }

  public mutating func u8() -> UInt8? {
    guard offset < bytes.count else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  public mutating func u32() -> UInt32? { integer(4).map { UInt32(truncatingIfNeeded: $0) } }
  public mutating func u64() -> UInt64? { integer(8) }

  private mutating func integer(_ size: Int) -> UInt64? {
    guard bytes.count - offset >= size else { return nil }
    var value: UInt64 = 0
    for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
    offset += size
    return value
  }

  /// ASCII (ids, replica ids, most titles and tags) is taken without the generic UTF-8
  /// validation, which cost about 1,200 instructions a string: a received sync record
  /// carries eight of them.
  public mutating func string() -> String? {
    guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
    defer { offset += length }
    return bytes.withUnsafeBufferPointer { all in
      let text = UnsafeBufferPointer(rebasing: all[offset..<offset + length])
      if Self.isASCII(text) { return String(decoding: text, as: UTF8.self) }
      return String(validating: text, as: UTF8.self)
    }
  }

  /// Whether every byte is below 0x80, looked at eight at a time.
  static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    let raw = UnsafeRawBufferPointer(bytes)
    var bits: UInt64 = 0
    var index = 0
    while index + 8 <= raw.count {
      bits |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      index += 8
    }
    while index < raw.count {
      bits |= UInt64(raw[index])
      index += 1
    }
    return bits & 0x8080_8080_8080_8080 == 0
  }

  /// Exactly `count` bytes as they are (no length before them); nil past the end.
  public mutating func bytes(_ count: Int) -> [UInt8]? {
    guard count >= 0, bytes.count - offset >= count else { return nil }
    defer { offset += count }
    return Array(bytes[offset..<offset + count])
  }

  /// What `ByteWriter.data` wrote; nil past the end or above `maximum` bytes.
  public mutating func data(maximum: Int) -> [UInt8]? {
    guard let length = u32().map(Int.init), length <= maximum, bytes.count - offset >= length else { return nil }
    defer { offset += length }
    return Array(bytes[offset..<offset + length])
  }
}

internal import CDNSSD
import MemoCore
import MemoSystem

/// TXT records through dns_sd's own TXTRecord* functions (no hand-written codec).
///
/// `@_spi(Fuzzing) public`: the decoder of what arrives by mDNS is a fuzz target
/// (Tests/Fuzz, `txt-record`), which builds in release as well, so it cannot reach it with
/// `@testable import`; no other module uses it.
@_spi(Fuzzing) public enum TXTRecordBytes {
  public static func encode(_ values: [String: String]) throws -> [UInt8] {
    var record = TXTRecordRef()
    TXTRecordCreate(&record, 0, nil)
    defer { TXTRecordDeallocate(&record) }
    for key in values.keys.sorted() {
      let value = Array(values[key]!.utf8)
      guard value.count + key.utf8.count < 255 else {
        throw MemoPeerError(.discovery, "a TXT record entry is longer than 255 bytes")
      }
      let code = value.withUnsafeBytes { TXTRecordSetValue(&record, key, UInt8(value.count), $0.baseAddress) }
      guard code == DNSServiceErrorType(kDNSServiceErr_NoError) else {
        throw MemoPeerError(.discovery, "a TXT record entry is too long", dnsServiceCode: code)
      }
    }
    let length = Int(TXTRecordGetLength(&record))
    guard length > 0, let bytes = TXTRecordGetBytesPtr(&record) else { return [0] }
    return Array(UnsafeRawBufferPointer(start: bytes, count: length))
  }

  /// The keys and values of a TXT record; a record longer than dns_sd's 16-bit length can
  /// describe (no real one is) reads as empty rather than being cut.
  public static func decode(_ bytes: [UInt8]) -> [String: String] {
    guard !bytes.isEmpty, bytes.count <= Int(UInt16.max) else { return [:] }
    var result: [String: String] = [:]
    bytes.withUnsafeBytes { raw in
      let count = TXTRecordGetCount(UInt16(raw.count), raw.baseAddress)
      for index in 0..<count {
        var key = [CChar](repeating: 0, count: 256)
        var valueLength: UInt8 = 0
        var value: UnsafeRawPointer?
        let code = TXTRecordGetItemAtIndex(
          UInt16(raw.count), raw.baseAddress, index, UInt16(key.count), &key, &valueLength, &value)
        guard code == DNSServiceErrorType(kDNSServiceErr_NoError) else { continue }
        let name = String(nulTerminated: key)
        let text = value.map {
          String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(valueLength)), as: UTF8.self)
        }
        result[name] = text ?? ""
      }
    }
    return result
  }
}

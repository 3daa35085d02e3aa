import XCTest

@_spi(Fuzzing) @testable import MemoDiscovery

final class TXTAndAddressTests: XCTestCase {
  func testTXTRecordsRoundTripThroughDNSSD() throws {
    let values = ["v": "1", "tag": "0123456789abcdef", "empty": ""]
    let bytes = try TXTRecordBytes.encode(values)
    XCTAssertEqual(TXTRecordBytes.decode(bytes), values)
    // Length-prefixed strings, as RFC 6763 lays them out.
    XCTAssertEqual(Array(bytes.prefix(1)), [UInt8("empty".utf8.count + 1)])
    XCTAssertThrowsError(try TXTRecordBytes.encode(["k": String(repeating: "x", count: 300)]))
    XCTAssertEqual(TXTRecordBytes.decode([]), [:])
  }

  func testAddressesArePrintedWithTheirScope() {
    XCTAssertEqual(formatAddress([169, 254, 1, 2], type: 1, interfaceIndex: 1), "169.254.1.2")
    XCTAssertEqual(
      formatAddress([0xFE, 0x80] + Array(repeating: 0, count: 13) + [1], type: 28, interfaceIndex: 1), "fe80::1%lo")
    XCTAssertEqual(
      formatAddress([0x20, 0x01] + Array(repeating: 0, count: 13) + [1], type: 28, interfaceIndex: 1), "2001::1")
    XCTAssertNil(formatAddress([1, 2, 3], type: 1, interfaceIndex: 0))
  }
}

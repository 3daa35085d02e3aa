import MemoCore
import XCTest

/// `Memo.origin`'s text form, as `memos.origin` and the archive hold it: what is written
/// reads back as the same origin, and text that is neither a replica id nor a compact device
/// ID is refused rather than taken for one.
final class MemoOriginTests: XCTestCase {
  private static let replicaText = "0123456789abcdef0123456789abcdef"
  private let replica = ReplicaID(MemoOriginTests.replicaText)!
  private let device = DeviceID(bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) })!

  func testAReplicaIsItsHexAndReadsBack() throws {
    let origin = MemoOrigin.replica(replica)
    XCTAssertEqual(origin.text, Self.replicaText)
    XCTAssertEqual(MemoOrigin(origin.text), origin)
    XCTAssertEqual("\(origin)", origin.text)
  }

  func testADeviceIsItsCompactBase32AndReadsBack() throws {
    let origin = MemoOrigin.device(device)
    XCTAssertEqual(origin.text, device.compact)
    XCTAssertEqual(origin.text.count, 52)
    XCTAssertEqual(MemoOrigin(origin.text), origin)
  }

  func testTheTwoKindsNeverReadAsEachOther() throws {
    guard case .replica = MemoOrigin(replica.rawValue) else { return XCTFail("a replica id read as a device") }
    guard case .device = MemoOrigin(device.compact) else { return XCTFail("a device ID read as a replica") }
  }

  func testOtherFormsOfADeviceIDAreRefused() {
    // `DeviceID.init` accepts these from a person; a stored origin is only ever compact.
    XCTAssertNotNil(DeviceID(device.description))
    XCTAssertNil(MemoOrigin(device.description), "grouped with dashes")
    XCTAssertNil(MemoOrigin(device.compact.lowercased()), "lower case")
    XCTAssertNil(MemoOrigin(device.short), "the short form")
  }

  func testTextThatIsNeitherIsRefused() {
    for text in [
      "", "r", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde",
      "0123456789abcdef0123456789abcdef0", " 0123456789abcdef0123456789abcdef", String(repeating: "1", count: 52),
      String(device.compact.dropLast()), "6d656d6f-2d70-6565-722f-706572736f6e",
    ] {
      XCTAssertNil(MemoOrigin(text), text)
    }
  }
}

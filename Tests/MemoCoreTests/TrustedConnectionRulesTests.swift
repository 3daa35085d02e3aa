import XCTest

@testable import MemoCore
@testable import MemoProtocol

final class DeviceIDTests: XCTestCase {
  func testBase32MatchesRFC4648Vectors() {
    let vectors = [
      "": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB",
      "foobar": "MZXW6YTBOI",
    ]
    for (plain, encoded) in vectors {
      XCTAssertEqual(Base32.encode(Array(plain.utf8)), encoded)
      XCTAssertEqual(Base32.decode(encoded), Array(plain.utf8))
    }
    XCTAssertNil(Base32.decode("MZXW1"), "1 is not in the alphabet")
    XCTAssertNil(Base32.decode("MZ"), "non-zero leftover bits are not canonical")
  }

  func testIDsPrintGroupedAndParseBackWhateverTheCaseAndDashes() throws {
    let id = try XCTUnwrap(DeviceID(bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) }))
    XCTAssertEqual(id.compact.count, 52)
    XCTAssertEqual(id.description.split(separator: "-").count, 13)
    XCTAssertEqual(DeviceID(id.description), id)
    XCTAssertEqual(DeviceID(id.description.lowercased()), id)
    XCTAssertEqual(DeviceID(id.compact), id)
    XCTAssertNil(DeviceID(String(id.compact.dropLast())))
    XCTAssertTrue(id.hasPrefix(String(id.description.prefix(6)).lowercased()))
    XCTAssertFalse(id.hasPrefix(""))
  }
}

final class FrameCodecTests: XCTestCase {
  func testFramesEncodeToAHeaderThatParsesBack() throws {
    for frame in [
      Frame(.hello, payload: Array("{}".utf8)), Frame(.ping), Frame(.pong, payload: [UInt8](repeating: 9, count: 300)),
    ] {
      let bytes = frame.encoded()
      XCTAssertEqual(bytes.count, Frame.headerSize + frame.payload.count)
      let header = try FrameHeader.parse(bytes.prefix(Frame.headerSize), maximumPayload: 1024)
      XCTAssertEqual(header, FrameHeader(kind: frame.kind, length: frame.payload.count))
      XCTAssertEqual(Array(bytes.dropFirst(Frame.headerSize)), frame.payload)
    }
  }

  func testBadHeadersAreRefusedBeforeAnyPayloadIsRead() {
    func error(_ bytes: [UInt8]) -> FrameError? {
      do {
        _ = try FrameHeader.parse(bytes, maximumPayload: 100)
        return nil
      } catch { return error }
    }
    XCTAssertEqual(error([1, 2, 0, 0, 0, 101]), .oversized(length: 101, maximum: 100))
    XCTAssertEqual(error([1, 2, 0xFF, 0xFF, 0xFF, 0xFF]), .oversized(length: 0xFFFF_FFFF, maximum: 100))
    XCTAssertEqual(error([1, 200, 0, 0, 0, 0]), .unknownType(200))
    XCTAssertEqual(error([9, 2, 0, 0, 0, 0]), .unsupportedVersion(9))
    XCTAssertEqual(error([1, 2, 0]), .truncated(have: 3, need: 6))
    XCTAssertNil(error([1, 2, 0, 0, 0, 100]), "a header within the limit is accepted")
  }
}

final class PairingAdvertisementTests: XCTestCase {
  func testThePairingAdvertisementCarriesTheNameButNoTag() {
    let txt = Advertisement.pairingTXTRecord(displayName: "desk")
    XCTAssertEqual(
      txt, ["v": "1", "pair": "1", "name": "desk"], "a tag would link the name to the regular advertisement")
  }
}

final class TrustListTests: XCTestCase {
  func id(_ seed: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: seed, count: 32))! }

  func testPeersAreFoundByNameOrUniqueIDPrefix() throws {
    var list = TrustList()
    try list.trust(TrustedPeer(deviceID: id(1), name: "laptop", discoveryKey: nil, source: .command, added: 1))
    try list.trust(TrustedPeer(deviceID: id(2), name: "server", discoveryKey: nil, source: .pairing, added: 2))
    XCTAssertEqual(try list.find("LAPTOP").name, "laptop")
    XCTAssertEqual(try list.find(String(id(2).description.prefix(4))).name, "server")
    XCTAssertThrowsError(try list.find("nobody")) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound) }
  }

  func testNamesAreUniqueAndCheckedAndRenameAndRemoveWork() throws {
    var list = TrustList()
    try list.trust(TrustedPeer(deviceID: id(1), name: "laptop", discoveryKey: nil, source: .command, added: 1))
    XCTAssertThrowsError(
      try list.trust(TrustedPeer(deviceID: id(2), name: "Laptop", discoveryKey: nil, source: .command, added: 1)))
    for bad in ["", " padded", "-dash", "tab\there", String(repeating: "x", count: 65)] {
      XCTAssertThrowsError(try TrustList.validate(name: bad), bad)
    }
    XCTAssertEqual(list.availableName("laptop", for: id(2)), "laptop (2)")
    XCTAssertEqual(list.availableName("laptop", for: id(1)), "laptop", "its own name is available to a device")
    _ = try list.rename("laptop", to: "old laptop")
    XCTAssertEqual(list.peers.map(\.name), ["old laptop"])
    XCTAssertTrue(list.learnDiscoveryKey("a2V5", rotationSeconds: 900, for: id(1)))
    XCTAssertFalse(list.learnDiscoveryKey("a2V5", rotationSeconds: 900, for: id(1)), "nothing new")
    _ = try list.remove("old laptop")
    XCTAssertTrue(list.peers.isEmpty)
  }
}

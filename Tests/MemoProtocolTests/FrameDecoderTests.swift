import MemoCore
import MemoProtocol
import XCTest

/// The one frame parser, both ways it is fed: `push` (the machine tests, the fuzz targets)
/// and `fill` (`TLSConnection.receive`, which lets TLS write into it in pieces of whatever
/// size a record gives). Both must give the frames and the error a spec-literal reading of
/// the stream gives, however the stream is cut.
final class FrameDecoderTests: XCTestCase {
  static let maximum = 64

  /// What a stream is, read by the letter of docs/PROTOCOL.md in one go: its frames, then
  /// either a clean end or the error that ends it.
  struct Reading: Equatable {
    var frames: [Frame] = []
    var error: FrameError?
  }

  static func reference(_ bytes: [UInt8]) -> Reading {
    var reading = Reading()
    var offset = 0
    while offset < bytes.count {
      let header = Array(bytes[offset..<min(offset + 6, bytes.count)])
      guard header.count == 6 else {
        reading.error = .truncated(have: header.count, need: 6)
        return reading
      }
      guard header[0] == 1 else {
        reading.error = .unsupportedVersion(header[0])
        return reading
      }
      guard let kind = Frame.Kind(rawValue: header[1]) else {
        reading.error = .unknownType(header[1])
        return reading
      }
      let length = Int(header[2]) << 24 | Int(header[3]) << 16 | Int(header[4]) << 8 | Int(header[5])
      guard length <= maximum else {
        reading.error = .oversized(length: length, maximum: maximum)
        return reading
      }
      let start = offset + 6
      let payload = Array(bytes[start..<min(start + length, bytes.count)])
      guard payload.count == length else {
        reading.error = .truncated(have: payload.count, need: length)
        return reading
      }
      reading.frames.append(Frame(kind, payload: payload))
      offset = start + length
    }
    return reading
  }

  /// The machine tests' path: `push` in pieces of `piece` bytes, then the end of the stream.
  static func pushed(_ bytes: [UInt8], piece: Int) -> Reading {
    var decoder = FrameDecoder(maximumPayload: maximum)
    var reading = Reading()
    var offset = 0
    while offset < bytes.count {
      let end = min(offset + piece, bytes.count)
      do { try decoder.push(bytes[offset..<end]) { reading.frames.append($0) } } catch {
        reading.error = error
        return reading
      }
      offset = end
    }
    reading.error = decoder.truncation
    return reading
  }

  /// Production's path: `fill`, the way `TLSConnection.receive` calls it, from a transport
  /// that hands over at most `piece` bytes a read (and never more than the room given).
  static func filled(_ bytes: [UInt8], piece: Int) -> Reading {
    var decoder = FrameDecoder(maximumPayload: maximum)
    var reading = Reading()
    var offset = 0
    while offset < bytes.count {
      do {
        let frame = try decoder.fill { (room: UnsafeMutableBufferPointer<UInt8>) -> Int in
          XCTAssertGreaterThan(room.count, 0, "asked for nothing")
          let count = min(piece, room.count, bytes.count - offset)
          for index in 0..<count { room[index] = bytes[offset + index] }
          offset += count
          return count
        }
        if let frame { reading.frames.append(frame) }
      } catch {
        switch error {
        case .frame(let refused): reading.error = refused
        case .read(let never): switch never {}
        }
        return reading
      }
    }
    reading.error = decoder.truncation
    return reading
  }

  static let streams: [(name: String, bytes: [UInt8])] = {
    let ping = Frame(.ping, payload: [1, 2, 3]).encoded()
    let empty = Frame(.pong).encoded()
    let full = Frame(.syncBatch, payload: [UInt8](repeating: 9, count: maximum)).encoded()
    return [
      ("nothing", []),
      ("frames", ping + empty + full + ping),
      ("an empty payload last", ping + empty),
      ("a header cut short", ping + Array(full.prefix(4))),
      ("a payload cut short", ping + Array(full.prefix(20))),
      ("a payload cut before its first byte", ping + Array(full.prefix(6))),
      ("a length over the maximum", ping + [1, Frame.Kind.ping.rawValue, 0, 0, 0, UInt8(maximum + 1), 7, 7]),
      ("a length of 4 GiB", [1, Frame.Kind.ping.rawValue, 0xFF, 0xFF, 0xFF, 0xFF]),
      ("an unknown type", ping + [1, 0xEE, 0, 0, 0, 0]),
      ("another version", [2, Frame.Kind.ping.rawValue, 0, 0, 0, 0] + ping),
      ("a bad header after a good frame in one piece", empty + [0, 0, 0, 0, 0, 0]),
    ]
  }()

  func testEveryWayOfFeedingTheDecoderReadsTheStreamAsTheProtocolSays() {
    for (name, bytes) in Self.streams {
      let expected = Self.reference(bytes)
      for piece in 1...max(1, bytes.count) {
        XCTAssertEqual(Self.pushed(bytes, piece: piece), expected, "\(name), pushed in pieces of \(piece)")
        XCTAssertEqual(Self.filled(bytes, piece: piece), expected, "\(name), filled in pieces of \(piece)")
      }
    }
  }

  /// The streams are not all good: the comparison above would pass on a decoder that reads
  /// nothing only if the reference did too.
  func testTheStreamsCoverFramesAndEveryError() {
    let readings = Self.streams.map { Self.reference($0.bytes) }
    XCTAssertTrue(readings.contains { $0.frames.count == 4 && $0.error == nil })
    XCTAssertTrue(readings.contains { if case .truncated = $0.error { true } else { false } })
    XCTAssertTrue(readings.contains { if case .oversized = $0.error { true } else { false } })
    XCTAssertTrue(readings.contains { if case .unknownType = $0.error { true } else { false } })
    XCTAssertTrue(readings.contains { if case .unsupportedVersion = $0.error { true } else { false } })
  }

  /// An oversized header is refused with nothing of its payload held.
  func testAnOversizedHeaderIsRefusedBeforeItsPayloadIsBuffered() {
    var decoder = FrameDecoder(maximumPayload: Self.maximum)
    XCTAssertThrowsError(try decoder.push([1, Frame.Kind.ping.rawValue, 0, 0x10, 0, 0])) { error in
      XCTAssertEqual(error as? FrameError, .oversized(length: 0x10_0000, maximum: Self.maximum))
    }
    XCTAssertEqual(decoder.pending, Frame.headerSize)
  }
}

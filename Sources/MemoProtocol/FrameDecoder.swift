import MemoCore

/// Frames out of a byte stream that arrives in pieces of any size, for state machines
/// tested without I/O (one byte at a time, or everything at once). The header is checked as
/// soon as its six bytes are there, so an oversized or unknown frame is refused before its
/// payload is buffered; nothing beyond one frame's maximum is ever held.
public struct FrameDecoder: Sendable {
  public let maximumPayload: Int
  private var buffer: [UInt8] = []
  private var header: FrameHeader?

  public init(maximumPayload: Int) { self.maximumPayload = maximumPayload }

  /// Bytes held that do not make a whole frame yet (0 at a frame boundary).
  public var pending: Int { buffer.count }

  /// Appends `bytes` and returns every frame they complete, in order.
  public mutating func push(_ bytes: some Sequence<UInt8>) throws(FrameError) -> [Frame] {
    var frames: [Frame] = []
    for byte in bytes {
      buffer.append(byte)
      if header == nil {
        guard buffer.count == Frame.headerSize else { continue }
        header = try FrameHeader.parse(buffer, maximumPayload: maximumPayload)
      }
      if let current = header, buffer.count == Frame.headerSize + current.length {
        frames.append(Frame(current.kind, payload: Array(buffer.dropFirst(Frame.headerSize))))
        buffer.removeAll(keepingCapacity: true)
        header = nil
      }
    }
    return frames
  }
}

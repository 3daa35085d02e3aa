import MemoCore

/// The one frame parser: frames out of a byte stream that arrives in pieces of any size.
/// `TLSConnection` (MemoTransport) reads the socket straight into it (`fill`), and the state
/// machines' tests feed it a byte at a time (`push`), so what the tests prove about framing
/// is what production does.
///
/// The header is checked as soon as its six bytes are there, so an oversized or unknown
/// frame is refused before its payload is buffered; nothing beyond one frame's maximum is
/// ever held. The decoder asks for no byte past the end of the current header or payload,
/// so a reader never takes bytes of the next frame off its transport early. The payload is
/// filled in place and handed over as the frame's own buffer: no copy per frame (this is the
/// bulk path of a sync).
public struct FrameDecoder: Sendable {
  public let maximumPayload: Int
  /// The header being read, reused from frame to frame.
  private var head = [UInt8](repeating: 0, count: Frame.headerSize)
  /// The payload being read, allocated at its exact length once the header is checked.
  private var payload: [UInt8] = []
  /// Nil while the header is read; the checked header while its payload is.
  private var header: FrameHeader?
  /// Bytes of the current header or payload filled so far.
  private var filled = 0

  public init(maximumPayload: Int) { self.maximumPayload = maximumPayload }

  /// Bytes held that do not make a whole frame yet (0 at a frame boundary).
  public var pending: Int { header == nil ? filled : Frame.headerSize + filled }

  /// Whether no byte of a frame has arrived yet: a stream may end here cleanly.
  public var isAtBoundary: Bool { pending == 0 }

  /// Why a stream that ended now ended badly: nil at a frame boundary, else the truncation
  /// (of the header, or of the payload, counting its own bytes), as a reader reports it.
  public var truncation: FrameError? {
    guard let header else { return filled == 0 ? nil : .truncated(have: filled, need: Frame.headerSize) }
    return .truncated(have: filled, need: header.length)
  }

  /// Lets `read` write the next bytes straight into the decoder's buffer: it gets room for
  /// at most what the current header or payload still lacks (never empty) and returns how
  /// many bytes it wrote. Returns the frame those bytes complete, if any; a header that
  /// breaks the protocol throws (and the stream is over: the decoder is not reset).
  public mutating func fill<Failure: Error>(
    _ read: (UnsafeMutableBufferPointer<UInt8>) throws(Failure) -> Int
  ) throws(FillError<Failure>) -> Frame? {
    let count: Int
    let start = filled
    do {
      if header == nil {
        count = try head.withUnsafeMutableBufferPointer { buffer throws(Failure) in
          try read(UnsafeMutableBufferPointer(rebasing: buffer[start...]))
        }
      } else {
        count = try payload.withUnsafeMutableBufferPointer { buffer throws(Failure) in
          try read(UnsafeMutableBufferPointer(rebasing: buffer[start...]))
        }
      }
    } catch {
      throw .read(error)
    }
    filled += count
    do { return try advance() } catch { throw .frame(error) }
  }

  /// What `fill` throws: the reader's own error, or a header that breaks the protocol.
  public enum FillError<Failure: Error>: Error {
    case read(Failure)
    case frame(FrameError)
  }

  /// Appends `bytes` and hands over every frame they complete, in order, as soon as it is
  /// complete (tests, fuzzing): the same path as `fill`, a piece at a time. A header that
  /// breaks the protocol throws after the frames before it were handed over, as a reader of
  /// a connection gets them.
  public mutating func push(_ bytes: some Sequence<UInt8>, each: (Frame) -> Void) throws(FrameError) {
    var iterator = bytes.makeIterator()
    var next = iterator.next()
    while next != nil {
      let frame: Frame?
      do {
        frame = try fill { (room: UnsafeMutableBufferPointer<UInt8>) -> Int in
          var written = 0
          while written < room.count, let byte = next {
            room[written] = byte
            written += 1
            next = iterator.next()
          }
          return written
        }
      } catch {
        switch error {
        case .frame(let frameError): throw frameError
        case .read(let never): switch never {}
        }
      }
      if let frame { each(frame) }
    }
  }

  /// Appends `bytes` and returns every frame they complete, in order; nothing when a header
  /// breaks the protocol (it throws).
  public mutating func push(_ bytes: some Sequence<UInt8>) throws(FrameError) -> [Frame] {
    var frames: [Frame] = []
    try push(bytes) { frames.append($0) }
    return frames
  }

  /// After bytes arrived: checks a header that is complete, hands over a payload that is.
  private mutating func advance() throws(FrameError) -> Frame? {
    if header == nil {
      guard filled == Frame.headerSize else { return nil }
      let parsed = try FrameHeader.parse(head, maximumPayload: maximumPayload)
      header = parsed
      payload = [UInt8](repeating: 0, count: parsed.length)
      filled = 0
    }
    guard let current = header, filled == current.length else { return nil }
    let frame = Frame(current.kind, payload: payload)
    payload = []
    header = nil
    filled = 0
    return frame
  }
}

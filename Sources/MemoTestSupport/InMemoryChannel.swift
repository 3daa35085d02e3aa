import Dispatch
import MemoCore
import MemoCrypto
import MemoProtocol
import Synchronization

/// Faults injected into one direction of an in-memory link. Everything but the delays is
/// deterministic: the same faults on the same frames give the same run.
public struct DirectionFaults: Sendable {
  /// Each frame arrives this many seconds after it was sent (order is kept).
  public var delay: Double
  /// Seconds added to `delay` for the frame of each index (from 0): TCP's retransmissions
  /// as the far end sees them. Order is kept unless `reorders`.
  public var jitter: (@Sendable (_ index: Int) -> Double)?
  /// A frame with less delay may overtake one sent before it (which TLS over TCP never
  /// lets happen: a buggy or hostile peer, a broken middlebox).
  public var reorders: Bool
  /// The link breaks right after this direction's Nth frame: the frames sent before arrive,
  /// every later frame (either way) is lost, and each end, having read what arrived, reads
  /// the end of the stream — a cut TCP connection, seen from both ends.
  public var cutAfterFrames: Int?
  /// When set, `cutAfterFrames` counts only frames of this kind (e.g. the Nth `sync-batch`,
  /// wherever it falls in the session).
  public var cutCounting: Frame.Kind?
  /// Byte-level corruption: gets each frame's index in this direction (from 0) and its
  /// bytes on the wire (header included), and may change them.
  public var corrupt: (@Sendable (_ index: Int, _ bytes: inout [UInt8]) -> Void)?
  /// The frames of these indices arrive twice (which TLS never lets happen: a buggy peer
  /// sending one again, a middlebox replaying it).
  public var duplicates: (@Sendable (_ index: Int) -> Bool)?

  public init(
    delay: Double = 0, cutAfterFrames: Int? = nil, cutCounting: Frame.Kind? = nil,
    corrupt: (@Sendable (_ index: Int, _ bytes: inout [UInt8]) -> Void)? = nil,
    jitter: (@Sendable (_ index: Int) -> Double)? = nil, reorders: Bool = false,
    duplicates: (@Sendable (_ index: Int) -> Bool)? = nil
  ) {
    self.duplicates = duplicates
    self.delay = delay
    self.jitter = jitter
    self.reorders = reorders
    self.cutAfterFrames = cutAfterFrames
    self.cutCounting = cutCounting
    self.corrupt = corrupt
  }

  /// XORs `mask` into byte `byte` of frame `frame` (indices in this direction, from 0).
  public static func flip(frame: Int, byte: Int, mask: UInt8 = 0xFF) -> DirectionFaults {
    DirectionFaults(corrupt: { index, bytes in
      if index == frame && byte < bytes.count { bytes[byte] ^= mask }
    })
  }
}

/// The faults of both directions of a link.
public struct LinkFaults: Sendable {
  /// Frames the first end of `InMemoryChannel.pair` sends.
  public var fromFirst: DirectionFaults
  /// Frames the second end sends.
  public var fromSecond: DirectionFaults

  public init(fromFirst: DirectionFaults = DirectionFaults(), fromSecond: DirectionFaults = DirectionFaults()) {
    self.fromFirst = fromFirst
    self.fromSecond = fromSecond
  }
}

/// One end of a frame channel joined to another end in this process: the `FrameChannel`
/// that sessions run over in tests, instead of TLS. Frames cross as bytes (encoded, then
/// parsed with the receiver's limits, as TLSConnection parses them), so corrupted bytes
/// meet the same checks as on the network. Waits honour the deadlines and limits of the
/// contract; `close()` (or `interrupt()`, from any thread) ends the other end's stream.
public final class InMemoryChannel: FrameChannel {
  public let peer: DeviceID?
  public let limits: ConnectionLimits
  /// 0 for the first end, 1 for the second.
  let side: Int
  let link: Link
  private let exporterSecret: [UInt8]

  init(side: Int, peer: DeviceID?, link: Link, limits: ConnectionLimits, exporterSecret: [UInt8]) {
    self.side = side
    self.peer = peer
    self.link = link
    self.limits = limits
    self.exporterSecret = exporterSecret
  }

  /// Two joined ends: the first talks to `second` (its `peer`), the second to `first`.
  /// `exporters` gives each end its own keying-material secret; the default gives both the
  /// same, as one TLS session does (different ones stand for a man in the middle).
  public static func pair(
    first: DeviceID, second: DeviceID, limits: ConnectionLimits = ConnectionLimits(),
    faults: LinkFaults = LinkFaults(), exporters: ([UInt8], [UInt8])? = nil
  ) -> (InMemoryChannel, InMemoryChannel) {
    let link = Link(faults: [faults.fromFirst, faults.fromSecond])
    let shared = (try? SystemRandom.bytes(32)) ?? [UInt8](repeating: 7, count: 32)
    let secrets = exporters ?? (shared, shared)
    return (
      InMemoryChannel(side: 0, peer: second, link: link, limits: limits, exporterSecret: secrets.0),
      InMemoryChannel(side: 1, peer: first, link: link, limits: limits, exporterSecret: secrets.1)
    )
  }

  public func send(_ frame: Frame) throws(TransportError) {
    try link.send(frame.encoded(), from: side)
  }

  public func receive(before deadline: Deadline?) throws(TransportError) -> Frame? {
    let idle = deadline ?? .after(seconds: limits.idleSeconds)
    var frameDeadline: Deadline?
    guard
      let header = try link.read(
        Frame.headerSize, into: side, atBoundary: true, idle: idle, frame: &frameDeadline, limits: limits)
    else { return nil }
    let parsed: FrameHeader
    do { parsed = try FrameHeader.parse(header, maximumPayload: limits.maximumPayload) } catch {
      throw .frame(error)
    }
    guard parsed.length > 0 else { return Frame(parsed.kind) }
    frameDeadline = frameDeadline ?? .after(seconds: limits.frameSeconds)
    let payload = try link.read(
      parsed.length, into: side, atBoundary: false, idle: idle, frame: &frameDeadline, limits: limits)
    return Frame(parsed.kind, payload: payload ?? [])
  }

  public func close() { link.close(side) }

  /// The same as `close()`: every in-memory operation is safe from any thread.
  public func interrupt() { link.close(side) }

  /// HMAC-SHA256 of the label under this end's secret, repeated to `length`: equal on both
  /// ends exactly when their secrets are.
  public func exportKeyingMaterial(label: String, length: Int) throws(TransportError) -> [UInt8] {
    var output: [UInt8] = []
    var counter: UInt8 = 0
    while output.count < length {
      do {
        output += try HMACSHA256.authenticate(
          key: SecureBytes(copying: exporterSecret), message: Array(label.utf8) + [counter])
      } catch { throw TransportError(.library, "HMAC failed") }
      counter &+= 1
    }
    return Array(output.prefix(length))
  }

  public var wireBytes: (sent: UInt64, received: UInt64) { link.counts(side) }

  /// Frames this end has sent so far (what `cutAfterFrames` counts).
  public var framesSent: Int { link.framesSent(side) }
}

/// The shared middle of a pair: a byte queue per direction, the faults, who has closed.
/// All state is behind one mutex; each end waits on its own semaphore, signalled whenever
/// something it may be waiting for changes.
final class Link: Sendable {
  struct Chunk {
    var bytes: [UInt8]
    var arrives: Deadline
  }

  struct State {
    /// Frames in flight towards each end.
    var inbound: [[Chunk]] = [[], []]
    /// Bytes that arrived at each end and are not read yet.
    var buffered: [[UInt8]] = [[], []]
    var framesSent = [0, 0]
    /// Frames that count towards each direction's cut.
    var framesCounted = [0, 0]
    var bytesSent: [UInt64] = [0, 0]
    var bytesReceived: [UInt64] = [0, 0]
    var closed = [false, false]
    var cut = false
  }

  let faults: [DirectionFaults]
  let state = Mutex(State())
  let wakeups = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]

  init(faults: [DirectionFaults]) { self.faults = faults }

  func send(_ encoded: [UInt8], from side: Int) throws(TransportError) {
    let other = 1 - side
    let faults = self.faults[side]
    enum Outcome {
      case failed(TransportError)
      case lost
      case queued(cut: Bool)
    }
    let outcome = state.withLock { state -> Outcome in
      if state.closed[side] { return .failed(TransportError(.interrupted, "closed by this node")) }
      // Into a cut link, or to an end that left: accepted and lost, as TCP would.
      if state.cut || state.closed[other] { return .lost }
      var bytes = encoded
      let index = state.framesSent[side]
      faults.corrupt?(index, &bytes)
      state.framesSent[side] += 1
      state.bytesSent[side] += UInt64(bytes.count)
      let arrives = Deadline.after(seconds: faults.delay + (faults.jitter?(index) ?? 0))
      if faults.reorders {
        // Into place by arrival: whole frames overtake one another, bytes stay together.
        let place = state.inbound[other].firstIndex { $0.arrives > arrives } ?? state.inbound[other].endIndex
        state.inbound[other].insert(Chunk(bytes: bytes, arrives: arrives), at: place)
      } else {
        let earliest = state.inbound[other].last?.arrives ?? .now()
        state.inbound[other].append(Chunk(bytes: bytes, arrives: Swift.max(earliest, arrives)))
      }
      if faults.duplicates?(index) == true {
        state.inbound[other].append(Chunk(bytes: bytes, arrives: state.inbound[other].last?.arrives ?? arrives))
      }
      if faults.cutCounting.map({ $0.rawValue == encoded[1] }) ?? true { state.framesCounted[side] += 1 }
      if let cut = faults.cutAfterFrames, state.framesCounted[side] >= cut { state.cut = true }
      return .queued(cut: state.cut)
    }
    switch outcome {
    case .failed(let error): throw error
    case .lost: return
    case .queued(let cut):
      wakeups[other].signal()
      // Both ends may be waiting for the end of the stream.
      if cut { wakeups[side].signal() }
    }
  }

  /// Reads exactly `count` bytes for `side`; nil when the stream ended before the first of
  /// them at a frame boundary (a clean end); an end anywhere else is a truncated frame.
  func read(
    _ count: Int, into side: Int, atBoundary: Bool, idle: Deadline, frame: inout Deadline?, limits: ConnectionLimits
  ) throws(TransportError) -> [UInt8]? {
    let other = 1 - side
    while true {
      let deadline = frame ?? idle
      enum Step {
        case done([UInt8])
        case ended(have: Int)
        case interrupted
        case wait(until: Deadline)
      }
      let step = state.withLock { state -> Step in
        if state.closed[side] { return .interrupted }
        let now = Deadline.now()
        while let first = state.inbound[side].first, first.arrives <= now {
          state.buffered[side] += first.bytes
          state.inbound[side].removeFirst()
        }
        if state.buffered[side].count >= count {
          let bytes = Array(state.buffered[side].prefix(count))
          state.buffered[side].removeFirst(count)
          state.bytesReceived[side] += UInt64(count)
          return .done(bytes)
        }
        if state.inbound[side].isEmpty && (state.cut || state.closed[other]) {
          return .ended(have: state.buffered[side].count)
        }
        return .wait(until: state.inbound[side].first.map { Swift.min($0.arrives, deadline) } ?? deadline)
      }
      switch step {
      case .done(let bytes): return bytes
      case .interrupted: throw TransportError(.interrupted, "closed by this node")
      case .ended(let have):
        if have == 0 && atBoundary { return nil }
        throw .frame(.truncated(have: have, need: count))
      case .wait(let until):
        if deadline.hasPassed {
          throw TransportError(frame == nil ? .idleTimeout : .frameTimeout, "timed out")
        }
        _ = until.clock.wait(until: until.instant, on: wakeups[side])
        // Once any byte of a frame is here, the rest has the frame limit.
        if frame == nil, state.withLock({ !$0.buffered[side].isEmpty }) {
          frame = .after(seconds: limits.frameSeconds)
        }
      }
    }
  }

  func close(_ side: Int) {
    state.withLock { $0.closed[side] = true }
    for wakeup in wakeups { wakeup.signal() }
  }

  func counts(_ side: Int) -> (sent: UInt64, received: UInt64) {
    state.withLock { ($0.bytesSent[side], $0.bytesReceived[side]) }
  }

  func framesSent(_ side: Int) -> Int { state.withLock { $0.framesSent[side] } }
}

/// A protocol state machine that a driver runs: events (frames, the end of the connection,
/// the answers to the work it asked for) go in, actions (frames to send, work to do, the
/// end) come out. `SyncMachine`, `SessionMachine`, `DeliverySender` and `PairingMachine`
/// are ones; `MachineDriver` runs the first three over a channel, tests run any of them
/// against each other on one thread.
public protocol DrivenMachine {
  associatedtype Event
  associatedtype Action

  /// Whether the machine ended: it takes no more events.
  var isFinished: Bool { get }

  /// Everything that happens to the machine, one event at a time.
  mutating func handle(_ event: Event) -> [Action]

  /// The event of a frame that arrived (nil: the peer ended the stream between frames).
  static func received(_ frame: Frame?) -> Event

  /// What the machine does when the bytes of its peer break the framing (`FrameDecoder`
  /// refused a header). A `FrameChannel` reports that as a `protocolViolation` error
  /// instead, which the drivers treat as the end of the connection.
  mutating func framingFailed(_ error: FrameError) -> [Action]
}

extension DrivenMachine {
  /// Bytes as they came off a connection, in pieces of any size, through `decoder`: the
  /// parser `TLSConnection` reads with, so a test that feeds a machine a byte at a time
  /// frames them exactly as production does (the frames before a header that breaks the
  /// framing reach the machine first).
  public mutating func receive(bytes: some Sequence<UInt8>, through decoder: inout FrameDecoder) -> [Action] {
    guard !isFinished else { return [] }
    var actions: [Action] = []
    do {
      // Each frame as it completes, then the error: what a connection's reader gives.
      try decoder.push(bytes) { frame in
        if !isFinished { actions += handle(Self.received(frame)) }
      }
    } catch {
      if !isFinished { actions += framingFailed(error) }
    }
    return actions
  }
}

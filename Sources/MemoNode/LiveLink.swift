import Dispatch
import MemoCore
import MemoProtocol
import MemoStore
import Synchronization

/// One connection `serve` keeps open with a trusted device (live sync): a sync as soon as it
/// is up (what either side missed while apart), another each time `push` is called (a
/// revision was stored here), and a `ping` after every 20 s of quiet, which the peer must
/// answer within 10 s: a peer that went away without a word (asleep, unplugged) is noticed
/// within 30 s, and the link ends so that the daemon dials it again.
///
/// One thread drives the channel (`drive`); any thread may `push` or `close`. The store is
/// opened once per link, for the daemon, and kept for its later syncs.
final class LiveLink: Sendable {
  /// Seconds of quiet before a keepalive ping.
  static let keepaliveSeconds = 20.0
  /// Seconds the peer has to answer it.
  static let pongSeconds = 10.0

  let peer: TrustedPeer
  private let signal = DispatchSemaphore(value: 0)
  /// `owed`: a sync is due (true at first: the link's first sync); `closing`: end the link.
  private let state = Mutex((owed: true, closing: false))

  init(peer: TrustedPeer) { self.peer = peer }

  /// A revision was stored here: the link syncs once more (calls while one runs make one).
  func push() {
    state.withLock { $0.owed = true }
    signal.signal()
  }

  /// Ends the link: it says goodbye and closes, after the sync it may be in.
  func close() {
    state.withLock { $0.closing = true }
    signal.signal()
  }

  /// How a link ended.
  enum Ending: Sendable {
    /// `close` was called.
    case closed
    /// The channel broke, the peer left, did not answer a keepalive or refused a sync.
    case failed(MemoPeerError)
  }

  /// Drives `channel` until the link ends; calls `synced` after each sync. Blocking: run it
  /// on a thread of its own.
  func drive(_ channel: any FrameChannel, runner: PeerSync, synced: (PeerSync.PeerResult) -> Void) -> Ending {
    var pings = PingExchange()
    var opened: MemoStore?
    while true {
      let (owed, closing) = state.withLock { state in
        defer { state.owed = false }
        return (state.owed, state.closing)
      }
      if closing {
        try? channel.send(PeerSession.goodbye("done"))
        channel.close()
        return .closed
      }
      do {
        if owed {
          let store = try opened ?? runner.openReadable()
          opened = store
          synced(try runner.session(over: channel, with: peer, store: store, deleteGuard: MassDeleteGuard()))
          continue
        }
        guard signal.wait(timeout: .now() + Self.keepaliveSeconds) == .timedOut else { continue }
        try channel.send(pings.next())
        guard pings.answers(try channel.receive(before: .after(seconds: Self.pongSeconds))) else {
          throw MemoPeerError(.connection, "the peer did not answer the keepalive")
        }
      } catch {
        channel.close()
        return .failed(PeerSync.memoPeerError(error))
      }
    }
  }
}

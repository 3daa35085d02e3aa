import Dispatch
import MemoCore
import MemoProtocol
import MemoStore
import Synchronization

/// One connection `serve` keeps open with a trusted device (live sync): a sync as soon as it
/// is up (what either side missed while apart), another each time `push` is called (a
/// revision was stored here), and a `ping` after 23–25 s (jittered) in which nothing came
/// from that device on any channel (`PeerActivity`: its own link to us counts, so of a
/// pair's two links one pings), which the peer must answer within 5 s: a peer that went
/// away without a word (asleep, unplugged) is noticed within 30 s, and the link ends so
/// that the daemon dials it again.
///
/// One thread drives the channel (`drive`); any thread may `push` or `close`. The store is
/// opened once per link, for the daemon, and kept for its later syncs.
final class LiveLink: Sendable {
  /// Seconds of quiet before a keepalive ping, and the most added at random to each wait
  /// (so that a pair's two links do not keep pinging at the same moments).
  static let keepaliveSeconds = 23.0
  static let keepaliveJitter = 2.0
  /// Seconds the peer has to answer it.
  static let pongSeconds = 5.0
  /// The longest a sync on the link waits for the peer's next frame: a peer that vanished
  /// in the middle of a push is noticed as soon as a silent one is (not after the
  /// connection's idle limit of 120 s).
  static let syncQuietSeconds = keepaliveSeconds + keepaliveJitter + pongSeconds

  let peer: TrustedPeer
  private let signal = DispatchSemaphore(value: 0)
  /// `owed`: a sync is due (true at first: the link's first sync); `closing`: end the link;
  /// `synced`: a sync on it succeeded; `probe`: a keepalive is due now (`check`).
  private let state = Mutex((owed: true, closing: false, synced: false, probe: false))

  let activity: PeerActivity

  init(peer: TrustedPeer, activity: PeerActivity) {
    self.peer = peer
    self.activity = activity
  }

  /// A revision was stored here: the link syncs once more (calls while one runs make one).
  func push() {
    state.withLock { $0.owed = true }
    signal.signal()
  }

  /// The link may have died without a word (this machine's address changed; the peer
  /// dialled us afresh, so its end of the pair was replaced): it pings now rather than after
  /// the usual quiet, and ends within `pongSeconds` if nothing answers.
  func check() {
    state.withLock { $0.probe = true }
    signal.signal()
  }

  /// Ends the link: it says goodbye and closes, after the sync it may be in.
  func close() {
    state.withLock { $0.closing = true }
    signal.signal()
  }

  /// Whether a sync on this link succeeded: a link that ends before says its peer refuses
  /// what we send, and is dialled again only after a growing pause.
  var hasSynced: Bool { state.withLock { $0.synced } }

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
      let (owed, closing, probe) = state.withLock { state in
        defer { (state.owed, state.probe) = (false, false) }
        return (state.owed, state.closing, state.probe)
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
          synced(
            try runner.session(
              over: channel, with: peer, store: store, deleteGuard: MassDeleteGuard(), quiet: Self.syncQuietSeconds))
          state.withLock { $0.synced = true }
          activity.record(peer.deviceID)
          continue
        }
        if !probe {
          let quiet = activity.silence(of: peer.deviceID)
          let wait = max(Self.keepaliveSeconds - quiet, 0) + Double.random(in: 0..<Self.keepaliveJitter)
          guard signal.wait(timeout: .now() + wait) == .timedOut else { continue }
          guard activity.silence(of: peer.deviceID) >= Self.keepaliveSeconds else { continue }
        }
        try channel.send(pings.next())
        guard pings.answers(try channel.receive(before: .after(seconds: Self.pongSeconds))) else {
          throw MemoPeerError(.connection, "the peer did not answer the keepalive")
        }
        activity.record(peer.deviceID)
      } catch {
        channel.close()
        return .failed(PeerSync.memoPeerError(error))
      }
    }
  }
}

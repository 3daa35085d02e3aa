import Dispatch
import MemoCore
import MemoProtocol
import MemoStore
import Synchronization

/// One connection `serve` keeps open with a trusted device (live sync): a sync as soon as it
/// is up (what either side missed while apart), another each time `push` is called (a
/// revision was stored here), and the keepalive of `LiveKeepalive`: of a pair, the device
/// with the lower ID pings after 30 s in which nothing came from the other on any channel
/// (`PeerActivity`: the other's own link to us counts) and gives it 3 s to answer; the
/// other only expects that traffic, and gives the pinger up after 33 s without a frame
/// (it pings itself only while the pinger's link to it is not open). A peer that went away
/// without a word (asleep, unplugged) is noticed within 33 s (36 s by a listener without the
/// peer's link), and the link ends so that the daemon dials it again.
///
/// One thread drives the channel (`drive`); any thread may `push` or `close`. The store is
/// opened once per link, for the daemon, and kept for its later syncs.
final class LiveLink: Sendable {
  /// The longest a sync on the link waits for the peer's next frame: a peer that vanished
  /// in the middle of a push is noticed as soon as a silent one is (not after the
  /// connection's idle limit of 120 s).
  static let syncQuietSeconds = LiveKeepalive.expectSeconds

  let peer: TrustedPeer
  /// Whether this side pings, and when.
  let keepalive: LiveKeepalive
  private let signal = DispatchSemaphore(value: 0)
  /// `owed`: a sync is due (true at first: the link's first sync); `closing`: end the link;
  /// `synced`: a sync on it succeeded; `probe`: a keepalive is due now (`check`).
  private let state: Mutex<(owed: Bool, closing: Bool, synced: Bool, probe: Bool)>

  /// When the peer was last heard from, and the clock the link waits on.
  let activity: PeerActivity

  /// A link from `local` to `peer`. `syncFirst` false: no sync until `push` (for tests of
  /// the keepalive alone).
  init(peer: TrustedPeer, local: DeviceID, activity: PeerActivity, syncFirst: Bool = true) {
    self.peer = peer
    self.activity = activity
    keepalive = LiveKeepalive(local: local, peer: peer.deviceID)
    state = Mutex((owed: syncFirst, closing: false, synced: false, probe: false))
  }

  /// A revision was stored here: the link syncs once more (calls while one runs make one).
  func push() {
    state.withLock { $0.owed = true }
    signal.signal()
  }

  /// The link may have died without a word (this machine's address changed; the peer
  /// dialled us afresh, so its end of the pair was replaced): it pings now, whichever side
  /// of the pair pings when idle, and ends within `pongSeconds` if nothing answers.
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
      // A peer removed from the trust store gets nothing more on this link, whether or not
      // the daemon has closed it yet: its syncs apply nothing, its pongs count for nothing.
      guard runner.stillTrusted.trusts(peer.deviceID) else {
        try? channel.send(PeerSession.goodbye(PeerTrustCheck.goodbyeReason))
        channel.close()
        return .failed(PeerSync.memoPeerError(SyncSession.removedDuringSync(peer.displayName)))
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
          switch keepalive.step(
            silence: activity.silence(of: peer.deviceID), peerLinkOpen: activity.isServing(peer.deviceID))
          {
          case .wait(let seconds):
            _ = activity.clock.wait(for: signal, seconds: seconds)
            continue
          case .silent:
            throw MemoPeerError(
              .connection,
              "nothing came from the peer for \(Int(LiveKeepalive.expectSeconds)) s (its keepalive is overdue)")
          case .ping: break
          }
        }
        try channel.send(pings.next())
        guard pings.answers(try Self.answer(on: channel)) else {
          throw MemoPeerError(.connection, "the peer did not answer the keepalive")
        }
        try runner.stillTrusted.require(peer.deviceID)
        activity.record(peer.deviceID)
      } catch {
        channel.close()
        return .failed(PeerSync.memoPeerError(error))
      }
    }
  }

  /// The peer's next frame within `pongSeconds`; nil when none came in time.
  private static func answer(on channel: any FrameChannel) throws(TransportError) -> Frame? {
    do {
      return try channel.receive(before: .after(seconds: LiveKeepalive.pongSeconds))
    } catch let error where error.kind == .idleTimeout {
      return nil
    }
  }
}

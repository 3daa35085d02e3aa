import MemoCore
import MemoNode
import MemoStore
import Synchronization

/// The answering side of a node, for syncs in tests: a store connection of its own, opened
/// on the answering thread at the first sync and kept (as the daemon keeps one for each
/// connection), behind a mutex so each sync's thread may use it in turn.
public final class SyncAnswerSide: Sendable {
  public let paths: NodePaths
  public let device: DeviceID
  private let store = Mutex<MemoStore?>(nil)

  public init(paths: NodePaths, device: DeviceID) {
    self.paths = paths
    self.device = device
  }

  /// Answers one sync on `channel` with the production session code.
  public func answer(_ channel: any FrameChannel, batch: SyncSession.BatchLimits) throws {
    let hello = try channel.receiveRequired("sync-hello")
    let paths = self.paths
    try store.withLock { opened in
      try SyncSession.answer(
        hello, over: channel, peer: channel.peer?.compact ?? "?",
        store: {
          if let store = opened { return store }
          let fresh = try MemoStore.open(paths: paths, use: .background)
          opened = fresh
          return fresh
        }, batch: batch, clock: { 5 }, logger: .disabled)
    }
  }
}

/// How one sync in a test ended, on each side.
public struct SyncRun {
  public var asker: Result<SyncSession.Report, any Error>
  public var answerer: Result<Void, any Error>

  /// The asker's report, or the asker's error.
  public func report() throws -> SyncSession.Report { try asker.get() }
}

/// One sync between two stores through the production `SyncSession` over an in-memory
/// channel (no network): `asker` asks on this thread, `answerer` answers on a thread of its
/// own, as a daemon would. Each records the other under its device ID. `faults` cuts or
/// corrupts the link; `batch` makes batches small, so a cut falls between them.
@discardableResult
public func runSync(
  _ asker: MemoStore, as askerID: DeviceID, with answerer: SyncAnswerSide,
  deleteGuard: MassDeleteGuard? = nil, batch: Int = 256, faults: LinkFaults = LinkFaults()
) -> SyncRun {
  let limits = SyncSession.BatchLimits(revisions: batch)
  let (mine, theirs) = InMemorySession.run(
    firstID: askerID, secondID: answerer.device, faults: faults,
    first: { channel in
      try SyncSession.ask(
        channel, peer: answerer.device.compact, peerName: "peer", store: asker, deleteGuard: deleteGuard,
        batch: limits, clock: { 5 })
    },
    second: { channel in try answerer.answer(channel, batch: limits) })
  return SyncRun(asker: mine, answerer: theirs)
}

/// Cuts the link after the answerer's `batches`th `sync-batch` (the asker commits exactly
/// those), or, with `fromAsker`, after the asker's (the answerer commits exactly those).
/// Either way the state each side keeps is the same on every run.
public func cutAfter(batches: Int, fromAsker: Bool = false) -> LinkFaults {
  let cut = DirectionFaults(cutAfterFrames: batches, cutCounting: .syncBatch)
  return fromAsker ? LinkFaults(fromFirst: cut) : LinkFaults(fromSecond: cut)
}

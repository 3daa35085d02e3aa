import MemoCore
import MemoNode
import MemoProtocol
import MemoStore
import MemoSystem
import MemoVault
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
    guard let peer = channel.peer else { throw TransportError(.closed, "a channel without a peer") }
    let paths = self.paths
    try store.withLock { opened in
      try SyncSession.answer(
        hello, over: channel, peer: peer,
        store: {
          if let store = opened { return store }
          let fresh = try MemoStore.open(paths: paths, use: .background)
          opened = fresh
          return fresh
        }, keys: DeviceKeys(paths: paths), batch: batch, stillTrusted: .unchecked, clock: { 5 }, logger: .disabled)
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
/// corrupts the link; `batch` makes batches small, so a cut falls between them. `keys`: the
/// asker's (nil: its node's own, as `MemoStore.open(paths:)` opens it).
@discardableResult
public func runSync(
  _ asker: MemoStore, as askerID: DeviceID, with answerer: SyncAnswerSide, keys: DeviceKeys? = nil,
  deleteGuard: MassDeleteGuard? = nil, batch: Int = 256, faults: LinkFaults = LinkFaults()
) -> SyncRun {
  let keys = keys ?? DeviceKeys(paths: asker.paths)
  let limits = SyncSession.BatchLimits(revisions: batch)
  let (mine, theirs) = InMemorySession.run(
    firstID: askerID, secondID: answerer.device, faults: faults,
    first: { channel in
      try SyncSession.ask(
        channel, peer: answerer.device, peerName: "peer", store: asker, keys: keys, deleteGuard: deleteGuard,
        batch: limits, stillTrusted: .unchecked, clock: { 5 })
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

/// One device in a test of shared notebooks: its store and the ID its peers know it by.
public typealias TestDevice = (store: MemoStore, id: DeviceID)

/// Shares `notebook` of the first device with every other, each in the role given (member
/// by default), the way it happens between devices: the first signs a share of each, each
/// syncs with it once (the first learns its key from its hello and seals the notebook's keys
/// to it), and a person on each accepts the invitation. Members make it their default
/// notebook, so tests of sync start from devices that share one. Device IDs must be the
/// stores' own (`deviceID()`): the log names devices by the keys that sign.
public func shareNotebook(
  _ notebook: NotebookID, among devices: [TestDevice], roles: [NotebookRole]? = nil, now: Timestamp = 1
) throws {
  guard let owner = devices.first else { return }
  let roles = roles ?? Array(repeating: .member, count: devices.count)
  // Devices that hold it already are left as they are.
  let joining = try devices.enumerated().dropFirst().filter { _, device in
    try !device.store.notebooks().contains { $0.id == notebook }
  }
  for (index, device) in joining {
    try owner.store.share(notebook, with: device.id, as: roles[index], now: now)
  }
  for (index, device) in joining {
    _ = try runSync(device.store, as: device.id, with: SyncAnswerSide(paths: owner.store.paths, device: owner.id))
      .report()
    _ = try device.store.acceptInvitation(notebook.rawValue, now: now)
    if roles[index] == .member { try device.store.setDefaultNotebook(notebook) }
  }
}

/// A sync between two nodes' stores in one test, as `memo-peer sync` would run it: `sink`
/// asks `source` over an in-memory channel (the production session on both sides), after
/// sharing the source's default notebook with the sink when they do not share it yet.
public func pullForTest(from source: MemoStore, into sink: MemoStore) throws {
  let sourceID = try source.deviceID()
  let sinkID = try sink.deviceID()
  let notebook = try source.defaultNotebook().id
  if try !sink.notebooks().contains(where: { $0.id == notebook }) {
    try shareNotebook(notebook, among: [(source, sourceID), (sink, sinkID)])
  }
  _ = try runSync(sink, as: sinkID, with: SyncAnswerSide(paths: source.paths, device: sourceID)).report()
}

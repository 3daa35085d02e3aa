import MemoCore

/// History from a relay (docs/PROTOCOL.md, "History from a relay"): a member that was away
/// while a memo was edited more than once asks a relay of the memo's notebook for the
/// sealed revisions the relay forwarded and then replaced. The relay answers only a device
/// it shares that notebook with, with records exactly as it kept them (it cannot
/// read or alter them); the member checks each as a sync does — binding, signature,
/// revocation, the notebook key — and keeps those its current revision supersedes as
/// history.
///
///     client → history-ask      {"version": 1, "notebook": id, "memo": id}
///     server → history-records  sync-batch body (version 3) · position = records still to come
///              … until a frame whose position is 0
///
/// Pure: the drivers carry the frames and do the store work.
public enum HistoryFetch {
  public static let version = 1
  /// Records in one `history-records` frame: 8 sealed records at their largest (80 KiB)
  /// stay well inside a frame's 1 MiB.
  public static let recordsPerFrame = 8
  /// Records one answer may carry in all (the newest): a relay keeps 100 per memo by
  /// default; this bounds what an ask costs either side (at most 20 MiB of sealed records).
  public static let maximumRecords = 256
  /// The `goodbye` reason for an ask of a version this node does not speak.
  public static let unsupportedVersionReason = "unsupported-history-version"

  public struct Ask: Codable, Sendable, Equatable {
    public var version: Int
    public var notebook: String
    public var memo: String

    public init(notebook: NotebookID, memo: MemoID) {
      version = HistoryFetch.version
      self.notebook = notebook.rawValue
      self.memo = memo.rawValue
    }
  }

  /// The client's `history-ask`.
  public static func ask(notebook: NotebookID, memo: MemoID) -> Frame {
    Frame(.historyAsk, payload: PeerMessage.encode(Ask(notebook: notebook, memo: memo)))
  }

  /// What the server does with a `history-ask` payload.
  public enum Request: Sendable, Equatable {
    case answer(notebook: NotebookID, memo: MemoID)
    /// An ask of another version: refused with `unsupportedVersionReason`, the session ends.
    case unsupportedVersion(Int)
    /// Not an ask (not JSON of its shape, ids not of their form): the session ends.
    case malformed
  }

  public static func request(_ payload: [UInt8]) -> Request {
    guard let ask = PeerMessage.decode(Ask.self, from: payload) else { return .malformed }
    guard ask.version == version else { return .unsupportedVersion(ask.version) }
    guard let notebook = NotebookID(ask.notebook), let memo = MemoID(canonical: ask.memo) else { return .malformed }
    return .answer(notebook: notebook, memo: memo)
  }

  /// The server's answer: `records` (at most `maximumRecords`: the oldest beyond are left
  /// out) in frames of `recordsPerFrame`, each with the bindings of its records' replicas;
  /// one empty frame when there are none (or the notebook is not shared with the asker: a
  /// relay says no more than that to a device outside it).
  public static func answer(_ records: [SyncRecord], bindings: [ReplicaBinding]) -> [Frame] {
    let sent = Array(records.suffix(maximumRecords))
    let byReplica = Dictionary(bindings.map { ($0.replica, $0) }, uniquingKeysWith: { first, _ in first })
    var frames: [Frame] = []
    var start = 0
    repeat {
      let chunk = Array(sent[start..<min(start + recordsPerFrame, sent.count)])
      start += chunk.count
      var replicas = Set<ReplicaID>()
      let chunkBindings = chunk.compactMap { record in
        replicas.insert(record.dot.origin).inserted ? byReplica[record.dot.origin] : nil
      }
      let batch = SyncRecordBatch.Batch(
        position: UInt64(sent.count - start), bindings: chunkBindings, records: chunk)
      frames.append(Frame(.historyRecords, payload: SyncRecordBatch.encode(batch)))
    } while start < sent.count
    return frames
  }
}

/// The client's side of one history fetch: takes the server's frames one at a time and
/// checks that they are the answer asked for — `history-records` only, each decoding as a
/// sync-batch, of the asked memo and notebook, the count of records to come going down by
/// exactly what each frame carried, no more than `HistoryFetch.maximumRecords` (256) in all.
/// A peer that breaks any of this is refused whole: nothing it sent is kept.
public struct HistoryExchange: Sendable {
  public enum Step: Sendable, Equatable {
    /// More frames are to come.
    case more
    /// The answer is complete.
    case done(records: [SyncRecord], bindings: [ReplicaBinding])
    /// The peer does not serve history (it closed, or said goodbye: an older version) or
    /// broke the exchange; the text is for the person (no content of the peer's).
    case failed(String)
  }

  let notebook: NotebookID
  let memo: MemoID
  private var remaining: UInt64?
  private var records: [SyncRecord] = []
  private var bindings: [ReplicaBinding] = []
  public private(set) var isFinished = false

  public init(notebook: NotebookID, memo: MemoID) {
    self.notebook = notebook
    self.memo = memo
  }

  /// The frame to send.
  public var ask: Frame { HistoryFetch.ask(notebook: notebook, memo: memo) }

  /// What `frame` (nil: the connection ended) means for the fetch.
  public mutating func receive(_ frame: Frame?) -> Step {
    guard !isFinished else { return .failed("frames after the answer was complete") }
    let step = take(frame)
    if step != .more { isFinished = true }
    return step
  }

  private mutating func take(_ frame: Frame?) -> Step {
    guard let frame else { return .failed("it closed the connection without an answer (an older version?)") }
    switch frame.kind {
    case .historyRecords: break
    case .goodbye:
      let reason = PeerMessage.decode(PeerMessage.Goodbye.self, from: frame.payload)?.reason
      return .failed(
        reason == "unexpected-frame"
          ? "it does not serve history (an older version)" : "it ended the session instead of answering")
    default:
      return .failed("it sent a \(frame.kind) frame where history belongs")
    }
    let batch: SyncRecordBatch.Batch
    do throws(SyncViolation) {
      batch = try SyncRecordBatch.decode(frame.payload)
    } catch {
      return .failed("it sent history that is not well formed (\(error.detail))")
    }
    guard batch.records.count <= HistoryFetch.recordsPerFrame else {
      return .failed("it sent more than \(HistoryFetch.recordsPerFrame) records in one frame")
    }
    let count = UInt64(batch.records.count)
    if let remaining {
      // Each frame after the first carries what the last one said was still to come.
      guard count > 0, remaining >= count, batch.position == remaining - count else {
        return .failed("its count of records to come does not add up")
      }
    } else {
      let (total, overflow) = batch.position.addingReportingOverflow(count)
      guard !overflow, total <= UInt64(HistoryFetch.maximumRecords) else {
        return .failed("it announced more than \(HistoryFetch.maximumRecords) records")
      }
      guard count > 0 || batch.position == 0 else { return .failed("its count of records to come does not add up") }
    }
    guard batch.records.allSatisfy({ $0.memo == memo && $0.notebook == notebook }) else {
      return .failed("it sent records of another memo or notebook than the one asked for")
    }
    remaining = batch.position
    records += batch.records
    bindings += batch.bindings
    return batch.position == 0 ? .done(records: records, bindings: bindings) : .more
  }
}

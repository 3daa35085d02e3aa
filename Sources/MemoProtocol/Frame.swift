import MemoCore

/// The frames of the memo-peer protocol, version 1 (docs/PROTOCOL.md), inside TLS.
///
/// Header (6 bytes): version u8, type u8, payload length u32 big-endian; then the payload.
/// A length above the receiver's maximum is refused from the header alone, before any
/// payload is read or buffered, so a peer cannot make us allocate.
public struct Frame: Equatable, Sendable {
  public static let version: UInt8 = 1
  public static let headerSize = 6
  /// Default maximum payload: 1 MiB (a memo is at most 64 KiB of text; batches stay small).
  public static let defaultMaximumPayload = ConnectionLimits.defaultMaximumPayload

  public enum Kind: UInt8, Sendable, CaseIterable {
    /// First frame each side sends on a trusted connection: protocol and discovery key.
    case hello = 1
    case ping = 2
    case pong = 3
    /// Pairing: "my user confirmed the code", with the name to store (no key: `pairKey`).
    case pairConfirm = 4
    /// Pairing: "my user refused, or the codes differ"; nothing is stored.
    case pairRefuse = 5
    /// A reason for closing, sent before the close.
    case goodbye = 6
    /// Pairing (host): the commitment to the host's nonce.
    case pairCommit = 7
    /// Pairing (guest): the guest's nonce, sent after the commitment arrived.
    case pairNonce = 8
    /// Pairing (host): the nonce it committed to.
    case pairReveal = 9
    /// Pairing: the discovery key, sent only once both people confirmed.
    case pairKey = 10
    /// Delivery: one outbox entry (a memo) for the receiver's inbox.
    case deliver = 16
    /// Delivery: the receiver stored the entry (or had stored it before); the sender marks it delivered.
    case receipt = 17
    /// Delivery: the receiver will not store the entry, with a stable reason code.
    case refuse = 18
    /// Delivery version 2: up to 256 outbox entries in one frame (`DeliveryMessage.Batch`).
    case deliverBatch = 19
    /// Delivery version 2: the fate of every entry of one `deliver-batch`, in its order.
    case batchReceipt = 20
    /// Sync: what the sender knows and where it stands in the other's change feed.
    case syncHello = 32
    /// Sync: a bounded batch of sealed records the receiver lacks (binary, `SyncRecordBatch`).
    case syncBatch = 33
    /// Sync: the receiver committed the sender's feed up to a position (flow control).
    case syncAck = 34
    /// Sync: the sender has sent everything; carries its knowledge.
    case syncDone = 35
    /// Sync: either side ends the sync, with a reason code (`SyncRefuseReason`): the
    /// answerer will not sync now (locked, storage), either side speaks another version,
    /// or either side refuses data the other sent that breaks a rule (malformed, out of
    /// range, a forbidden revision, too many replicas, copies or held deletes, a frame out
    /// of order); nothing of the message at fault is committed.
    case syncRefuse = 36
    /// Sync version 3: the membership-log ops the peer lacks, per notebook (`SyncOps`,
    /// binary), after the hellos.
    case syncOps = 37
    /// History: a member asks a relay for the sealed history it kept of one memo
    /// (`HistoryFetch.Ask`, JSON).
    case historyAsk = 40
    /// History: up to 8 of those records (a sync-batch body whose position counts the
    /// records still to come; `HistoryFetch`).
    case historyRecords = 41
  }

  public let kind: Kind
  public let payload: [UInt8]

  public init(_ kind: Kind, payload: [UInt8] = []) {
    self.kind = kind
    self.payload = payload
  }

  /// The bytes on the wire.
  public func encoded() -> [UInt8] {
    let length = UInt32(payload.count)
    var bytes: [UInt8] = [Self.version, kind.rawValue]
    bytes.reserveCapacity(Self.headerSize + payload.count)
    withUnsafeBytes(of: length.bigEndian) { bytes.append(contentsOf: $0) }
    bytes.append(contentsOf: payload)
    return bytes
  }
}

/// Why a frame was refused. Each closes the connection; none is ever retried as is.
public enum FrameError: Error, Equatable, Sendable, CustomStringConvertible {
  case unsupportedVersion(UInt8)
  case unknownType(UInt8)
  case oversized(length: Int, maximum: Int)
  /// The stream ended inside a frame.
  case truncated(have: Int, need: Int)

  public var description: String {
    switch self {
    case .unsupportedVersion(let version): "frame version \(version) is not supported (this node speaks 1)"
    case .unknownType(let type): "unknown frame type \(type)"
    case .oversized(let length, let maximum): "frame of \(length) bytes exceeds the maximum of \(maximum)"
    case .truncated(let have, let need): "connection ended inside a frame (\(have) of \(need) bytes)"
    }
  }
}

/// A parsed header: what the reader must read next.
public struct FrameHeader: Equatable, Sendable {
  public let kind: Frame.Kind
  public let length: Int

  /// Checks a 6-byte header against the protocol and the receiver's maximum.
  public static func parse(_ bytes: some Collection<UInt8>, maximumPayload: Int) throws(FrameError) -> FrameHeader {
    let header = Array(bytes.prefix(Frame.headerSize))
    guard header.count == Frame.headerSize else { throw .truncated(have: header.count, need: Frame.headerSize) }
    guard header[0] == Frame.version else { throw .unsupportedVersion(header[0]) }
    guard let kind = Frame.Kind(rawValue: header[1]) else { throw .unknownType(header[1]) }
    let length = header[2...5].reduce(0) { ($0 << 8) | Int($1) }
    guard length <= maximumPayload else { throw .oversized(length: length, maximum: maximumPayload) }
    return FrameHeader(kind: kind, length: length)
  }
}

import MemoCore

/// `sync-ops` (frame 37, sync version 3): the membership-log ops one side sends the other
/// after the hellos, per notebook, as bytes (docs/PROTOCOL.md, "Ops a peer lacks"). Each
/// notebook's ops come parents first, so the receiver admits them in order; what does not
/// fit comes at the next sync (the peer then names its new heads).
///
/// ```
/// sync-ops := u8 version (1) · u32 n · n × (str notebook · u32 m · m × (u32 length · op))
/// ```
///
/// Only the frame's shape is checked here (counts, lengths, ids, no notebook twice); each
/// op is decoded and checked by the log that admits it, which names the field at fault.
public enum SyncOps {
  public static let version: UInt8 = 1
  /// Notebooks one frame may name: as many as a hello may list.
  public static let maximumNotebooks = 256
  /// Ops' bytes one frame carries, each counted with its 4-byte length: the frame stays
  /// below the 1 MiB frame maximum with room for the notebook ids.
  public static let maximumBytes = MembershipLimits.frameBytes - 64 * 1024

  /// One notebook's ops, each as it travels.
  public struct Notebook: Equatable, Sendable {
    public var id: NotebookID
    public var ops: [[UInt8]]

    public init(id: NotebookID, ops: [[UInt8]]) {
      self.id = id
      self.ops = ops
    }
  }

  public static func encode(_ notebooks: [Notebook]) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u32(UInt32(notebooks.count))
    for notebook in notebooks {
      writer.string(notebook.id.rawValue)
      writer.u32(UInt32(notebook.ops.count))
      for op in notebook.ops { writer.data(op) }
    }
    return writer.bytes
  }

  /// Decodes a `sync-ops` payload: hostile input, so every count is checked against its
  /// limit before anything it announces is read, and any failure refuses the whole frame
  /// (`malformed`, naming what was wrong).
  public static func decode(_ payload: [UInt8]) throws(SyncViolation) -> [Notebook] {
    var reader = ByteReader(payload)
    func malformed(_ what: String) -> SyncViolation { SyncViolation(.malformed, "a sync-ops frame \(what)") }
    guard let version = reader.u8() else { throw malformed("that is empty") }
    guard version == Self.version else { throw malformed("of version \(version)") }
    guard let count = reader.u32() else { throw malformed("cut short in its notebook count") }
    guard count <= maximumNotebooks else { throw malformed("naming \(count) notebooks") }
    var notebooks: [Notebook] = []
    var seen: Set<NotebookID> = []
    var bytes = 0
    for _ in 0..<count {
      guard let text = reader.string(), let id = NotebookID(text), id.rawValue == text else {
        throw malformed("with a notebook id that is not one")
      }
      guard seen.insert(id).inserted else { throw malformed("naming one notebook twice") }
      guard let opCount = reader.u32() else { throw malformed("cut short in an op count") }
      guard opCount <= MembershipLimits.opsPerFrame else { throw malformed("with \(opCount) ops of one notebook") }
      var ops: [[UInt8]] = []
      for _ in 0..<opCount {
        guard let op = reader.data(maximum: MembershipLimits.opBytes) else {
          throw malformed("with an op cut short or above \(MembershipLimits.opBytes) bytes")
        }
        bytes += op.count + 4
        guard bytes <= maximumBytes else { throw malformed("above \(maximumBytes) bytes of ops") }
        ops.append(op)
      }
      notebooks.append(Notebook(id: id, ops: ops))
    }
    guard reader.isAtEnd else { throw malformed("with bytes after its last op") }
    return notebooks
  }
}

import MemoCore

/// How sync version 3 frames what a device signs (docs/design/sync-v3.md, section 1): an
/// ASCII label naming the kind of statement, a zero byte, then the statement's bytes. A
/// signature made for one kind therefore never verifies as another.
public enum Signing {
  public enum Label: String, Sendable, CaseIterable {
    /// A replica bound to the device that makes its revisions.
    case replica = "memo-peer/3 replica"
    /// An operation of a notebook's membership log.
    case op = "memo-peer/3 op"
    /// A memo revision (a record).
    case revision = "memo-peer/3 revision"
    /// A device's revocation of another.
    case revocation = "memo-peer/3 revocation"
    /// A member's purge of a memo from a notebook.
    case purge = "memo-peer/3 purge"
  }

  /// `label ‖ 0x00 ‖ body`: the bytes an Ed25519 signature covers.
  public static func message(_ label: Label, _ body: [UInt8]) -> [UInt8] { message(label, body, []) }

  /// `label ‖ 0x00 ‖ body ‖ more`, in one buffer: a record's message is its additional
  /// data and its sealed bytes (a kilobyte or more), copied once.
  public static func message(_ label: Label, _ body: [UInt8], _ more: [UInt8]) -> [UInt8] {
    var bytes = Array(label.rawValue.utf8)
    bytes.reserveCapacity(bytes.count + 1 + body.count + more.count)
    bytes.append(0)
    bytes.append(contentsOf: body)
    bytes.append(contentsOf: more)
    return bytes
  }
}

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
  public static func message(_ label: Label, _ body: [UInt8]) -> [UInt8] {
    var bytes = Array(label.rawValue.utf8)
    bytes.reserveCapacity(bytes.count + 1 + body.count)
    bytes.append(0)
    bytes.append(contentsOf: body)
    return bytes
  }
}

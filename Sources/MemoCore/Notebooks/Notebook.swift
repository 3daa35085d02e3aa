/// A notebook's identity: 16 random bytes in lowercase hex (32 characters), the same on
/// every device that holds the notebook. Names are local (each device names a notebook for
/// its own person), so the id is what travels and what a relay knows.
public struct NotebookID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let rawValue: String

  /// Accepts exactly 32 lowercase hex digits (the form this program writes and sends).
  public init?(_ text: String) {
    guard SyncLimits.isLowercaseHex(text, count: 32) else { return nil }
    rawValue = text
  }

  /// `personal` of every store migrated from schema 4: the same id on every device, so
  /// devices that synced everything before the upgrade go on syncing it in one notebook
  /// (docs/FORMATS.md, schema 5). A device never joins it from an offer alone (see
  /// `NotebookOffers`): two people's migrated `personal` notebooks share this id by
  /// construction, not because anyone shared them.
  public static let migrated = NotebookID(unchecked: "6d656d6f2d706565722f706572736f6e")

  private init(unchecked: String) { rawValue = unchecked }

  public var description: String { rawValue }
  /// What people see of an id: its first 8 digits and an ellipsis (`3f2a9c1d…`).
  public var short: String { String(rawValue.prefix(8)) + "…" }

  public static func < (lhs: NotebookID, rhs: NotebookID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a device is to a notebook.
public enum NotebookRole: String, Codable, Sendable, CaseIterable {
  /// Holds the notebook's key: reads and writes its memos.
  case member
  /// Holds sealed revisions and their version vectors only, never the key: stores and
  /// forwards what it cannot read (docs/PRIVACY.md, "The blind relay").
  case relay
}

/// One notebook as this device holds it.
public struct Notebook: Sendable, Equatable {
  public var id: NotebookID
  /// The local name; nil for a notebook this device relays (members never send a relay
  /// the name).
  public var name: String?
  /// This device's role: `member` when it holds the key.
  public var role: NotebookRole
  public var created: Timestamp
  /// The notebook `new` uses without `--notebook`.
  public var isDefault: Bool

  public init(id: NotebookID, name: String?, role: NotebookRole, created: Timestamp, isDefault: Bool = false) {
    self.id = id
    self.name = name
    self.role = role
    self.created = created
    self.isDefault = isDefault
  }

  /// How a person reads the notebook's name: its name (escaped: it may have come from
  /// another device), or `notebook 3f2a9c1d…` for a relayed one.
  public var displayName: String { name.map { $0.terminalSafe } ?? "notebook \(id.short)" }
}

/// One device a notebook is shared with, from this device's side.
public struct NotebookMember: Sendable, Equatable {
  /// What this device gives the other: the key and readable revisions (`member`), sealed
  /// revisions only (`relay`); `removed` after `notebook unshare` (its offers of the
  /// notebook are declined from then on).
  public enum Role: String, Sendable, CaseIterable {
    case member, relay, removed
  }

  public var notebook: NotebookID
  public var device: DeviceID
  public var role: Role
  public var added: Timestamp

  public init(notebook: NotebookID, device: DeviceID, role: Role, added: Timestamp) {
    self.notebook = notebook
    self.device = device
    self.role = role
    self.added = added
  }
}

/// The rules for notebook names: what a person types, and what a member may be offered.
public enum NotebookNames {
  public static let maximumLength = 64

  /// 1–64 printable characters (no control, bidirectional or other format character), no
  /// space at either end, not starting with `-` (it would read as an option).
  public static func isValid(_ name: String) -> Bool {
    DeviceName.isPrintable(name) && name.count <= maximumLength && !name.hasPrefix("-")
  }

  public static func validate(_ name: String) throws {
    guard isValid(name) else {
      throw MemoPeerError(
        .invalidInput,
        "a notebook name must be 1 to \(maximumLength) printable characters, without leading or trailing spaces and not starting with -",
        remedy: .newNotebook(example: "family"))
    }
  }

  /// `name`, or `name (2)`, `name (3)` … when `taken` says a notebook here already has it
  /// (case does not count): a notebook a member shares under a name this device already
  /// uses keeps both.
  public static func available(_ name: String, taken: (String) -> Bool) -> String {
    var candidate = name
    var number = 2
    while taken(candidate) && number < 1000 {
      candidate = "\(name.prefix(maximumLength - 6)) (\(number))"
      number += 1
    }
    return candidate
  }
}

import MemoCore

/// The parts of the manual that are not commands: exit statuses, environment, files,
/// examples. With the command table they are the one source of `--help`, the man page and
/// the completions, so the three cannot drift apart.
enum Manual {
  /// One exit status: its number, the error codes that lead to it, and what it means.
  struct ExitStatus: Sendable {
    let status: Int32
    let meaning: String
    /// The `MemoPeerError` codes with this status, in declaration order.
    var codes: [String] {
      MemoPeerError.Code.allCases.filter { MemoPeerError($0, "").exitStatus == status }.map(\.rawValue)
    }
  }

  /// Every status the program exits with. A test checks that every error code's status has a row.
  static let exitStatuses: [ExitStatus] = [
    ExitStatus(status: 0, meaning: "success"),
    ExitStatus(status: 1, meaning: "internal error (a bug; nothing was changed), or `doctor` found a problem"),
    ExitStatus(
      status: 2,
      meaning: "wrong command line, a confirmation that cannot be asked, or a MEMO_PEER_HOME that does not exist"),
    ExitStatus(status: 3, meaning: "no such memo, or a prefix matching several (or shorter than 4 characters)"),
    ExitStatus(status: 4, meaning: "input refused; the message says which limit"),
    ExitStatus(status: 5, meaning: "keys and access: permissions, a missing or wrong key, a passphrase"),
    ExitStatus(status: 6, meaning: "damaged, foreign or newer data; left untouched"),
    ExitStatus(
      status: 7,
      meaning: "the write was rolled back; the previous state is intact (or the output could not be written to stdout)"),
    ExitStatus(status: 8, meaning: "the cryptographic library failed"),
    ExitStatus(status: 9, meaning: "no editor, or it failed; nothing was changed"),
    ExitStatus(status: 10, meaning: "the user said no"),
    ExitStatus(
      status: 11,
      meaning: "a network use needs a consent nobody has given, and there is no terminal to ask on; nothing was sent"),
    ExitStatus(status: 12, meaning: "local-network access was denied or revoked (PolicyDenied, -65570)"),
    ExitStatus(status: 13, meaning: "the DNS-SD service type is not declared (NoAuth, -65555)"),
    ExitStatus(status: 14, meaning: "avahi-daemon cannot be reached; `memo-peer doctor` says why"),
    ExitStatus(status: 15, meaning: "another DNS-SD failure"),
    ExitStatus(
      status: 16, meaning: "a device presented a key other than the one pinned, or a peer no longer trusts this device"),
    ExitStatus(status: 17, meaning: "a peer could not be reached in time, or the connection broke"),
    ExitStatus(status: 18, meaning: "the node is locked: nothing was read or changed until `memo-peer unlock`"),
    ExitStatus(status: 19, meaning: "the memo has conflict copies from a sync: resolve them with `conflicts resolve`"),
    ExitStatus(
      status: 20,
      meaning:
        "a sync held back deletes that would remove most memos: `sync --peer P --allow-deletes` or --keep-deleted"
    ),
    ExitStatus(
      status: 21,
      meaning:
        "a trusted device sent sync data that breaks the protocol (or refused this device's): nothing of it was stored"
    ),
    ExitStatus(
      status: 22,
      meaning: "the memo is sealed for the members of a notebook this device only relays: read it on a member"),
  ]

  /// A variable memo-peer reads, and what for.
  struct Variable: Sendable {
    let name: String
    let meaning: String
  }

  static let environment: [Variable] = [
    Variable(
      name: "MEMO_PEER_HOME",
      meaning: "put every file under this directory instead of the XDG directories; it must exist (`init` makes it)"),
    Variable(name: "XDG_DATA_HOME", meaning: "the data directory's parent (default ~/.local/share)"),
    Variable(name: "XDG_STATE_HOME", meaning: "the state and key directories' parent (default ~/.local/state)"),
    Variable(name: "XDG_CONFIG_HOME", meaning: "the configuration directory's parent (default ~/.config)"),
    Variable(
      name: "XDG_RUNTIME_DIR",
      meaning: "a memory file system for the editor's file and the web page's sign-in link (else /dev/shm)"),
    Variable(name: "VISUAL", meaning: "the editor for `new` and `edit` (before EDITOR)"),
    Variable(name: "EDITOR", meaning: "the editor when VISUAL is not set"),
    Variable(name: "TERM", meaning: "`show` uses the privacy screen on a terminal whose TERM is set and not dumb"),
    Variable(name: "DBUS_SYSTEM_BUS_ADDRESS", meaning: "the system bus where avahi-daemon answers"),
    Variable(name: "DBUS_SESSION_BUS_ADDRESS", meaning: "the session bus for desktop notifications (`serve`)"),
    Variable(name: "WAYLAND_DISPLAY", meaning: "when set, the clipboard is used through wl-copy and wl-paste"),
    Variable(name: "DISPLAY", meaning: "otherwise, when set, the clipboard is used through xclip"),
    Variable(name: "NOTIFY_SOCKET", meaning: "set by systemd for Type=notify units: `serve` reports its state there"),
    Variable(name: "WATCHDOG_USEC", meaning: "set by systemd with WatchdogSec=: `serve` pings the watchdog"),
    Variable(name: "JOURNAL_STREAM", meaning: "set by systemd: log lines then carry <N> priority prefixes"),
  ]

  /// A file memo-peer reads or writes, by its default place.
  struct File: Sendable {
    let path: String
    let meaning: String
  }

  static let files: [File] = [
    File(
      path: "~/.local/share/memo-peer/memos.sqlite", meaning: "the memos, sealed with AES-256-GCM under the device key"),
    File(
      path: "~/.local/state/memo-peer/keys/", meaning: "the device key and identity keys: device-only, never exported"),
    File(path: "~/.local/state/memo-peer/keys/trusted-peers.json", meaning: "the trust store: paired devices"),
    File(path: "~/.local/state/memo-peer/consent.jsonl", meaning: "the consent log"),
    File(path: "~/.local/state/memo-peer/serve.json", meaning: "what `serve` is doing, for `status`"),
    File(
      path: "~/.config/memo-peer/config.json", meaning: "configuration: service types, rotation, widget, notifications"),
    File(path: "/lib/systemd/system/memo-peer.service", meaning: "the system unit for trusted hosts"),
    File(path: "/usr/lib/systemd/user/memo-peer.service", meaning: "the user unit for laptops"),
  ]

  /// Command lines shown in EXAMPLES, each with what it does.
  static let examples: [(command: String, meaning: String)] = [
    ("echo \"Milk, eggs\" | memo-peer new --title Groceries --tag home", "create a memo from stdin"),
    ("memo-peer list --tag home", "list memos with a tag, newest first"),
    ("memo-peer show 3f2a --copy", "put a memo on the clipboard for 45 seconds"),
    ("memo-peer pair --accept --name desk", "open a pairing window on one machine…"),
    ("memo-peer pair desk", "…and pair with it from the other: both show a code to compare"),
    ("memo-peer sync", "bring every trusted device in sight in step"),
    ("memo-peer export --format markdown ~/memos-md", "write every memo as a Markdown file (plain text!)"),
    ("systemctl --user enable --now memo-peer", "run the daemon for this user"),
  ]

  /// SEE ALSO, as (page, section).
  static let seeAlso: [(page: String, section: String)] = [
    ("avahi-daemon", "8"), ("systemd.service", "5"), ("systemctl", "1"), ("journalctl", "1"), ("xclip", "1"),
  ]
}

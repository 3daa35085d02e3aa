import Foundation
import MemoCore
import MemoNode
import MemoStore

/// This device's identity and the devices it trusts.
enum TrustCommands {
  static let id = Command(
    name: "id", summary: "Show this device's ID (the fingerprint peers pin).",
    details: """
      The device ID is the SHA-256 of this device's Ed25519 public key, in base32, grouped
      by four. Give it to `memo-peer trust add` on another device to trust this one without
      pairing. The identity key is created on first use and never leaves this device. The ID
      is shown also while the node is locked; the certificate needs it unlocked.
      """,
    options: [
      OptionSpec("certificate", "print this device's self-signed TLS certificate (PEM) instead"),
      OptionSpec("json", "print the ID as JSON"),
    ],
    positionals: []
  ) { context in
    let paths = try context.paths()
    if context.arguments.has("certificate") {
      let identity = try NodeIdentity.load(paths: paths)
      context.console.write(Array(try identity.device.certificatePEM().utf8))
      return
    }
    // The ID is public: it is shown also while the node is locked.
    let deviceID = try NodeIdentity.deviceID(paths: paths)
    if context.wantsJSON {
      struct IDJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let deviceID: String
        enum CodingKeys: String, CodingKey {
          case schema
          case deviceID = "device_id"
        }
      }
      context.printJSON(IDJSON(deviceID: deviceID.description))
    } else {
      context.console.print(deviceID.description)
    }
  }

  static let trust = Command(
    name: "trust", summary: "List, add, rename or remove trusted devices.",
    details: """
      ACTION is list (default), add, rename or remove.
        trust add DEVICE-ID --name NAME   trust a device without pairing (do it on both)
        trust rename PEER NEW-NAME        PEER is a name or a device-ID prefix
        trust remove PEER                 its live connections close at once
        trust policy PEER ask|accept|refuse   what to do with memos PEER sends
                                          (ask, the default: into the inbox)
      Only trusted devices get past the TLS handshake; everyone else learns nothing. A
      newly trusted device gets no memo until a notebook is shared with it: `trust add
      --share NAME` (repeatable) or `memo-peer notebook share`.
      """,
    options: [
      OptionSpec("name", value: "NAME", "the name for `trust add`"),
      OptionSpec(
        "share", value: "NOTEBOOK", repeatable: true, "trust add: share this notebook with the device (repeatable)",
        completion: .dynamic(.notebooks)),
      OptionSpec(
        "as", value: "ROLE", "with --share: member (gets the key; default) or relay (sealed revisions only)",
        completion: .choices(NotebookRole.allCases.map(\.rawValue))),
      OptionSpec("json", "print the trusted devices as JSON"),
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, add, rename, remove or policy",
        completion: .choices(["list", "add", "rename", "remove", "policy"])),
      PositionalSpec(
        name: "PEER", optional: true, help: "a device ID (add), or a name or ID prefix", completion: .dynamic(.peers)),
      PositionalSpec(name: "NEW-NAME", optional: true, help: "the new name (rename), or the policy (policy)"),
    ]
  ) { context in
    let store = TrustStore(paths: try context.paths())
    let action = context.arguments.positional(0) ?? "list"
    func peerArgument() throws -> String {
      guard let peer = context.arguments.positional(1) else {
        throw ArgumentParser.usage("trust \(action) needs a device", suggestion: nil, command: "trust")
      }
      return peer
    }
    switch action {
    case "list":
      printTrustList(try store.load(), context: context)
    case "add":
      let text = try peerArgument()
      guard let id = DeviceID(text) else {
        throw MemoPeerError(
          .invalidInput, "that is not a device ID (52 base32 characters, as `memo-peer id` prints)",
          hint: "copy the whole ID from `memo-peer id` on the other device")
      }
      guard let name = context.arguments.value("name") else {
        throw ArgumentParser.usage("trust add needs --name NAME", suggestion: nil, command: "trust")
      }
      let peer = TrustedPeer(deviceID: id, name: name, discoveryKey: nil, source: .command, added: context.now)
      let shares = context.arguments.all("share")
      // Checked before anything is stored: a typo in a notebook's name trusts nobody.
      for notebook in shares { _ = try context.store().findNotebook(notebook) }
      _ = try NotebookCommands.roleArgument(context, command: "trust")
      try store.update { try $0.trust(peer) }
      context.console.print("trusted \(name) (\(id.short)…); do the same on that device for this one")
      try share(shares, with: peer, context, command: "trust")
    case "rename":
      let reference = try peerArgument()
      guard let name = context.arguments.positional(2) else {
        throw ArgumentParser.usage("trust rename needs a new name", suggestion: nil, command: "trust")
      }
      let renamed = try store.update { try $0.rename(reference, to: name) }
      context.console.print("renamed \(renamed.id?.short ?? "?")… to \(renamed.displayName)")
    case "remove":
      let removed = try store.update { try $0.remove(try peerArgument()) }
      context.console.print("removed \(removed.displayName) (\(removed.id?.short ?? "?")…); it can no longer connect")
    case "policy":
      let reference = try peerArgument()
      guard let text = context.arguments.positional(2), let policy = ReceivePolicy(rawValue: text) else {
        throw ArgumentParser.usage("trust policy needs ask, accept or refuse", suggestion: nil, command: "trust")
      }
      let peer = try store.update { try $0.setReceivePolicy(policy, for: reference) }
      context.console.print("memos from \(peer.displayName) now: \(policy.rawValue)")
    default:
      throw ArgumentParser.usage(
        "unknown trust action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: ["list", "add", "rename", "remove", "policy"]),
        command: "trust")
    }
  }

  /// Shares each named notebook with a newly trusted device (`trust add --share`, `pair`),
  /// as `--as` says, and says so; nothing when `names` is empty.
  static func share(_ names: [String], with peer: TrustedPeer, _ context: CommandContext, command: String) throws {
    let role = try NotebookCommands.roleArgument(context, command: command)
    for name in names {
      let notebook = try context.store().findNotebook(name)
      try context.store().share(notebook.id, with: peer.deviceID, as: role, now: context.now)
      context.console.print("shared \(notebook.displayName) with \(peer.displayName) as \(role.rawValue)")
    }
    if names.isEmpty {
      context.console.print(
        "no notebook is shared with \(peer.displayName) yet: it gets nothing until you run "
          + "`memo-peer notebook share NAME --with \(peer.displayName)`")
    }
  }

  static func printTrustList(_ list: TrustList, context: CommandContext) {
    if context.wantsJSON {
      struct PeerJSON: Encodable {
        let name: String
        let deviceID: String
        let source: String
        let added: String
        let recognizable: Bool
        let receive: String
        enum CodingKeys: String, CodingKey {
          case name, source, added, recognizable, receive
          case deviceID = "device_id"
        }
      }
      struct ListJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let peers: [PeerJSON]
      }
      context.printJSON(
        ListJSON(
          peers: list.peers.map {
            PeerJSON(
              name: $0.name, deviceID: $0.id?.description ?? $0.deviceID, source: $0.source.rawValue,
              added: OutputFormat.isoTime($0.added), recognizable: $0.discoveryKey != nil,
              receive: ($0.receive ?? .ask).rawValue)
          }))
      return
    }
    guard !list.peers.isEmpty else {
      context.console.print("no trusted devices yet (`memo-peer pair` or `memo-peer trust add`)")
      return
    }
    for peer in list.peers {
      let how = peer.source == .pairing ? "paired" : "added by ID"
      context.console.print(
        "\(peer.displayName)  \(peer.id?.description ?? peer.deviceID)  \(how) \(OutputFormat.localTime(peer.added))")
    }
  }
}

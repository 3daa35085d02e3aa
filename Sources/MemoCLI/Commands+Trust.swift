import MemoApp
import MemoCore
import MemoNode
import MemoStore

/// This device's identity and the devices it trusts.
enum TrustCommands {
  /// The options of `id`.
  enum IDOptions {
    static let certificate = Flag("certificate", "print this device's self-signed TLS certificate (PEM) instead")
    static let json = SharedOptions.json.withHelp("print the ID as JSON")
  }

  static let id = Command(
    name: "id", summary: "Show this device's ID (the fingerprint peers pin).",
    details: """
      The device ID is the SHA-256 of this device's Ed25519 public key, in base32, grouped
      by four. Give it to `memo-peer trust add` on another device to trust this one without
      pairing. The identity key is created on first use and never leaves this device. The ID
      is shown also while the node is locked; the certificate needs it unlocked.
      """,
    options: [IDOptions.certificate, IDOptions.json],
    positionals: []
  ) { context in
    let trust = try context.app().trust
    if context.arguments.has(IDOptions.certificate) {
      context.console.write(Array(try trust.certificatePEM().utf8))
      return
    }
    let deviceID = try trust.deviceID()
    if context.wantsJSON {
      context.printJSON(DeviceIDJSON(deviceID))
    } else {
      context.console.print(deviceID.description)
    }
  }

  /// The options of `trust`.
  enum TrustOptions {
    static let name = ValueOption("name", value: "NAME", "the name for `trust add`")
    static let share = SharedOptions.share.withHelp("trust add: share this notebook with the device (repeatable)")
    static let role = SharedOptions.role.withHelp(
      "with --share: member (gets the key; default) or relay (sealed revisions only)")
    static let address = RepeatedOption(
      "address", value: "ADDRESS",
      "trust add: HOST[:PORT], where to dial the device when DNS-SD does not show it (repeatable)")
    static let hereOnly = Flag(
      "here-only", "trust remove: stop trusting it on this device only (no revocation, nothing unshared)")
    static let json = SharedOptions.json.withHelp("print the trusted devices (or what remove did) as JSON")
  }

  static let trust = Command(
    name: "trust", summary: "List, add, rename, remove or revoke trusted devices.",
    details: """
      ACTION is list (default), add, rename, remove or revoke.
        trust add DEVICE-ID --name NAME   trust a device without pairing (do it on both)
        trust rename PEER NEW-NAME        PEER is a name or a device-ID prefix
        trust remove PEER                 revoke it: signed, passed on to every device
                                          (relays too); unshared everywhere, new keys
        trust revoke PEER                 the same, for a device you no longer have
        trust remove PEER --here-only     stop trusting it on this device only
        trust policy PEER ask|accept|refuse   what to do with memos PEER sends
                                          (ask, the default: into the inbox)
        trust address PEER [list]         where PEER is dialled when DNS-SD does not
        trust address PEER add|remove HOST[:PORT]   show it: a home server on another
                                          subnet or VLAN (also trust add --address)
      HOST is an IPv4 address, an IPv6 address ([fe80::1%eth0]:PORT for a link-local one)
      or a DNS name, which must resolve when given. Without a port, the port the device
      was last reached at. Devices that were reached are also remembered where they were
      reached, and dialled there when DNS-SD does not show them (a network that filters
      multicast); whoever answers must still prove the pinned key.
      Only trusted devices get past the TLS handshake; everyone else learns nothing. A
      newly trusted device gets no memo until a notebook is shared with it: `trust add
      --share NAME` (repeatable) or `memo-peer notebook share`.
      """,
    options: [
      TrustOptions.name, TrustOptions.share, TrustOptions.role, TrustOptions.address, TrustOptions.hereOnly,
      TrustOptions.json,
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, add, rename, remove, revoke or policy",
        completion: .choices(trustActions)),
      PositionalSpec(
        name: "PEER", optional: true, help: "a device ID (add), or a name or ID prefix", completion: .dynamic(.peers)),
      PositionalSpec(
        name: "NEW-NAME", optional: true,
        help: "the new name (rename), the policy (policy), or add|remove|list (address)"),
      PositionalSpec(name: "ADDRESS", optional: true, help: "HOST[:PORT] (address add|remove)"),
    ]
  ) { context in
    let trust = try context.app().trust
    let action = context.arguments.positional(0) ?? "list"
    func peerArgument() throws -> String {
      try required(1, of: context, else: "trust \(action) needs a device")
    }
    switch action {
    case "list":
      printTrustList(try trust.list(), revocations: (try? trust.revocations()) ?? [], context: context)
    case "add":
      let text = try peerArgument()
      guard let name = context.arguments[TrustOptions.name] else {
        throw ArgumentParser.usage("trust add needs --name NAME", suggestion: nil, command: "trust")
      }
      let role = try NotebookCommands.roleArgument(context, command: "trust")
      let shares = context.arguments[TrustOptions.share]
      let peer = try trust.add(text, name: name, sharing: shares, addresses: context.arguments[TrustOptions.address])
      context.console.print("trusted \(name) (\(peer.deviceID.short)…); do the same on that device for this one")
      try share(shares, with: peer, as: role, context)
    case "rename":
      let reference = try peerArgument()
      guard let name = context.arguments.positional(2) else {
        throw ArgumentParser.usage("trust rename needs a new name", suggestion: nil, command: "trust")
      }
      let renamed = try trust.rename(reference, to: name)
      context.console.print("renamed \(renamed.deviceID.short)… to \(renamed.displayName)")
    case "remove", "revoke":
      let hereOnly = context.arguments.has(TrustOptions.hereOnly)
      if hereOnly && action == "revoke" {
        throw ArgumentParser.usage(
          "--here-only is for trust remove; a revocation always spreads", suggestion: nil, command: "trust")
      }
      printRemoval(try trust.remove(try peerArgument(), hereOnly: hereOnly), context: context)
    case "policy":
      let reference = try peerArgument()
      guard let text = context.arguments.positional(2), let policy = ReceivePolicy(rawValue: text) else {
        throw ArgumentParser.usage("trust policy needs ask, accept or refuse", suggestion: nil, command: "trust")
      }
      let peer = try trust.setPolicy(policy, for: reference)
      context.console.print("memos from \(peer.displayName) now: \(policy.rawValue)")
    case "address":
      try address(try peerArgument(), context: context)
    default:
      throw ArgumentParser.usage(
        "unknown trust action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: trustActions),
        command: "trust")
    }
  }

  static let trustActions = ["list", "add", "rename", "remove", "revoke", "policy", "address"]

  /// The positional argument at `index`, or a usage error saying `missing`.
  static func required(_ index: Int, of context: CommandContext, else missing: String) throws -> String {
    guard let value = context.arguments.positional(index) else {
      throw ArgumentParser.usage(missing, suggestion: nil, command: "trust")
    }
    return value
  }

  /// `trust address PEER [list|add|remove] [HOST[:PORT]]`.
  static func address(_ reference: String, context: CommandContext) throws {
    let trust = try context.app().trust
    let verb = context.arguments.positional(2) ?? "list"
    func addressArgument() throws -> String {
      try required(3, of: context, else: "trust address \(verb) needs HOST[:PORT]")
    }
    let peer: TrustedPeer
    switch verb {
    case "list": peer = try trust.list().find(reference)
    case "add": peer = try trust.addAddress(try addressArgument(), for: reference)
    case "remove": peer = try trust.removeAddress(try addressArgument(), for: reference)
    default:
      throw ArgumentParser.usage(
        "trust address takes add, remove or list, not \(String(verb.prefix(20)).terminalSafe)",
        suggestion: ArgumentParser.closest(to: verb, among: ["add", "remove", "list"]), command: "trust")
    }
    if context.wantsJSON {
      context.printJSON(TrustAddressesJSON(peer))
      return
    }
    let given = (peer.addresses ?? []).map(\.description)
    context.console.print(
      "\(peer.displayName): given \(given.isEmpty ? "none" : given.joined(separator: ", "))")
    for place in peer.reached ?? [] {
      context.console.print("  reached at \(place.address) \(OutputFormat.localTime(place.at))")
    }
    if let said = peer.announced, !said.addresses.isEmpty {
      let addresses = said.addresses.map(\.description).joined(separator: ", ")
      context.console.print("  says it listens at \(addresses) \(OutputFormat.localTime(said.at))")
    }
  }

  static func printRemoval(_ removal: TrustUseCases.Removal, context: CommandContext) {
    if context.wantsJSON {
      context.printJSON(TrustRemovalJSON(removal))
      return
    }
    let peer = removal.peer
    if removal.daemon == .unconfirmed {
      context.console.print(
        "the running daemon did not confirm within \(Int(DaemonTrustConfirmation.wait)) s that it closed "
          + "\(peer.displayName)'s connections (stopped or busy); they are refused anyway")
    }
    guard let revocation = removal.revocation else {
      context.console.print("removed \(peer.displayName) (\(peer.deviceID.short)…) here only; it can no longer connect")
      return
    }
    context.console.print(
      "revoked \(peer.displayName) (\(peer.deviceID.short)…): it can no longer connect, and every device that "
        + "trusts this one cuts it off at its next sync (through a relay too)")
    if !revocation.unshared.isEmpty {
      context.console.print(
        "unshared from \(revocation.unshared.count) notebook(s); new key for \(revocation.rotated.count)")
    }
  }

  /// Shares each named notebook with a newly trusted device (`trust add --share`, `pair`),
  /// as `role`, and says so; with no names, says that the device gets nothing yet.
  static func share(_ names: [String], with peer: TrustedPeer, as role: NotebookRole, _ context: CommandContext)
    throws
  {
    let notebooks = try context.app().notebooks
    for name in names {
      let shared = try notebooks.share(name, with: peer, as: role)
      context.console.print("shared \(shared.notebook.displayName) with \(peer.displayName) as \(role.rawValue)")
    }
    if names.isEmpty {
      context.console.print(
        "no notebook is shared with \(peer.displayName) yet: it gets nothing until you run "
          + "`memo-peer notebook share NAME --with \(peer.displayName)`")
    }
  }

  static func printTrustList(_ list: TrustList, revocations: [RevocationNote], context: CommandContext) {
    if context.wantsJSON {
      context.printJSON(TrustListJSON(list, revocations: revocations))
      return
    }
    defer { printRevocations(revocations, context: context) }
    guard !list.peers.isEmpty else {
      context.console.print("no trusted devices yet (`memo-peer pair` or `memo-peer trust add`)")
      return
    }
    for peer in list.peers {
      let how = peer.source == .pairing ? "paired" : "added by ID"
      context.console.print(
        "\(peer.displayName)  \(peer.deviceID)  \(how) \(OutputFormat.localTime(peer.added))")
    }
  }

  /// The revocations this device holds, for `trust list` and `status`.
  static func printRevocations(_ notes: [RevocationNote], context: CommandContext) {
    guard !notes.isEmpty else { return }
    let names = (try? context.app().names()) ?? Names(store: nil, trust: nil)
    for note in notes {
      let revoked = note.name.map(\.terminalSafe) ?? names.device(note.revoked)
      let by = names.author(note.revoker)
      switch note.state {
      case .applied:
        context.console.print("revoked: \(revoked) by \(by), \(OutputFormat.localTime(note.made))")
      case .againstThisDevice:
        context.console.print("this device was revoked by \(by), \(OutputFormat.localTime(note.made))")
      case .overridden:
        context.console.print("revoked by \(by), trusted again here: \(revoked)")
      }
    }
  }
}

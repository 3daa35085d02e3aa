import FoundationEssentials
import MemoApp
import MemoCore
import MemoNode
import MemoProtocol
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Pairing two devices by code, and checking a trusted connection.
enum PairingCommands {
  /// The options of `pair`.
  enum PairOptions {
    static let accept = Flag("accept", "open a pairing window on this device and wait for the other")
    static let name = ValueOption(
      "name", value: "NAME", "the name the other device will know this one by (default: host name)")
    static let window = ValueOption("window", value: "SECONDS", "how long the pairing window stays open (default 120)")
    static let timeout = SharedOptions.timeout.withHelp(
      "how long to look for devices with an open window (default 10)")
    static let share = SharedOptions.share.withHelp(
      "share this notebook with the new device (repeatable; without it, pair asks; default: none)")
    static let role = SharedOptions.role.withHelp("with --share: member (default) or relay")
  }

  static let pair = Command(
    name: "pair", summary: "Pair with another device by comparing a six-digit code.",
    details: """
      On one device run `memo-peer pair --accept`: it opens a pairing window (2 minutes by
      default) and advertises the name you choose. On the other run `memo-peer pair` and
      pick that device. Both screens then show a code derived from the encrypted connection,
      after the device with the window committed to its part of it, and both device IDs: a
      device in the middle gets one guess in a million per attempt. Confirm on both only if
      the codes are the same: then each device trusts the other. A refusal or mismatch on
      either side stores nothing, and the window stays open for another attempt; after 3
      failed or refused attempts within 10 minutes, this device stops pairing for 10
      minutes. NAME is printable text of at most 63 bytes; anyone on the network sees it
      while the window is open. Needs a person at a terminal on both sides; for headless
      hosts use `memo-peer trust add`.
      """,
    options: [
      PairOptions.accept, PairOptions.name, PairOptions.window, PairOptions.timeout, PairOptions.share,
      PairOptions.role,
    ],
    positionals: [PositionalSpec(name: "DEVICE", optional: true, help: "the name the other device shows (pair)")]
  ) { context in
    let displayName = context.arguments[PairOptions.name] ?? PairingUseCases.displayName(forHost: hostName())
    let role = try NotebookCommands.roleArgument(context, command: "pair")
    let shares = context.arguments[PairOptions.share]
    let pairing = try context.app().pairing
    let prompt = SharedConsole()
    let confirm: @Sendable (PairingOffer) throws -> Bool = { offer in try prompt.confirm(offer) }
    let printer = LinePrinter()
    let peer: TrustedPeer
    if context.arguments.has(PairOptions.accept) {
      let window = try NetworkCommands.seconds(
        context.arguments[PairOptions.window], default: 120, option: PairOptions.window)
      peer = try pairing.accept(
        displayName: displayName, window: window, sharing: shares, prompt: context.console,
        onOpen: {
          printer.print("Pairing window open for \(NetworkCommands.formatSeconds(window)) as “\(displayName)”.")
          printer.print("On the other device run: memo-peer pair")
        }, onNotice: { printer.error("memo-peer: \($0)") }, confirm: confirm)
    } else {
      let timeout = try NetworkCommands.seconds(
        context.arguments[PairOptions.timeout], default: 10, option: PairOptions.timeout)
      let console = context.console
      peer = try pairing.join(
        wanted: context.arguments.positional(0), displayName: displayName, timeout: timeout, sharing: shares,
        prompt: console, onLooking: { printer.error("looking for devices with an open pairing window…") },
        onRefused: { refused in
          printer.error(
            "memo-peer: ignored a pairing advertisement whose name is not printable text of at most 63 bytes: "
              + "“\((refused.pairingName ?? "").terminalSafe)” (\(refused.instance.terminalSafe))")
        }, pick: { try pick(among: $0, console: console) }, confirm: confirm)
    }
    context.console.print("Paired: this device now trusts \(peer.displayName) (\(peer.deviceID.short)…).")
    var chosen = shares
    if chosen.isEmpty {
      let offered = try pairing.offerableNotebooks()
      let answer = try context.console.ask(
        "Share notebooks with \(peer.displayName)? Names separated by commas (\(offered.map(\.terminalSafe).joined(separator: ", "))), "
          + "or Enter for none: ")
      chosen = answer.split(separator: ",").map { String($0).trimmingWhitespace }.filter { !$0.isEmpty }
    }
    try TrustCommands.share(chosen, with: peer, as: role, context)
  }

  /// The options of `ping`.
  enum PingOptions {
    static let count = ValueOption("count", value: "N", "pings to send (default 3)")
    static let interval = ValueOption("interval", value: "SECONDS", "pause between pings (default 0.5)")
    static let timeout = SharedOptions.timeout.withHelp("how long to wait for the connection (default 30)")
    static let json = SharedOptions.json.withHelp("print a JSON summary")
  }

  static let ping = Command(
    name: "ping", summary: "Connect to a trusted device and measure round trips.",
    details: """
      Finds PEER on the local network by its rotating tag, connects over TLS with its pinned
      key, and exchanges pings. While local-network consent is missing or the peer is not
      visible it waits (and says for what) until --timeout, then fails with status 17. A
      device that advertises as PEER with another key is refused (status 16).
      """,
    options: [PingOptions.count, PingOptions.interval, PingOptions.timeout, PingOptions.json],
    positionals: [PositionalSpec(name: "PEER", optional: false, help: "a trusted device's name or device-ID prefix")]
  ) { context in
    guard let reference = context.arguments.positional(0) else {
      throw ArgumentParser.usage("ping needs a trusted device", suggestion: nil, command: "ping")
    }
    guard let count = Int(context.arguments[PingOptions.count] ?? "3"), (1...10_000).contains(count) else {
      throw ArgumentParser.usage("--count needs a number from 1 to 10000", suggestion: nil, command: "ping")
    }
    let interval = try NetworkCommands.seconds(
      context.arguments[PingOptions.interval], default: 0.5, option: PingOptions.interval)
    let timeout = try NetworkCommands.seconds(
      context.arguments[PingOptions.timeout], default: 30, option: PingOptions.timeout)
    let printer = LinePrinter()
    let quiet = context.wantsJSON
    let result = try context.app().network.ping(
      reference, count: count, interval: interval, timeout: timeout, prompt: context.console,
      onState: { printer.error("memo-peer: \($0)") },
      onPong: { peer, milliseconds in
        if !quiet { printer.print("pong from \(peer.displayName): time=\(milliseconds) ms") }
      })
    if context.wantsJSON { context.printJSON(PingJSON(result)) }
  }

  /// The person's pick among several devices with an open pairing window.
  static func pick(among candidates: [PeerSighting], console: Console) throws -> PeerSighting {
    for (index, candidate) in candidates.enumerated() {
      console.print("  \(index + 1). \((candidate.pairingName ?? candidate.instance).terminalSafe)")
    }
    let answer = try console.ask("Pair with which device (1-\(candidates.count))? ")
    guard let number = Int(answer.trimmingWhitespace), (1...candidates.count).contains(number) else {
      throw MemoPeerError(.cancelled, "no device chosen; nothing was stored")
    }
    return candidates[number - 1]
  }

  /// This machine's host name, if it has one.
  static func hostName() -> String? {
    var name = [CChar](repeating: 0, count: 256)
    guard gethostname(&name, name.count) == 0 else { return nil }
    return String(nulTerminated: name)
  }
}

/// A console of its own for the code prompt, which the host asks from the pairing
/// connection's thread: the mutex hands it to whichever thread asks (the command's own
/// thread waits for the pairing meanwhile). Its output is flushed before each question.
final class SharedConsole: Sendable {
  private let console = Mutex(Console())

  func confirm(_ offer: PairingOffer) throws -> Bool {
    try console.withLock { try Self.confirm(offer, on: $0) }
  }

  private static func confirm(_ offer: PairingOffer, on console: Console) throws -> Bool {
    console.print("")
    console.print("  this device:   \(offer.ownID)")
    console.print("  other device:  \(offer.peerID)" + (offer.peerName.map { " (“\($0.terminalSafe)”)" } ?? ""))
    console.print("  code:          \(PairingCode.display(offer.code))")
    return try console.confirm("Does the other device show the same code?")
  }
}

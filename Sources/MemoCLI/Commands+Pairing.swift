import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoTransport
import Synchronization

/// Pairing two devices by code, and checking a trusted connection.
enum PairingCommands {
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
      OptionSpec("accept", "open a pairing window on this device and wait for the other"),
      OptionSpec("name", value: "NAME", "the name the other device will know this one by (default: host name)"),
      OptionSpec("window", value: "SECONDS", "how long the pairing window stays open (default 120)"),
      OptionSpec("timeout", value: "SECONDS", "how long to look for devices with an open window (default 10)"),
      OptionSpec(
        "share", value: "NOTEBOOK", repeatable: true,
        "share this notebook with the new device (repeatable; without it, pair asks; default: none)",
        completion: .dynamic(.notebooks)),
      OptionSpec(
        "as", value: "ROLE", "with --share: member (default) or relay",
        completion: .choices(NotebookRole.allCases.map(\.rawValue))),
    ],
    positionals: [PositionalSpec(name: "DEVICE", optional: true, help: "the name the other device shows (pair)")]
  ) { context in
    let paths = try context.paths()
    let gate = try ConsentGate(paths: paths)
    let displayName = try context.arguments.value("name") ?? defaultDisplayName()
    try DeviceName.validatePairingName(displayName)
    // Checked before pairing: a typo must not leave a pairing half answered.
    _ = try NotebookCommands.roleArgument(context, command: "pair")
    for notebook in context.arguments.all("share") { _ = try context.store().findNotebook(notebook) }
    guard context.console.stdinIsTerminal else {
      throw MemoPeerError(
        .usage, "pairing needs a person at a terminal to compare codes",
        hint: "on a headless host use `memo-peer trust add DEVICE-ID --name NAME` (see `memo-peer id`)")
    }
    let identity = try NodeIdentity.load(paths: paths)
    let trust = TrustStore(paths: paths)
    let prompt = SharedConsole()
    let confirm: @Sendable (PairingOffer) throws -> Bool = { offer in try prompt.confirm(offer) }
    let printer = LinePrinter()
    let pairing = Pairing(
      gate: gate, identity: identity, trust: trust, attempts: PairingAttemptStore(paths: paths), clock: { wallClock() })
    let peer: TrustedPeer
    if context.arguments.has("accept") {
      try NetworkCommands.obtainConsent(
        for: .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: gate, context: context)
      let window = try NetworkCommands.seconds(context.arguments.value("window"), default: 120, option: "window")
      peer = try runBlocking {
        try await pairing.openWindow(
          seconds: window, displayName: displayName,
          onOpen: { _ in
            printer.print(
              "Pairing window open for \(NetworkCommands.formatSeconds(window)) as “\(displayName)”.")
            printer.print("On the other device run: memo-peer pair")
          }, onNotice: { printer.error("memo-peer: \($0)") }, confirm: confirm)
      }
    } else {
      try NetworkCommands.obtainConsent(
        for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: gate, context: context)
      let timeout = try NetworkCommands.seconds(context.arguments.value("timeout"), default: 10, option: "timeout")
      let wanted = context.arguments.positional(0)
      printer.error("looking for devices with an open pairing window…")
      let candidates = try runBlocking {
        try await pairing.candidates(timeout: timeout, wanted: wanted) { refused in
          printer.error(
            "memo-peer: ignored a pairing advertisement whose name is not printable text of at most 63 bytes: "
              + "“\((refused.pairingName ?? "").terminalSafe)” (\(refused.instance.terminalSafe))")
        }
      }
      let chosen = try choose(among: candidates, wanted: wanted, console: context.console)
      peer = try pairing.pair(with: chosen, displayName: displayName, confirm: confirm)
    }
    context.console.print("Paired: this device now trusts \(peer.displayName) (\(peer.id?.short ?? "?")…).")
    var chosen = context.arguments.all("share")
    if chosen.isEmpty {
      let offered = try context.store().notebooks().filter { $0.role == .member }.compactMap(\.name)
      let answer = try context.console.ask(
        "Share notebooks with \(peer.displayName)? Names separated by commas (\(offered.map(\.terminalSafe).joined(separator: ", "))), "
          + "or Enter for none: ")
      chosen = answer.split(separator: ",").map { String($0).trimmingWhitespace }.filter { !$0.isEmpty }
    }
    try TrustCommands.share(chosen, with: peer, context, command: "pair")
  }

  static let ping = Command(
    name: "ping", summary: "Connect to a trusted device and measure round trips.",
    details: """
      Finds PEER on the local network by its rotating tag, connects over TLS with its pinned
      key, and exchanges pings. While local-network consent is missing or the peer is not
      visible it waits (and says for what) until --timeout, then fails with status 17. A
      device that advertises as PEER with another key is refused (status 16).
      """,
    options: [
      OptionSpec("count", value: "N", "pings to send (default 3)"),
      OptionSpec("interval", value: "SECONDS", "pause between pings (default 0.5)"),
      OptionSpec("timeout", value: "SECONDS", "how long to wait for the connection (default 30)"),
      OptionSpec("json", "print a JSON summary"),
    ],
    positionals: [PositionalSpec(name: "PEER", optional: false, help: "a trusted device's name or device-ID prefix")]
  ) { context in
    let paths = try context.paths()
    let gate = try ConsentGate(paths: paths)
    guard let reference = context.arguments.positional(0) else {
      throw ArgumentParser.usage("ping needs a trusted device", suggestion: nil, command: "ping")
    }
    let trust = TrustStore(paths: paths)
    let peer = try trust.load().find(reference)
    guard let count = Int(context.arguments.value("count") ?? "3"), (1...10_000).contains(count) else {
      throw ArgumentParser.usage("--count needs a number from 1 to 10000", suggestion: nil, command: "ping")
    }
    let interval = try NetworkCommands.seconds(context.arguments.value("interval"), default: 0.5, option: "interval")
    let timeout = try NetworkCommands.seconds(context.arguments.value("timeout"), default: 30, option: "timeout")
    if context.console.stdinIsTerminal {
      try NetworkCommands.obtainConsent(
        for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: gate, context: context)
    }
    // `memo-peer lock` while the pings run closes the connection.
    let watch = LockWatch(keys: DeviceKeys(paths: paths))
    defer { watch.stop() }
    let connector = PeerConnector(
      gate: gate, identity: try NodeIdentity.load(paths: paths), trust: trust, sessions: watch.sessions,
      clock: { wallClock() })
    let printer = LinePrinter()
    let name = peer.displayName
    let link = try runBlocking {
      try await connector.connect(to: peer, timeout: timeout) { state in
        printer.error("memo-peer: \(name): \(state)")
      }
    }
    var times: [Double] = []
    for index in 0..<count {
      let started = DispatchTime.now().uptimeNanoseconds
      do throws(TransportError) {
        try link.channel.send(Frame(.ping, payload: Array(String(index).utf8)))
        guard let answer = try link.channel.receive(), answer.kind == .pong else {
          throw TransportError(.closed, "no pong")
        }
      } catch {
        if watch.fired { throw LockWatch.lockedDuring("the pings") }
        throw MemoPeerError(
          .connection, "\(name) closed the connection after \(index) of \(count) pings",
          hint: "it may have removed this device from its trusted devices", diagnostics: error.description)
      }
      let milliseconds = (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e4).rounded() / 100
      times.append(milliseconds)
      if !context.wantsJSON { printer.print("pong from \(name): time=\(milliseconds) ms") }
      if index + 1 < count { Thread.sleep(forTimeInterval: interval) }
    }
    try? link.channel.send(PeerSession.goodbye("done"))
    link.channel.close()
    if context.wantsJSON {
      struct PingJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let peer: String
        let deviceID: String
        let received: Int
        let milliseconds: [Double]
        enum CodingKeys: String, CodingKey {
          case schema, peer, received, milliseconds
          case deviceID = "device_id"
        }
      }
      context.printJSON(
        PingJSON(peer: name, deviceID: link.peer.id?.description ?? "", received: times.count, milliseconds: times))
    }
  }

  /// The device to pair with: the one named, the only one, or the person's pick.
  static func choose(among candidates: [PeerSighting], wanted: String?, console: Console) throws -> PeerSighting {
    if let wanted {
      guard let match = candidates.first(where: { $0.pairingName?.lowercased() == wanted.lowercased() }) else {
        throw MemoPeerError(
          .notFound, "no device named \(TerminalText.display(wanted)) has an open pairing window",
          hint: "run `memo-peer pair --accept` on it first; devices seen: "
            + (candidates.compactMap { $0.pairingName?.terminalSafe }.joined(separator: ", ").nonEmpty ?? "none"))
      }
      return match
    }
    guard !candidates.isEmpty else {
      throw MemoPeerError(
        .notFound, "no device has an open pairing window", hint: "run `memo-peer pair --accept` on the other device")
    }
    if candidates.count == 1 { return candidates[0] }
    for (index, candidate) in candidates.enumerated() {
      console.print("  \(index + 1). \((candidate.pairingName ?? candidate.instance).terminalSafe)")
    }
    let answer = try console.ask("Pair with which device (1-\(candidates.count))? ")
    guard let number = Int(answer.trimmingWhitespace), (1...candidates.count).contains(number) else {
      throw MemoPeerError(.cancelled, "no device chosen; nothing was stored")
    }
    return candidates[number - 1]
  }

  /// The host name, when it makes a valid pairing name (cut to 63 bytes); otherwise a
  /// neutral name.
  static func defaultDisplayName() throws -> String {
    var name = [CChar](repeating: 0, count: 256)
    guard gethostname(&name, name.count) == 0 else { return "memo-peer device" }
    var host = String(nulTerminated: name)
    while host.utf8.count > DeviceName.maximumPairingBytes { host.removeLast() }
    return DeviceName.isValidPairingName(host) ? host : "memo-peer device"
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

extension String {
  var nonEmpty: String? { isEmpty ? nil : self }
}

import MemoCore
import MemoNode
import MemoVault

/// Pairing two devices by a six-digit code both people compare (`pair --accept` on one,
/// `pair` on the other). Needs a person on both sides: the code is confirmed through
/// `confirm`, which the pairing connection's thread calls.
public struct PairingUseCases {
  let app: App

  /// `host` as a pairing name when it makes a valid one (cut to 63 bytes); otherwise a
  /// neutral name.
  public static func displayName(forHost host: String?) -> String {
    guard var host else { return "memo-peer device" }
    while host.utf8.count > DeviceName.maximumPairingBytes { host.removeLast() }
    return DeviceName.isValidPairingName(host) ? host : "memo-peer device"
  }

  /// Opens a pairing window for `window` seconds, advertised as `displayName`, and waits for
  /// the other device. `sharing` (notebooks to share once paired) is checked first, so a
  /// typo does not leave a pairing half answered. `onOpen` hears that the window is open,
  /// `onNotice` about attempts that failed while it stays open.
  public func accept(
    displayName: String, window: Double, sharing notebooks: [String] = [], prompt: any Prompt,
    onOpen: @escaping @Sendable () -> Void, onNotice: @escaping @Sendable (String) -> Void,
    confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) throws -> TrustedPeer {
    let pairing = try prepare(displayName: displayName, sharing: notebooks, prompt: prompt)
    try ConsentUseCases.obtain(
      for: .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: pairing.gate, prompt: prompt,
      now: app.now)
    return try runBlocking {
      try await pairing.openWindow(
        seconds: window, displayName: displayName, onOpen: { _ in onOpen() }, onNotice: onNotice, confirm: confirm)
    }
  }

  /// Looks for devices with an open pairing window for `timeout` seconds (or until the one
  /// named `wanted` shows up) and pairs with it: the one named, the only one, or the one
  /// `pick` chooses among several. `onLooking` hears that the search started, `onRefused`
  /// about advertisements whose name is not a valid pairing name (ignored).
  public func join(
    wanted: String?, displayName: String, timeout: Double, sharing notebooks: [String] = [], prompt: any Prompt,
    onLooking: () -> Void = {}, onRefused: @escaping @Sendable (PeerSighting) -> Void = { _ in },
    pick: ([PeerSighting]) throws -> PeerSighting, confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) throws -> TrustedPeer {
    let pairing = try prepare(displayName: displayName, sharing: notebooks, prompt: prompt)
    try ConsentUseCases.obtain(for: .memoPeerBrowse, gate: pairing.gate, prompt: prompt, now: app.now)
    onLooking()
    let candidates = try runBlocking {
      try await pairing.candidates(timeout: timeout, wanted: wanted, onRefused: onRefused)
    }
    let chosen = try Self.choose(among: candidates, wanted: wanted, pick: pick)
    return try pairing.pair(with: chosen, displayName: displayName, confirm: confirm)
  }

  /// The names of the notebooks this device can share with a newly paired one (those it is
  /// a member of).
  public func offerableNotebooks() throws -> [String] {
    try app.store().notebooks().filter { $0.role == .member }.compactMap(\.name)
  }

  /// The device to pair with: the one named, the only one, or `pick`'s choice.
  static func choose(
    among candidates: [PeerSighting], wanted: String?, pick: ([PeerSighting]) throws -> PeerSighting
  ) throws -> PeerSighting {
    if let wanted {
      guard let match = candidates.first(where: { $0.pairingName?.lowercased() == wanted.lowercased() }) else {
        let seen = candidates.compactMap { $0.pairingName?.terminalSafe }.joined(separator: ", ")
        throw MemoPeerError(
          .notFound, "no device named \(TerminalText.display(wanted)) has an open pairing window",
          hint: "run `memo-peer pair --accept` on it first; devices seen: " + (seen.isEmpty ? "none" : seen))
      }
      return match
    }
    guard !candidates.isEmpty else {
      throw MemoPeerError(
        .notFound, "no device has an open pairing window", hint: "run `memo-peer pair --accept` on the other device")
    }
    if candidates.count == 1 { return candidates[0] }
    return try pick(candidates)
  }

  /// The checks before either side pairs: the name, the notebooks to share, a person to
  /// compare the code.
  func prepare(displayName: String, sharing notebooks: [String], prompt: any Prompt) throws -> Pairing {
    let gate = try app.consent.gate()
    try DeviceName.validatePairingName(displayName)
    for notebook in notebooks { _ = try app.notebooks.find(notebook) }
    guard prompt.canAsk else {
      throw MemoPeerError(
        .usage, "pairing needs a person at a terminal to compare codes",
        hint: "on a headless host use `memo-peer trust add DEVICE-ID --name NAME` (see `memo-peer id`)")
    }
    return Pairing(
      gate: gate, identity: try NodeIdentity.load(paths: app.paths), trust: app.trustStore,
      attempts: PairingAttemptStore(paths: app.paths), clock: app.clock)
  }
}

import Foundation
import MemoCore
import MemoCrypto
@_spi(Fuzzing) import MemoDiscovery
import MemoMarkdown
import MemoNode
import MemoProtocol
@_spi(Fuzzing) import MemoStore
import MemoSystem
@_spi(Fuzzing) import MemoTransfer
@_spi(Fuzzing) import MemoVault
import MemoWeb

/// The decoders of what arrives by mDNS and of the files another program could have written
/// (key files, archives, Markdown, the consent log, the trust store), and the web page's
/// request bodies. The decoders are internal to their modules; the few these targets reach
/// are `@_spi(Fuzzing) public` there (TXTRecordBytes, AvahiResolution and AvahiNames in
/// MemoDiscovery; WrappedKey, SealedSecretFile, KeyFile.parse, MemoArchive's header and
/// chunk reader, and the parsers of the consent log, trust store, pairing attempts and
/// config in MemoStore), not `@testable`, which a release build cannot import.
extension FuzzTargets {
  /// A TXT record as Avahi hands it over (dns_sd's decoder), then what `browse` and `pair`
  /// do with its values: escape them for a terminal, check a pairing name, recognise a tag.
  static func txtRecord(_ data: [UInt8]) {
    let values = TXTRecordBytes.decode(data)
    for (key, value) in values {
      _ = TerminalText.display(key)
      _ = TerminalText.display(value)
      _ = DeviceName.isValidPairingName(value)
    }
    _ = recognizer.peer(forTag: values["tag"], at: 1_800_000_000_000)
  }

  /// Recognises tags of one trusted device with a known discovery key.
  private static let recognizer: PeerRecognizer = {
    var list = TrustList()
    if let id = DeviceID(bytes: [UInt8](repeating: 9, count: 32)) {
      try? list.trust(
        TrustedPeer(
          deviceID: id, name: "fuzz", discoveryKey: Data(repeating: 5, count: 32).base64EncodedString(),
          rotationSeconds: 900, source: .command, added: 1))
    }
    return PeerRecognizer(trust: list)
  }()

  /// Avahi's resolved answer: TXT entries (split from the input at each 0xFF) put into wire
  /// format and decoded, and the address text scoped to an interface.
  static func avahiRecords(_ data: [UInt8]) {
    let entries = data.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
    let wire = AvahiResolution.wireFormat(entries)
    let values = TXTRecordBytes.decode(wire)
    precondition(values.count <= entries.count, "more TXT keys than entries")
    if let text = String(validating: data.prefix(64), as: UTF8.self) {
      _ = AvahiResolution.scoped(text, interfaceIndex: UInt32(data.count))
      _ = AvahiNames.qualified(AvahiNames.bare(text))
    }
  }

  /// An export archive: its header (magic, format, scrypt costs, refused above 256 MiB before
  /// anything is derived), then its chunks walked with a fixed key; the inputs are sealed
  /// under that key here, so the JSON inside is what gets fuzzed, not AES-GCM.
  static func archive(_ data: [UInt8]) {
    if let parameters = try? MemoArchiveReader.parameters(data, source: "fuzz") {
      precondition(parameters.isAcceptable && (parameters.memoryBytes ?? .max) <= ScryptParameters.maximumMemory)
    }
    guard let key = archiveKey else { return }
    let header = MemoArchive.magic + [1, 1, 10, 8, 1] + [UInt8](repeating: 0, count: 16)
    let parts = data.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(8)
    var bytes = header
    for (index, part) in parts.enumerated() {
      let final = index == parts.count - 1
      guard
        let sealed = try? key.seal(
          Array(part), associatedData: MemoArchive.associatedData(header: header, index: UInt64(index), final: final))
      else { return }
      bytes += withUnsafeBytes(of: UInt32(sealed.count).bigEndian, Array.init) + sealed
    }
    guard let reader = try? MemoArchiveReader(bytes: bytes, source: "fuzz", key: key) else { return }
    try? reader.forEachMemo { memo in
      precondition(memo.revision >= 1 && memo.revision <= SyncLimits.maximumRevision, "a revision out of range")
      precondition(SyncLimits.timestamps.contains(memo.created) && SyncLimits.timestamps.contains(memo.updated))
    }
  }

  /// A fresh key per input (cheap next to the AES-GCM work itself): AES256GCMKey owns a C
  /// context and is not shared between threads.
  private static var archiveKey: AES256GCMKey? {
    try? AES256GCMKey(SecureBytes(copying: [UInt8](repeating: 6, count: 32)))
  }

  /// A Markdown file to import: front matter and body; whatever parses has numbers peers
  /// accept, and renders and parses again.
  static func markdown(_ data: [UInt8]) {
    guard let text = String(validating: data, as: UTF8.self) else { return }
    _ = try? FrontMatter.split(text, source: "fuzz.md")
    guard let memo = try? MarkdownMemo.parse(text, source: "fuzz.md", modified: 1_800_000_000_000) else { return }
    let revision = memo.revision ?? 1
    precondition(revision >= 1 && revision <= SyncLimits.maximumRevision, "a revision out of range")
    for time in [memo.created, memo.updated].compactMap({ $0 }) {
      precondition(SyncLimits.timestamps.contains(time), "a time out of range")
      _ = MarkdownMemo.isoTime(time)
    }
  }

  /// Key files: the device key (plain or wrapped under a passphrase: its scrypt costs are
  /// refused above 256 MiB), the identity and discovery keys (plain or sealed), and a
  /// sealed secret file.
  static func keyFiles(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let bytes = Array(data.dropFirst())
    let paths = fuzzPaths
    let file = [KeyFile.device(paths), .identity(paths), .discovery(paths), .listing(paths)][Int(selector % 4)]
    if case .wrapped(let wrapped)? = try? file.parse(bytes) {
      precondition(wrapped.parameters.isAcceptable, "a wrapped key with unacceptable scrypt costs")
    }
    if let wrapped = try? WrappedKey.decode(bytes, magic: Array("MPDK".utf8), source: "fuzz") {
      precondition((wrapped.parameters.memoryBytes ?? .max) <= ScryptParameters.maximumMemory)
    }
    _ = SealedSecretFile.decode(bytes, magic: Array("MPTS".utf8), version: 2, publicPart: 0, exactPlain: nil)
  }

  private static let fuzzPaths: NodePaths = {
    // Only names are used: nothing is read or written there.
    (try? NodePaths.resolve(environment: ["MEMO_PEER_HOME": "/nonexistent/memo-peer-fuzz"]))!
  }()

  /// The consent log: records, and the state of every scope they give.
  static func consentLog(_ data: [UInt8]) {
    guard let records = try? ConsentLog.parse(data, path: "fuzz") else { return }
    for scope in ConsentScope.allCases { _ = ConsentState.of(scope, in: records).name }
    for record in records {
      _ = TerminalText.display(record.usageText)
      _ = record.note.map { TerminalText.display($0) }
    }
  }

  /// The trust store's JSON, and what is done with every peer in it.
  static func trustStore(_ data: [UInt8]) {
    guard let list = try? TrustStore.decode(data, path: "fuzz") else { return }
    for peer in list.peers {
      _ = peer.displayName
      _ = peer.deviceID.short
      _ = Advertisement.periodEnd(at: 1_800_000_000_000, rotationSeconds: peer.rotationSeconds ?? 900)
      // The addresses it is dialled at without DNS-SD, given and reached.
      for address in peer.dialAddresses(on: nil, defaultPort: 7878) { _ = address.description }
    }
    if let text = String(validating: data, as: UTF8.self) { _ = try? PeerAddress.parse(text) }
    _ = PeerRecognizer(trust: list).peer(forTag: "0011223344556677", at: 1_800_000_000_000)
  }

  /// The small state and config files (the first byte chooses): the pairing attempts (and
  /// the arithmetic on their times), the daemon's status file and the config file.
  static func stateFiles(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let bytes = Array(data.dropFirst())
    switch selector % 3 {
    case 0:
      guard let attempts = try? PairingAttemptStore.parse(bytes, path: "fuzz") else { return }
      for now in [Timestamp.min, 0, 1_800_000_000_000, Timestamp.max] {
        _ = attempts.isBlocked(at: now)
        if let minutes = attempts.minutesUntilReopen(at: now) { precondition(minutes >= 1) }
        var copy = attempts
        _ = copy.decide(paired: false, counts: true, at: now)
      }
    case 1:
      guard let status = try? JSONDecoder().decode(ServeStatus.self, from: Data(bytes)) else { return }
      _ = status.summary
      _ = status.serviceText
    default:
      _ = try? NodeConfig.parse(bytes, path: "fuzz")
    }
  }

  /// The web page's request bodies, for every route (the first byte chooses).
  static func webAPI(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let routes: [APIRoute] = [
      .createMemo, .search, .editMemo("x"), .resolveConflict("x"), .recordConsent, .startSync, .unlock, .status,
    ]
    let route = routes[Int(selector) % routes.count]
    let contentType = selector & 0x80 == 0 ? "application/json" : "application/octet-stream"
    _ = try? APICall.decode(route, body: Array(data.dropFirst()), contentType: contentType)
  }
}

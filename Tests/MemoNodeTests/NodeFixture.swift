import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoVault
import XCTest

@testable import MemoNode

/// One node in a temporary home: its identity and discovery key, trust store, consent log
/// and store, with a fake keyring (so protection and its idle timeout are observable) and
/// cheap scrypt. No network: its channels are in-memory ones.
final class TestNode: Sendable {
  static let fastKDF = ScryptParameters(n: 1 << 10, r: 8, p: 1)

  let root: String
  let paths: NodePaths
  let identity: NodeIdentity
  let trust: TrustStore
  let keyring = FakeKeyring()
  let keys: DeviceKeys

  init() throws {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    root = try PrivateFiles.makeUniqueDirectory(in: base, prefix: "memo-peer-node-test")
    paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root])
    identity = try NodeIdentity.load(paths: paths, rotationSeconds: 900)
    keys = DeviceKeys(paths: paths, keyring: keyring, kdfParameters: Self.fastKDF)
    // With the node's keys: once protected, the trust store is sealed under the device key.
    trust = TrustStore(paths: paths, keys: keys)
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  var id: DeviceID { identity.deviceID }

  func access(_ use: KeyUse = .person, logger: Logger = .disabled) -> StoreAccess {
    StoreAccess(paths: paths, keys: keys, use: use, logger: logger)
  }

  func open(_ use: KeyUse = .person) throws -> MemoStore { try access(use).open() }

  /// Trusts `other` under `name`, with its discovery key unless `withKey` is false (a
  /// device added by ID and never met).
  @discardableResult
  func trusts(_ other: TestNode, as name: String, policy: ReceivePolicy? = nil, withKey: Bool = true) throws
    -> TrustedPeer
  {
    try trust.update { list in
      var peer = TrustedPeer(
        deviceID: other.id, name: name, discoveryKey: withKey ? other.identity.discoveryKeyBase64 : nil,
        rotationSeconds: 900, source: .command, added: 1)
      peer.receive = policy
      try list.trust(peer)
      return peer
    }
  }

  func peer(_ name: String) throws -> TrustedPeer { try trust.load().find(name) }

  func grantConsent() throws {
    try ConsentGate(paths: paths).record(.granted, scope: .localNetwork, method: .command, note: nil, now: 1)
  }

  var gate: ConsentGate { get throws { try ConsentGate(paths: paths) } }

  /// What `serve` does with a channel on this node.
  func responder(
    receiptDelay: Double = 0, limits: ReceiveLimits = ReceiveLimits(), batch: Int = 3, logger: Logger? = nil
  ) -> DaemonResponder {
    DaemonResponder(
      identity: identity, trust: trust, store: access(logger: logger ?? .disabled), receiptDelay: receiptDelay,
      receiveLimits: limits,
      syncBatch: SyncSession.BatchLimits(revisions: batch), clock: testClock)
  }

  /// A person's sync from this node (as `memo-peer sync` runs it), through `dialer`.
  func syncer(_ dialer: any PeerDialer, use: KeyUse = .person, batch: Int = 3) -> PeerSync {
    PeerSync(store: access(use), dialer: dialer, batch: SyncSession.BatchLimits(revisions: batch), clock: testClock)
  }

  /// A dialler to `other`'s daemon (its own responder unless given).
  func dialer(
    to other: TestNode, faults: LinkFaults = LinkFaults(), limits: ConnectionLimits = ConnectionLimits(),
    serve: (@Sendable (any FrameChannel) -> Void)? = nil
  ) -> DirectDialer {
    let responder = other.responder()
    return DirectDialer(from: self, to: other, faults: faults, limits: limits, serve: serve ?? { responder.serve($0) })
  }

  /// Protection `complete` with an idle timeout, unlocked (the key in the fake keyring).
  func protectComplete(idleTimeout: UInt32 = 2) throws {
    _ = try open()
    let passphrase = SecureBytes(copying: Array("a passphrase".utf8))
    _ = try keys.protect(
      .complete, idleTimeout: idleTimeout, changePassphrase: false, currentPassphrase: { passphrase },
      newPassphrase: { passphrase })
  }

  /// How often the idle timeout of the device key was restarted.
  var idleRestarts: Int { keyring.timeouts.filter { $0.name.hasSuffix(":device-key") }.count }

  /// Makes the idle timeout run out.
  func expireIdleTimeout() { keyring.expire { $0.hasSuffix(":device-key") } }

  func bodies() throws -> [String] { try open(.background).allHeadRows().filter { !$0.isDeleted }.map(\.body).sorted() }
}

/// Two nodes that trust each other by name (`a` calls the other `bee`, `b` calls it `ay`)
/// and, with `sharing`, share a's default notebook as members (the default for new memos on
/// both), as two devices that synced everything before notebooks do after the upgrade.
func trustingPair(sharing: Bool = true) throws -> (a: TestNode, b: TestNode) {
  let a = try TestNode()
  let b = try TestNode()
  try a.trusts(b, as: "bee")
  try b.trusts(a, as: "ay")
  if sharing {
    let first = try a.open()
    try shareNotebook(try first.defaultNotebook().id, among: [(first, a.id), (try b.open(), b.id)])
  }
  return (a, b)
}

/// A fixed clock for the engine (deterministic timestamps).
let testClock: @Sendable () -> Timestamp = { 1_800_000_000_000 }

/// A dialler that reaches `to` over an in-memory pair whose far end `serve`s, on a thread of
/// its own; greets on the near end as PeerConnector does.
struct DirectDialer: PeerDialer {
  let from: TestNode
  let to: TestNode
  var faults = LinkFaults()
  var limits = ConnectionLimits()
  var serve: @Sendable (any FrameChannel) -> Void
  /// Whether the link keeps the peer's hello, as PeerConnector's do (then a sender sees
  /// that the peer takes batched deliveries); off, the sender delivers one entry at a time,
  /// as to a peer from before batches.
  var keepsHello = false
  /// The far ends started so far.
  let farEnds = Recorder<Background<Void>>()

  /// Waits until every far end has finished (the daemon's side of each channel is done),
  /// so the test sees its final state.
  func settle() { for end in farEnds.all { _ = end.wait() } }

  func connect(to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void)
    async throws -> PeerLink
  {
    let (near, far) = InMemoryChannel.pair(first: from.id, second: to.id, limits: limits, faults: faults)
    let serve = self.serve
    farEnds.append(
      Background.start("mp.test.far") {
        serve(far)
        far.close()
      })
    let identity = from.identity
    let hello: PeerMessage.Hello
    do {
      hello = try await BlockingIO.run("mp.test.greet") { try PeerSession.greet(near, identity: identity) }
    } catch {
      throw MemoPeerError(.untrustedPeer, "\(peer.name) refused this device", diagnostics: "\(error)")
    }
    onState(.ready)
    return PeerLink(channel: near, peer: peer, hello: keepsHello ? hello : nil)
  }
}

extension XCTestCase {
  /// Runs async code from a synchronous test and waits for it.
  func runAsync<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T { try runBlocking(body) }
}

func assertTransportError<T>(
  _ kind: TransportError.Kind, _ expression: @autoclosure () throws -> T, _ message: String = "",
  file: StaticString = #filePath, line: UInt = #line
) {
  XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
    XCTAssertEqual((error as? TransportError)?.kind, kind, "\(error)", file: file, line: line)
  }
}

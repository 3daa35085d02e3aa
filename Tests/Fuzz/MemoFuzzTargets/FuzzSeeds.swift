import Foundation
import MemoCore
import MemoCrypto
@_spi(Fuzzing) import MemoDiscovery
import MemoProtocol
@_spi(Fuzzing) import MemoStore
@_spi(Fuzzing) import MemoTransfer
@_spi(Fuzzing) import MemoVault

/// The seed corpus: valid inputs for every target, made with the production encoders so they
/// stay in step with the formats. Written to Tests/Fuzz/Corpus once
/// (`MEMO_PEER_WRITE_FUZZ_CORPUS=1`, FuzzRegressionTests) and committed; libFuzzer mutates
/// from there.
extension FuzzTargets {
  public static func seeds() -> [String: [[UInt8]]] {
    let replica = ReplicaID(String(repeating: "a", count: 32))!
    let other = ReplicaID(String(repeating: "b", count: 32))!
    let key = Data(repeating: 7, count: 32).base64EncodedString()
    let memo = MemoID("8e0f3d4a-1b2c-4d5e-8f90-123456789abc")!
    let stored = Memo(
      id: memo, title: "groceries", body: "milk\n", tags: ["home"], created: 1_700_000_000_000,
      updated: 1_700_000_000_500, isPrivate: false, revision: 2, origin: .replica(replica),
      dot: Dot(origin: replica, seq: 4),
      clock: VersionVector([replica: 4, other: 2]))
    let content = DeliveryMessage.Content(
      title: "groceries", body: "milk\n", tags: ["home"], isPrivate: false, sent: 1_700_000_001_000,
      revision: DeliveryMessage.SentRevision(memo: stored))
    let live = SyncRevision(
      memo: memo,
      head: HeadSummary(dot: Dot(origin: replica, seq: 4), clock: stored.clock, revision: 2, isDeleted: false),
      created: stored.created, updated: stored.updated, isPrivate: false, title: "groceries", body: "milk\n",
      tags: ["home"])
    let tombstone = SyncRevision(
      memo: memo,
      head: HeadSummary(
        dot: Dot(origin: other, seq: 3), clock: VersionVector([replica: 4, other: 3]), revision: 3, isDeleted: true),
      created: stored.created, updated: stored.updated + 1, isPrivate: false, title: "", body: "", tags: [])
    let hello = PeerMessage.encode(
      PeerMessage.Hello(
        discoveryKey: key, rotationSeconds: 900, listenPort: 7878, listenAddresses: ["169.254.1.2", "fd00::1"]))
    let syncHello = PeerMessage.encode(
      SyncMessage.Hello(
        replica: replica, knowledge: VersionVector([replica: 4, other: 2]),
        cursor: FeedPosition(replica: other, position: 12), pending: 3))
    let pairFrames: (guest: [UInt8], host: [UInt8]) = (
      Frame(.pairNonce, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: key))).encoded()
        + Frame(.pairConfirm, payload: PeerMessage.encode(PeerMessage.PairConfirm(name: "laptop"))).encoded()
        + Frame(.pairKey, payload: PeerMessage.encode(PeerMessage.PairKey(discoveryKey: key, rotationSeconds: 900)))
        .encoded(),
      Frame(.pairCommit, payload: PeerMessage.encode(PeerMessage.PairCommit(commitment: key))).encoded()
        + Frame(.pairReveal, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: key))).encoded()
        + Frame(.pairConfirm, payload: PeerMessage.encode(PeerMessage.PairConfirm(name: "server"))).encoded()
    )
    let record = ConsentRecord(
      decision: .granted, scope: .localNetwork, usageText: "find your devices", serviceTypes: ["_memo-peer._tcp"],
      user: "alice", uid: 1000, time: 1_700_000_000_000, method: .prompt)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let consentLine = ((try? encoder.encode(record)).map(Array.init) ?? []) + [0x0A]
    var trust = TrustList()
    if let id = DeviceID(bytes: [UInt8](repeating: 9, count: 32)) {
      try? trust.trust(
        TrustedPeer(deviceID: id, name: "server", discoveryKey: key, rotationSeconds: 900, source: .pairing, added: 1))
      _ = try? trust.addAddress(PeerAddress.parse("[fe80::2%eth0]:7878"), for: "server")
      if let reached = try? PeerAddress.parse("169.254.3.4:40123") {
        _ = trust.remember(reached, network: nil, at: 2, for: id)
      }
    }
    let archiveLine = Array(
      #"{"body":"milk\n","created":1700000000000,"id":"8e0f3d4a-1b2c-4d5e-8f90-123456789abc","origin":"x","private":false,"revision":2,"tags":["home"],"title":"groceries","updated":1700000000500}"#
        .utf8)
    let wrapped = WrappedKey(
      formatVersion: WrappedKey.version, protection: .afterFirstUnlock,
      parameters: ScryptParameters(n: 1024, r: 8, p: 1),
      salt: [UInt8](repeating: 1, count: WrappedKey.saltSize), idleTimeout: 0,
      keyID: [UInt8](repeating: 2, count: WrappedKey.keyIDSize),
      sealed: [UInt8](repeating: 3, count: AES256GCMKey.overhead + AES256GCMKey.keySize))
    return [
      "frame": [[5] + Frame(.hello, payload: hello).encoded() + Frame(.ping, payload: [1, 2]).encoded()],
      "peer-messages": [
        [0] + hello, [1] + PeerMessage.encode(PeerMessage.Goodbye(reason: "done")),
        [2] + PeerMessage.encode(DeliveryMessage.Deliver(id: "6a1f3c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", memo: content)),
        [3] + PeerMessage.encode(DeliveryMessage.Receipt(id: "e1", stored: "inbox", duplicate: false)),
        [4] + PeerMessage.encode(DeliveryMessage.Refuse(id: "e1", reason: .inboxFull)),
        [5] + DeliveryMessage.encode(content),
      ],
      "pairing": [[0x06] + pairFrames.guest, [0x07] + pairFrames.host],
      "sync-control": [
        [0] + syncHello,
        [1] + PeerMessage.encode(SyncMessage.Done(position: 12, knowledge: VersionVector([replica: 4, other: 3]))),
        [2]
          + PeerMessage.encode(
            SyncMessage.Ack(position: 12, outcome: .init(applied: 2, conflicts: 1, heldDeletes: 0, liveMemos: 9))),
        [3] + PeerMessage.encode(SyncMessage.Refuse(reason: .futureClock)),
      ],
      "sync-batch": [SyncBatchCodec.encode(.init(position: 12, revisions: [live, tombstone]))],
      "sync-records": [
        SyncRecordBatch.encode(
          .init(
            position: 12,
            records: [live, tombstone].map { revision in
              SyncRecord(
                notebook: .migrated, memo: revision.memo, dot: revision.head.dot, clock: revision.head.clock,
                keyID: String(repeating: "c", count: 32), sealed: [1] + RecordContent.encode(revision))
            }))
      ],
      "record-content": [RecordContent.encode(live), RecordContent.encode(tombstone)],
      "notebook-entries": [
        PeerMessage.encode(
          SyncMessage.Hello(
            replica: replica, knowledge: VersionVector(), cursor: nil, pending: 3,
            notebooks: [
              NotebookEntry(
                id: .migrated, heads: [OpID(bytes: Array(repeating: 7, count: 32))!], held: true,
                knowledge: VersionVector([replica: 4, other: 2]), cursor: FeedPosition(replica: other, position: 12)),
              NotebookEntry(
                id: NotebookID(String(repeating: "d", count: 32)) ?? .migrated,
                heads: [OpID(bytes: Array(repeating: 8, count: 32))!], held: false),
            ],
            keys: ["AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="])),
        PeerMessage.encode(
          SyncMessage.Done(
            position: 12, knowledge: VersionVector(), notebooks: [.migrated: VersionVector([replica: 4, other: 3])])),
      ],
      "sync-ops": syncOpsSeeds(),
      "txt-record": [
        (try? TXTRecordBytes.encode(["v": "1", "tag": "0011223344556677"])) ?? [],
        (try? TXTRecordBytes.encode(["v": "1", "pair": "1", "name": "laptop"])) ?? [],
      ],
      "avahi-records": [
        Array("v=1".utf8) + [0xFF] + Array("tag=0011223344556677".utf8) + [0xFF] + Array("fe80::1".utf8)
      ],
      "archive": [
        MemoArchive.magic + [1, 1, 15, 8, 1] + [UInt8](repeating: 0, count: 16),
        archiveLine + [0x0A] + archiveLine + [0xFF] + archiveLine,
      ],
      "markdown": [
        Array(
          "---\ntitle: Groceries\ntags: [home, food]\ncreated: 2026-01-01T10:00:00Z\nrevision: 3\nprivate: false\n---\n# Groceries\nmilk #weekly\n"
            .utf8)
      ],
      "key-files": [
        [0] + Array("MPDK".utf8) + [1, 0] + [UInt8](repeating: 4, count: 32),
        [0] + wrapped.encoded(magic: Array("MPDK".utf8)),
        [1] + Array("MPIK".utf8) + [3] + [UInt8](repeating: 5, count: 32 + 60),
      ],
      "consent-log": [consentLine + consentLine],
      "state-files": [
        [0] + Array(#"{"version":1,"failures":[1700000000000,1700000060000,1700000120000]}"#.utf8),
        [1]
          + Array(
            #"{"schema":1,"pid":1234,"state":"advertising","instance":"memo-peer-1a2b3c4d","port":7410,"interfaces":[],"updated":1700000000000}"#
              .utf8),
        [2] + Array(#"{"service_types":["_example._tcp"],"rotation_seconds":900,"notifications":false}"#.utf8),
      ],
      "trust-store": [(try? encoder.encode(trust)).map(Array.init) ?? []],
      "web-api": [
        [0] + Array(#"{"title":"t","body":"milk","tags":["home"],"private":false}"#.utf8),
        [1] + Array(#"{"text":"milk"}"#.utf8), [2] + Array(#"{"body":"eggs","pinned":true}"#.utf8),
        [3] + Array(#"{"keep":"both"}"#.utf8), [4] + Array(#"{"scope":"local-network","decision":"granted"}"#.utf8),
        [5] + Array(#"{"peer":"server","timeout":30}"#.utf8), [0x86] + Array("passphrase\n".utf8),
      ],
      "stored-clock": [VersionVector([replica: 4, other: 2]).encoded()],
      "notebook-op": notebookOpSeeds(),
      "deliver-batch": deliverBatchSeeds(content),
      "batch-receipt": batchReceiptSeeds(),
      "membership-log": membershipLogSeeds(),
      "signed-statements": signedStatementSeeds(),
      "history-fetch": historyFetchSeeds(),
    ]
  }

  /// One op of each kind, signed by a fixed key, after a genesis (itself the first seed).
  /// A signed revocation with a cut of two replicas and a signed purge, each behind the byte
  /// that chooses it.
  static func signedStatementSeeds() -> [[UInt8]] {
    guard let key = try? Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 5, count: 32))),
      let revoked = DeviceID(bytes: [UInt8](repeating: 7, count: 32)),
      let first = ReplicaID(String(repeating: "a", count: 32)),
      let second = ReplicaID(String(repeating: "b", count: 32)),
      let notebook = NotebookID(String(repeating: "c", count: 32)),
      let memo = MemoID(canonical: "8e0f3d4a-1b2c-4d5e-8f90-123456789abc")
    else { return [] }
    var revocation = Revocation(
      revokerKey: key.publicKey, revoked: revoked, made: 1_800_000_000_000, cut: [first: 3, second: 9], signature: [])
    revocation.signature = (try? key.signature(for: revocation.signedMessage)) ?? []
    var purge = Purge(authorKey: key.publicKey, notebook: notebook, memo: memo, made: 1_800_000_000_000, signature: [])
    purge.signature = (try? key.signature(for: purge.signedMessage)) ?? []
    return [[0] + revocation.encoded, [1] + purge.encoded]
  }

  /// A `sync-ops` frame carrying the ops of `notebookOpSeeds` in their log's order, and an
  /// empty one.
  static func syncOpsSeeds() -> [[UInt8]] {
    let ops = notebookOpSeeds()
    guard let notebook = ops.first.flatMap({ try? NotebookOp.decode($0) })?.notebook else { return [] }
    return [SyncOps.encode([SyncOps.Notebook(id: notebook, ops: ops)]), SyncOps.encode([])]
  }

  static func notebookOpSeeds() -> [[UInt8]] {
    let crypto = MembershipCrypto()
    guard let key = try? Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 3, count: 32))),
      let device = crypto.device(of: key.publicKey),
      let genesis = try? MembershipLog.genesis(nonce: [UInt8](repeating: 1, count: 16), signer: key, verifier: crypto)
    else { return [] }
    var log = MembershipLog(notebook: genesis.notebook, verifier: crypto)
    _ = try? log.insert(genesis)
    let box = [UInt8](repeating: 9, count: MembershipLimits.sealedKeyBytes)
    let keyID = [UInt8](repeating: 4, count: MembershipLimits.keyIDBytes)
    let replica = ReplicaID(String(repeating: "a", count: 32))!
    let ops = [
      genesis, try? log.share(device, as: .relay, signer: key),
      try? log.unshare(device, cut: [NotebookOp.CutEntry(replica: replica, sequence: 4)], signer: key),
      try? log.rotateKey(keyID: keyID, sealed: [device: box], signer: key),
      try? log.grant(device, keys: [keyID: box], signer: key),
      try? log.rename(keyID: keyID, sealedName: [1, 2, 3], signer: key),
      retiredPurge(in: log, signer: key),
    ]
    return ops.compactMap { $0?.encoded }
  }

  /// An op of the retired kind 7, which a log from before may still hold.
  private static func retiredPurge(in log: MembershipLog, signer key: Ed25519.SigningKey) -> NotebookOp? {
    var op = NotebookOp(
      notebook: log.notebook, author: key.publicKey, parents: log.heads,
      body: .retiredPurge(memo: MemoID("8e0f3d4a-1b2c-4d5e-8f90-123456789abc")!))
    guard let signature = try? key.signature(for: op.signedMessage) else { return nil }
    op.signature = signature
    return op
  }
}

extension FuzzTargets {
  /// Batches as a sender of delivery version 2 writes them: two entries (one with a sent
  /// revision, one without); one whose second memo is not a memo; one of another version.
  static func deliverBatchSeeds(_ content: DeliveryMessage.Content) -> [[UInt8]] {
    var plain = content
    plain.revision = nil
    let first = DeliveryMessage.Batch.encodedEntry(id: batchInFlight[0], memo: content)
    let second = DeliveryMessage.Batch.encodedEntry(id: batchInFlight[1], memo: plain)
    return [
      DeliveryMessage.Batch.payload(encodedEntries: [first, second]),
      DeliveryMessage.Batch.payload(encodedEntries: [first, Array(#"{"id":"e2","memo":{"title":1}}"#.utf8)]),
      DeliveryMessage.Batch.payload(encodedEntries: [second], version: 3),
    ]
  }

  /// Receipts for batches of one, two and four entries in flight (the first byte: how many,
  /// and that it is a `batch-receipt`), with every fate; and the goodbye of a peer that does
  /// not speak the version.
  static func batchReceiptSeeds() -> [[UInt8]] {
    typealias Result = DeliveryMessage.BatchResult
    let ids = batchInFlight
    return [
      [0]
        + PeerMessage.encode(
          DeliveryMessage.BatchReceipt(results: [Result(id: ids[0], fate: "refused", reason: "inbox-full")])),
      [1]
        + PeerMessage.encode(
          DeliveryMessage.BatchReceipt(results: [
            Result(id: ids[0], fate: "stored", stored: "inbox"), Result(id: ids[1], fate: "duplicate", stored: "memos"),
          ])),
      [3]
        + PeerMessage.encode(
          DeliveryMessage.BatchReceipt(results: [
            Result(id: ids[0], fate: "stored", stored: "memos"), Result(id: ids[1], fate: "refused", reason: "policy"),
            Result(id: ids[2], fate: "refused", reason: "too-large"),
            Result(id: ids[3], fate: "duplicate", stored: "inbox"),
          ])),
      [0x0C] + PeerMessage.encode(PeerMessage.Goodbye(reason: DeliveryExchange.unsupportedVersionReason)),
    ]
  }

  /// Logs of two devices, signed for real: a genesis by A, B shared as a member, a key
  /// sealed to both and granted to each at once, then A and B removing each other at once
  /// and a rename by A. The same ops for the real verifier (first byte 0), and for the lenient
  /// one with every op after the genesis re-parented (control bytes: onto the heads, the
  /// genesis alone, or earlier ops chosen by their bits).
  static func membershipLogSeeds() -> [[UInt8]] {
    let crypto = MembershipCrypto()
    guard let a = try? Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 3, count: 32))),
      let b = try? Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 5, count: 32))),
      let deviceA = crypto.device(of: a.publicKey), let deviceB = crypto.device(of: b.publicKey),
      let genesis = try? MembershipLog.genesis(nonce: [UInt8](repeating: 1, count: 16), signer: a, verifier: crypto)
    else { return [] }
    var log = MembershipLog(notebook: genesis.notebook, verifier: crypto)
    var ops: [NotebookOp] = []
    func add(_ op: NotebookOp?) {
      guard let op, (try? log.insert(op)) != nil else { return }
      ops.append(op)
    }
    add(genesis)
    add(try? log.share(deviceB, as: .member, signer: a))
    let box = [UInt8](repeating: 9, count: MembershipLimits.sealedKeyBytes)
    let keyID = [UInt8](repeating: 4, count: MembershipLimits.keyIDBytes)
    add(try? log.rotateKey(keyID: keyID, sealed: [deviceA: box, deviceB: box], signer: a))
    // Two grants made at once: siblings, whose order differs between arrival and id.
    let keyed = log
    add(try? keyed.grant(deviceB, keys: [keyID: box], signer: a))
    add(try? keyed.grant(deviceA, keys: [keyID: box], signer: a))
    let before = log
    let replica = ReplicaID(String(repeating: "a", count: 32))!
    add(try? before.unshare(deviceB, cut: [NotebookOp.CutEntry(replica: replica, sequence: 4)], signer: a))
    add(try? before.unshare(deviceA, cut: [], signer: b))
    add(try? before.rename(keyID: keyID, sealedName: [1, 2, 3], signer: a))
    func records(_ controls: [UInt8]) -> [UInt8] {
      zip(ops, [0] + controls).flatMap { op, control in
        [control, UInt8(op.encoded.count >> 8), UInt8(op.encoded.count & 0xFF)] + op.encoded
      }
    }
    return [[0] + records([0, 0, 0, 0, 0, 0, 0]), [1] + records([1, 3, 1, 0x0D, 0x01, 0x05, 0x01])]
  }
}

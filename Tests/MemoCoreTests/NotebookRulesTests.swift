import Foundation
import MemoCore
import MemoProtocol
import XCTest

/// The pure rules of notebooks: ids and names, what an offer may hold, whether a device
/// joins, accepts or declines one, and the record codec a relay stores.
final class NotebookRulesTests: XCTestCase {
  let notebook = NotebookID("00112233445566778899aabbccddeeff")!
  let keyID = "ffeeddccbbaa99887766554433221100"
  let replica: ReplicaID = "0123456789abcdef0123456789abcdef"

  func testIdsAndNames() {
    XCTAssertNil(NotebookID("00112233445566778899AABBCCDDEEFF"), "upper case is not the form written")
    XCTAssertNil(NotebookID("0011"))
    XCTAssertEqual(notebook.short, "00112233…")
    XCTAssertNotNil(NotebookID(NotebookID.migrated.rawValue))
    XCTAssertTrue(NotebookNames.isValid("family"))
    XCTAssertFalse(NotebookNames.isValid(""))
    XCTAssertFalse(NotebookNames.isValid(" family"))
    XCTAssertFalse(NotebookNames.isValid("-f"))
    XCTAssertFalse(NotebookNames.isValid("a\u{202E}b"), "no bidirectional override")
    XCTAssertFalse(NotebookNames.isValid(String(repeating: "x", count: 65)))
    XCTAssertEqual(NotebookNames.available("personal") { $0 == "personal" }, "personal (2)")
    XCTAssertEqual(NotebookNames.available("personal") { ["personal", "personal (2)"].contains($0) }, "personal (3)")
  }

  func offer(
    role: NotebookRole = .member, given: NotebookRole = .member, keys: [NotebookOffer.KeyMaterial]? = nil,
    id: String? = nil
  ) -> NotebookOffer {
    NotebookOffer(
      id: NotebookID(id ?? notebook.rawValue)!, role: role, given: given, knowledge: VersionVector([replica: 3]),
      cursor: FeedPosition(replica: replica, position: 9), name: "family", keys: keys)
  }

  var key: NotebookOffer.KeyMaterial {
    NotebookOffer.KeyMaterial(id: keyID, generation: 1, key: Data(repeating: 7, count: 32).base64EncodedString())
  }

  func testAnOfferIsCheckedFieldByField() throws {
    let good = try XCTUnwrap(try NotebookOffers.check([offer(keys: [key])]))
    XCTAssertEqual(good.first?.keys.map(\.id), [keyID])
    XCTAssertEqual(good.first?.knowledge, VersionVector([replica: 3]))
    var bad = offer(keys: [key])
    bad.id = "not an id"
    XCTAssertNil(try? NotebookOffers.check([bad]))
    bad = offer(keys: [NotebookOffer.KeyMaterial(id: keyID, generation: 1, key: "c2hvcnQ=")])
    XCTAssertNil(try? NotebookOffers.check([bad]), "a key of 5 bytes")
    bad = offer(keys: [NotebookOffer.KeyMaterial(id: "x", generation: 1, key: key.key)])
    XCTAssertNil(try? NotebookOffers.check([bad]), "a key id that is not one")
    bad = offer(keys: [NotebookOffer.KeyMaterial(id: keyID, generation: 0, key: key.key)])
    XCTAssertNil(try? NotebookOffers.check([bad]), "generation 0")
    XCTAssertNil(try? NotebookOffers.check([offer(given: .relay, keys: [key])]), "keys never go to a relay")
    XCTAssertNil(try? NotebookOffers.check([offer(role: .relay, keys: [key])]), "a relay has no keys to give")
    bad = offer()
    bad.role = "owner"
    XCTAssertNil(try? NotebookOffers.check([bad]))
    bad = offer()
    bad.knowledge = [replica.rawValue: UInt64.max]
    XCTAssertNil(try? NotebookOffers.check([bad]), "a number beyond 2^53")
    bad = offer()
    bad.name = "bad\u{7}name"
    XCTAssertNil(try? NotebookOffers.check([bad]))
    bad = offer()
    var nobody = NotebookOffer.Removal(device: DeviceID(bytes: Array(repeating: 9, count: 32))!, at: 1)
    nobody.device = "nobody"
    bad.removed = [nobody]
    XCTAssertNil(try? NotebookOffers.check([bad]), "a removal names a device ID")
    XCTAssertNil(try? NotebookOffers.check([offer(), offer()]), "the same notebook twice")
    XCTAssertNil(try? NotebookOffers.check(Array(repeating: offer(), count: NotebookOffers.maximumOffers + 1)))
  }

  func testWhatADeviceDoesWithAnOffer() throws {
    let member = try XCTUnwrap(try NotebookOffers.check([offer(keys: [key])]).first)
    let relayed = try XCTUnwrap(try NotebookOffers.check([offer(given: .relay)]).first)
    let keyless = try XCTUnwrap(try NotebookOffers.check([offer()]).first)
    let unknown = NotebookOffers.Local(role: nil, peerRole: nil)
    XCTAssertEqual(NotebookOffers.decide(member, local: unknown), .join(.member))
    XCTAssertEqual(NotebookOffers.decide(relayed, local: unknown), .join(.relay))
    XCTAssertEqual(NotebookOffers.decide(keyless, local: unknown), .decline(.noKey))
    // Known here: another member or relay of it is accepted; a relay that gets the keys
    // becomes a member.
    XCTAssertEqual(
      NotebookOffers.decide(relayed, local: .init(role: .member, peerRole: nil)), .accept(upgrade: false))
    XCTAssertEqual(NotebookOffers.decide(member, local: .init(role: .relay, peerRole: .member)), .accept(upgrade: true))
    // Never from a device this one unshared, nor a notebook deleted here.
    XCTAssertEqual(NotebookOffers.decide(member, local: .init(role: .member, peerRole: .removed)), .decline(.unshared))
    XCTAssertEqual(
      NotebookOffers.decide(member, local: .init(role: .member, isDeleted: true, peerRole: .member)), .decline(.deleted)
    )
    // Two people's migrated `personal` notebooks share an id: never joined by an offer alone.
    let migrated = try XCTUnwrap(try NotebookOffers.check([offer(keys: [key], id: NotebookID.migrated.rawValue)]).first)
    XCTAssertEqual(NotebookOffers.decide(migrated, local: .init(role: .member, peerRole: nil)), .decline(.migrated))
    XCTAssertEqual(
      NotebookOffers.decide(migrated, local: .init(role: .member, peerRole: .member)), .accept(upgrade: false))
    XCTAssertEqual(NotebookOffers.decide(migrated, local: unknown), .join(.member), "a device without one joins")
  }

  func record() -> SyncRecord {
    SyncRecord(
      notebook: notebook, memo: MemoID("3f2a9c1d-7b1e-4c3a-9f00-2d4e5f607182")!, dot: Dot(origin: replica, seq: 4),
      clock: VersionVector([replica: 4, "fedcba9876543210fedcba9876543210": 2]), keyID: keyID,
      sealed: Array(repeating: 0xAB, count: 61))
  }

  func testRecordBatchesRoundTripAndRefuseWhatIsMalformed() throws {
    let batch = SyncRecordBatch.Batch(position: 77, records: [record(), record()])
    let bytes = SyncRecordBatch.encode(batch)
    XCTAssertEqual(try SyncRecordBatch.decode(bytes), batch)
    XCTAssertEqual(bytes.count, 1 + 8 + 4 + 4 + 2 * SyncRecordBatch.encodedSize(record()))
    XCTAssertNil(try? SyncRecordBatch.decode(Array(bytes.dropLast())), "truncated")
    XCTAssertNil(try? SyncRecordBatch.decode(bytes + [0]), "bytes left over")
    var version = bytes
    version[0] = 1
    XCTAssertNil(try? SyncRecordBatch.decode(version), "a version-1 batch")
    var count = bytes
    count[16] = 0xFF
    XCTAssertNil(try? SyncRecordBatch.decode(count), "a count the bytes cannot hold")
    var broken = record()
    broken.clock = VersionVector([replica: 5])
    XCTAssertNil(
      try? SyncRecordBatch.decode(SyncRecordBatch.encode(.init(position: 1, records: [broken]))),
      "a clock that does not end at its own dot")
    broken = record()
    broken.keyID = "short"
    XCTAssertNil(try? SyncRecordBatch.decode(SyncRecordBatch.encode(.init(position: 1, records: [broken]))))
    broken = record()
    broken.sealed = Array(repeating: 1, count: SyncRecord.maximumSealedBytes + 1)
    XCTAssertNil(
      try? SyncRecordBatch.decode(SyncRecordBatch.encode(.init(position: 1, records: [broken]))), "too large")
  }

  /// The additional data binds every clear field: a relay that edits any of them makes the
  /// record fail to open.
  func testTheAdditionalDataBindsEveryClearField() {
    let original = record()
    var variants: [SyncRecord] = []
    var changed = original
    changed.notebook = NotebookID("ffffffffffffffffffffffffffffffff")!
    variants.append(changed)
    changed = original
    changed.memo = MemoID()
    variants.append(changed)
    changed = original
    changed.dot = Dot(origin: replica, seq: 5)
    variants.append(changed)
    changed = original
    changed.clock = original.clock.merging(VersionVector(["aa": 9]))
    variants.append(changed)
    changed = original
    changed.keyID = "00000000000000000000000000000000"
    variants.append(changed)
    for variant in variants { XCTAssertNotEqual(variant.associatedData, original.associatedData) }
  }

  func testRecordContentRoundTrips() throws {
    let revision = SyncRevision(
      memo: record().memo, head: HeadSummary(dot: record().dot, clock: record().clock, revision: 3, isDeleted: false),
      created: 10, updated: 20, isPrivate: true, title: "Title", body: "Body ✓", tags: ["a", "b"], notebook: notebook)
    let bytes = RecordContent.encode(revision)
    XCTAssertEqual(RecordContent.decode(bytes, of: record()), revision)
    XCTAssertNil(RecordContent.decode(bytes + [0], of: record()))
    var flags = bytes
    flags[30] = 0x80
    XCTAssertNil(RecordContent.decode(flags, of: record()), "unknown flag bits")
    // Padded to its bucket with zeros (a relay sees 256 bytes, not the memo's length).
    XCTAssertEqual(bytes.count, 256)
    var padding = bytes
    padding[padding.count - 1] = 1
    XCTAssertNil(RecordContent.decode(padding, of: record()), "padding that is not zero")
    XCTAssertEqual(
      RecordContent.decode(RecordContent.encodeUnpadded(revision), of: record()), revision,
      "version 1 (records from sync version 2) still opens")
    var long = revision
    long.body = String(repeating: "x", count: 3000)
    let padded = RecordContent.encode(long)
    XCTAssertEqual(padded.count, RecordContent.paddedSize(RecordContent.encodeUnpadded(long).count + 5))
    XCTAssertEqual(RecordContent.decode(padded, of: record()), long)
    XCTAssertNil(RecordContent.decode(padded + [0], of: record()), "one byte of padding more than Padmé's")
    XCTAssertNil(RecordContent.decode(Array(padded.dropLast()), of: record()), "one byte less")
    long.body = ""
    XCTAssertEqual(RecordContent.encode(long).count, 256, "an emptied memo looks like any short one")
  }

  /// Padmé: at least the content, at most 12% more above the 256-byte floor, the same for
  /// every length between two sizes, and few sizes in all.
  func testPaddedSizesArePadmes() {
    XCTAssertEqual(RecordContent.paddedSize(1), 256)
    XCTAssertEqual(RecordContent.paddedSize(256), 256)
    XCTAssertEqual(RecordContent.paddedSize(257), 272)
    XCTAssertEqual(RecordContent.paddedSize(1100), 1152)
    XCTAssertEqual(RecordContent.paddedSize(65536), 65536)
    var sizes = Set<Int>()
    var previous = 0
    for needed in 1...70_000 {
      let size = RecordContent.paddedSize(needed)
      XCTAssertGreaterThanOrEqual(size, needed)
      XCTAssertGreaterThanOrEqual(size, previous, "never smaller for more content")
      if needed > 256 { XCTAssertLessThanOrEqual(Double(size), Double(needed) * 1.12, "\(needed)") }
      XCTAssertEqual(RecordContent.paddedSize(size), size, "a padded size pads to itself")
      sizes.insert(size)
      previous = size
    }
    XCTAssertLessThan(sizes.count, 300, "a relay tells apart few lengths (\(sizes.count))")
    let maximum = RecordContent.maximumPaddedSize
    XCTAssertEqual(RecordContent.paddedSize(maximum - 1), maximum)
    XCTAssertEqual(RecordContent.paddedSize(maximum + 1), maximum + 1, "too long for any record: unpadded")
  }

  func testBatchesCarrySignaturesAndBindings() throws {
    var signed = record()
    signed.signature = Array(repeating: 7, count: 64)
    let binding = ReplicaBinding(
      replica: replica, publicKey: Array(repeating: 1, count: 32), nonce: Array(repeating: 2, count: 16),
      signature: Array(repeating: 3, count: 64))
    let legacy = ReplicaBinding(
      replica: replica, publicKey: Array(repeating: 1, count: 32), nonce: [], signature: Array(repeating: 3, count: 64))
    let batch = SyncRecordBatch.Batch(position: 3, bindings: [binding, legacy], records: [signed, record()])
    XCTAssertEqual(try SyncRecordBatch.decode(SyncRecordBatch.encode(batch)), batch)
    var bad = binding
    bad.nonce = [1, 2, 3]
    XCTAssertNil(
      try? SyncRecordBatch.decode(SyncRecordBatch.encode(.init(position: 1, bindings: [bad], records: []))),
      "a nonce of another size")
    var short = record()
    short.signature = [1, 2, 3]
    let encoded = SyncRecordBatch.encode(.init(position: 1, records: [short]))
    XCTAssertNil(try? SyncRecordBatch.decode(encoded), "a signature that is not 64 bytes")
  }
}

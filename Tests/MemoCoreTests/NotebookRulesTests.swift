import Foundation
import MemoCore
import MemoProtocol
import XCTest

/// The pure rules of notebooks: ids and names, what a hello may say of a notebook, and the
/// record codec a relay stores.
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

  let head = OpID(bytes: Array(repeating: 0x5A, count: 32))!

  func entry(held: Bool = true) -> NotebookEntry {
    NotebookEntry(
      id: notebook, heads: [head], held: held, knowledge: VersionVector([replica: 3]),
      cursor: FeedPosition(replica: replica, position: 9))
  }

  /// A version-3 hello lists notebooks by id, log heads, and (held ones) knowledge and
  /// cursor: no role, no name, no key — the log says those — and every field is checked.
  func testANotebookEntryIsCheckedFieldByField() throws {
    let good = try XCTUnwrap(try NotebookEntries.check([entry()]).first)
    XCTAssertEqual(good.heads, [head])
    XCTAssertEqual(good.knowledge, VersionVector([replica: 3]))
    XCTAssertEqual(good.cursor?.position, 9)
    let invited = try XCTUnwrap(try NotebookEntries.check([entry(held: false)]).first)
    XCTAssertFalse(invited.held)
    XCTAssertEqual(invited.knowledge, VersionVector(), "an invitation claims no knowledge")
    var bad = entry()
    bad.id = "not an id"
    XCTAssertNil(try? NotebookEntries.check([bad]))
    bad = entry()
    bad.id = notebook.rawValue.uppercased()
    XCTAssertNil(try? NotebookEntries.check([bad]), "one spelling of an id")
    bad = entry()
    bad.heads = [head.description.uppercased()]
    XCTAssertNil(try? NotebookEntries.check([bad]), "a head in another spelling")
    bad.heads = [String(head.description.dropLast(2))]
    XCTAssertNil(try? NotebookEntries.check([bad]), "a head of 31 bytes")
    bad.heads = [head.description, head.description]
    XCTAssertNil(try? NotebookEntries.check([bad]), "a head twice")
    bad.heads = Array(repeating: head.description, count: NotebookEntries.maximumHeads + 1)
    XCTAssertNil(try? NotebookEntries.check([bad]), "more heads than allowed")
    bad = entry()
    bad.knowledge = [replica.rawValue: UInt64.max]
    XCTAssertNil(try? NotebookEntries.check([bad]), "a number beyond 2^53")
    bad = entry(held: false)
    bad.knowledge = [replica.rawValue: 1]
    XCTAssertNil(try? NotebookEntries.check([bad]), "knowledge of a notebook the sender does not hold")
    XCTAssertNil(try? NotebookEntries.check([entry(), entry()]), "the same notebook twice")
    XCTAssertNil(try? NotebookEntries.check(Array(repeating: entry(), count: NotebookEntries.maximumEntries + 1)))
    // Keys: 32 bytes of base64 each, at most `maximumKeys`.
    let key = Data(repeating: 7, count: 32).base64EncodedString()
    XCTAssertEqual(try NotebookEntries.checkedKeys([key]), [Array(repeating: 7, count: 32)])
    XCTAssertNil(try? NotebookEntries.checkedKeys(["c2hvcnQ="]), "a key of 5 bytes")
    XCTAssertNil(try? NotebookEntries.checkedKeys(["not base64!"]))
    XCTAssertNil(try? NotebookEntries.checkedKeys(Array(repeating: key, count: NotebookEntries.maximumKeys + 1)))
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

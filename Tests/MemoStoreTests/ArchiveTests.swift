import Foundation
import MemoCore
import MemoCrypto
import MemoSystem
import XCTest

@testable import MemoStore
@_spi(Fuzzing) @testable import MemoTransfer

final class ArchiveTests: XCTestCase {
  let passphrase = SecureBytes(copying: Array("correct horse battery".utf8))
  let fast = ScryptParameters(n: 1 << 10, r: 8, p: 1)

  /// Exports `store` to bytes with the given passphrase.
  func export(_ store: MemoStore, passphrase: SecureBytes) throws -> [UInt8] {
    let path = NSTemporaryDirectory() + "memo-peer-archive-\(UUID().uuidString)"
    defer { unlink(path) }
    let file = try AtomicFile(path: path)
    let writer = try MemoArchiveWriter(fd: file.fd, destination: path, passphrase: passphrase, parameters: fast)
    try store.forEachMemo { try writer.append($0) }
    try writer.finish()
    try file.commit()
    return try PrivateFiles.read(path, limit: 1 << 30)
  }

  func read(_ bytes: [UInt8], passphrase: SecureBytes) throws -> [Memo] {
    var memos: [Memo] = []
    try MemoArchiveReader(bytes: bytes, source: "archive", passphrase: passphrase).forEachMemo { memos.append($0) }
    return memos
  }

  func testRoundTripAcrossChunksIntoAnotherNode() throws {
    let sourceNode = try TemporaryNode()
    let source = try sourceNode.open()
    let body = String(repeating: "lorem ipsum ", count: 1500)  // ~18 KiB: several chunks
    let drafts = (0..<20).map { MemoDraft(title: "memo \($0)", body: body + "\($0)", tags: ["t\($0 % 3)"]) }
    try source.createMany(drafts, now: 42)
    let bytes = try export(source, passphrase: passphrase)
    XCTAssertFalse(bytes.contains(bytes: Array("lorem ipsum".utf8)))
    let deviceKey = try PrivateFiles.read(source.paths.deviceKeyPath, limit: 64)
    XCTAssertFalse(bytes.contains(bytes: Array(deviceKey[6...])), "the device key is never exported")

    let targetNode = try TemporaryNode()
    let target = try targetNode.open()
    var outcomes: [MemoStore.ImportOutcome] = []
    try target.batch {
      for memo in try read(bytes, passphrase: passphrase) { outcomes.append(try target.importMemo(memo)) }
    }
    XCTAssertEqual(outcomes, Array(repeating: .added, count: 20))
    var original: [Memo] = []
    try source.forEachMemo { original.append($0) }
    var imported: [Memo] = []
    try target.forEachMemo { imported.append($0) }
    // The content and history numbers travel; the sync identity (dot, clock) is the
    // importing replica's own, and so is the notebook (its default one) and the signature
    // (the importing device signs what it stores).
    let targetNotebook = try target.defaultNotebook().id
    XCTAssertEqual(imported.map(\.notebook), Array(repeating: targetNotebook, count: 20))
    func content(_ memo: Memo) -> MemoSummary {
      var summary = memo.summary
      summary.notebook = nil
      summary.author = nil
      return summary
    }
    XCTAssertEqual(imported.map(content), original.map(content))
    XCTAssertEqual(Set(imported.map(\.summary.author)), [target.ownDeviceID()])
    XCTAssertEqual(imported.map(\.body), original.map(\.body))
    XCTAssertEqual(
      try read(bytes, passphrase: passphrase).map { try target.importMemo($0) }.filter { $0 != .unchanged }, [])
  }

  func testWrongPassphraseTruncationAndTamperingAreDetected() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    try store.createMany((0..<30).map { MemoDraft(title: "m\($0)", body: String(repeating: "x", count: 5000)) }, now: 1)
    let bytes = try export(store, passphrase: passphrase)
    assertMemoError(.passphrase, try read(bytes, passphrase: SecureBytes(copying: Array("wrong passphrase".utf8))))
    // Cut anywhere: mid-chunk, or exactly at a chunk boundary.
    for cut in [bytes.count - 1, bytes.count / 2, MemoArchive.headerSize + 2] {
      assertMemoError(.archive, try read(Array(bytes.prefix(cut)), passphrase: passphrase)) {
        XCTAssertTrue($0.message.contains("truncated"), "cut at \(cut): \($0.message)")
      }
    }
    let firstChunkEnd =
      MemoArchive.headerSize + 4
      + Int(bytes[MemoArchive.headerSize..<(MemoArchive.headerSize + 4)].reduce(0) { $0 << 8 | UInt32($1) })
    assertMemoError(.archive, try read(Array(bytes.prefix(firstChunkEnd)), passphrase: passphrase)) {
      XCTAssertTrue($0.message.contains("truncated"), $0.message)
    }
    var tampered = bytes
    tampered[bytes.count - 40] ^= 1
    assertMemoError(.archive, try read(tampered, passphrase: passphrase))
    assertMemoError(.archive, try read(Array("not an archive at all, sorry".utf8), passphrase: passphrase))
    // scrypt costs of 4 GiB (N = 2^20, r = 32, p = 1; accepted before): refused by name,
    // before anything is derived.
    var costly = bytes
    costly[10] = 20
    costly[11] = 32
    assertMemoError(.archive, try read(costly, passphrase: passphrase)) {
      XCTAssertTrue($0.message.contains("asks scrypt for 4096 MiB"), $0.message)
      XCTAssertTrue($0.message.contains("memo-peer allows at most 256 MiB"), $0.message)
    }
  }

  /// An archive of one chunk holding `lines` (JSON Lines), sealed as the writer seals.
  func archive(of lines: [String], passphrase: SecureBytes) throws -> [UInt8] {
    let header = MemoArchive.header(salt: Array(repeating: 7, count: 16), parameters: fast)
    let key = try MemoArchive.deriveKey(passphrase, salt: Array(repeating: 7, count: 16), parameters: fast)
    let plaintext = Array(lines.map { $0 + "\n" }.joined().utf8)
    let sealed = try key.seal(
      plaintext, associatedData: MemoArchive.associatedData(header: header, index: 0, final: true))
    return header + withUnsafeBytes(of: UInt32(sealed.count).bigEndian, Array.init) + sealed
  }

  func testAnOriginThatIsNeitherAReplicaNorADeviceIsDamage() throws {
    let device = DeviceID(bytes: Array(repeating: 9, count: 32))!
    func line(_ origin: String) -> String {
      #"{"body":"b","created":1,"id":"3f2a9c1d-0000-4000-8000-000000000000","origin":"\#(origin)","#
        + #""private":false,"revision":1,"tags":[],"title":"t","updated":2}"#
    }
    let replica = "0123456789abcdef0123456789abcdef"
    XCTAssertEqual(
      try read(archive(of: [line(replica)], passphrase: passphrase), passphrase: passphrase).map(\.origin),
      [.replica(ReplicaID(replica)!)])
    XCTAssertEqual(
      try read(archive(of: [line(device.compact)], passphrase: passphrase), passphrase: passphrase).map(\.origin),
      [.device(device)])
    for origin in ["r", device.description, replica.uppercased()] {
      assertMemoError(.archive, try read(archive(of: [line(origin)], passphrase: passphrase), passphrase: passphrase)) {
        XCTAssertTrue($0.message.contains("damaged"), "\(origin): \($0.message)")
      }
    }
  }
}

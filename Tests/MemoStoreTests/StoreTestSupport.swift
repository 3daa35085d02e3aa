import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore

/// A fresh node home in a temporary directory, removed at the end of the test.
final class TemporaryNode {
  let root: String
  let paths: NodePaths
  /// The node's device ID: its identity key's (made on first use), as its revisions are
  /// signed with; the in-memory channel presents it in syncs.
  lazy var device: DeviceID = (try? NodeIdentity.deviceID(paths: paths)) ?? TestDevices.id(named: root)
  /// The node's side when another node syncs with it.
  lazy var answerer = SyncAnswerSide(paths: paths, device: device)

  /// `directory`: where to make it (default: the temporary directory).
  init(in directory: String? = nil) throws {
    root = try PrivateFiles.makeUniqueDirectory(in: directory ?? NSTemporaryDirectory(), prefix: "memo-peer-test")
    paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root])
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  func open() throws -> MemoStore { try MemoStore.open(paths: paths) }

  /// Every byte of every file in the data directory (database, WAL, shared memory).
  func rawDataBytes() throws -> [UInt8] {
    var bytes: [UInt8] = []
    for name in try FileManager.default.contentsOfDirectory(atPath: paths.dataDirectory) {
      bytes += Array(try Data(contentsOf: URL(fileURLWithPath: paths.dataDirectory + "/" + name)))
    }
    return bytes
  }

  /// Every file under the node (name and bytes), to prove an operation changed nothing.
  func snapshot() throws -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    let enumerator = FileManager.default.enumerator(atPath: root)
    while let name = enumerator?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      let path = root + "/" + name
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
        continue
      }
      files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
    return files
  }

  /// The raw (sealed) bytes of one memo column.
  func column(_ name: String, of id: MemoID) throws -> [UInt8] {
    let db = try SQLiteConnection(path: paths.databasePath, create: false)
    let read = try db.prepare("SELECT \(name) FROM memos WHERE id = ?")
    try read.bind(1, id.rawValue)
    guard try read.step() else { throw MemoPeerError(.notFound, "no row") }
    return read.blob(0)
  }

  /// Overwrites one memo column with raw bytes, as a disk fault or an attacker would.
  func setColumn(_ name: String, of id: MemoID, to bytes: [UInt8]) throws {
    let db = try SQLiteConnection(path: paths.databasePath, create: false)
    let write = try db.prepare("UPDATE memos SET \(name) = ? WHERE id = ?")
    try write.bind([.blob(bytes), .text(id.rawValue)])
    try write.step()
  }

  /// Runs raw SQL on the database, as an attacker or a disk fault would change it.
  func tamper(_ sql: String) throws {
    let db = try SQLiteConnection(path: paths.databasePath, create: false)
    try db.execute(sql)
  }
}

func assertMemoError<T>(
  _ code: MemoPeerError.Code, _ expression: @autoclosure () throws -> T, file: StaticString = #filePath,
  line: UInt = #line, _ check: (MemoPeerError) -> Void = { _ in }
) {
  XCTAssertThrowsError(try expression(), file: file, line: line) { error in
    guard let error = error as? MemoPeerError else {
      return XCTFail("expected MemoPeerError(\(code)), got \(type(of: error))", file: file, line: line)
    }
    XCTAssertEqual(error.code, code, error.message, file: file, line: line)
    check(error)
  }
}

extension [UInt8] {
  /// Whether `needle` occurs anywhere in these bytes, found with the C library's `memchr` and
  /// `memcmp`: a slice-by-slice comparison took seconds per megabyte in a debug build, and the
  /// canary checks scan whole databases many times.
  func contains(bytes needle: [UInt8]) -> Bool {
    guard let first = needle.first, count >= needle.count else { return false }
    return withUnsafeBytes { haystack in
      needle.withUnsafeBytes { needle in
        guard let base = haystack.baseAddress, let wanted = needle.baseAddress else { return false }
        var offset = 0
        let last = haystack.count - needle.count
        while offset <= last, let found = memchr(base + offset, Int32(first), last - offset + 1) {
          let at = base.distance(to: UnsafeRawPointer(found))
          if memcmp(base + at, wanted, needle.count) == 0 { return true }
          offset = at + 1
        }
        return false
      }
    }
  }
}

/// Migration fixtures: a database of an older schema as SQL text plus the keys that sealed
/// it (device, and from schema 3 listing), committed under Fixtures/schema-vN. `dump` writes one; `load` rebuilds it.
enum SchemaFixture {
  static func directory(version: Int) throws -> String {
    let url = try XCTUnwrap(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
    return url.path + "/schema-v\(version)"
  }

  /// Rebuilds the fixture's database and key in `node`.
  static func load(version: Int, into node: TemporaryNode) throws {
    let source = try directory(version: version)
    let sql = try String(contentsOfFile: source + "/memos.sql", encoding: .utf8)
    let keyHex = try String(contentsOfFile: source + "/device.key.hex", encoding: .utf8)
    try PrivateFiles.ensureDirectory(node.paths.dataDirectory, role: "data directory")
    try PrivateFiles.ensureDirectory(node.paths.keyDirectory, role: "key directory")
    let key = try hexBytes(keyHex.trimmingCharacters(in: .whitespacesAndNewlines))
    try PrivateFiles.writeAtomically(Array("MPDK".utf8) + [1, 0] + key, to: node.paths.deviceKeyPath)
    // Schema 3 and later: the listing key too.
    if let listingHex = try? String(contentsOfFile: source + "/listing.key.hex", encoding: .utf8) {
      let listing = try hexBytes(listingHex.trimmingCharacters(in: .whitespacesAndNewlines))
      try PrivateFiles.writeAtomically(Array("MPLK".utf8) + [1, 0] + listing, to: node.paths.listingKeyPath)
    }
    let fd = open(node.paths.databasePath, O_CREAT | O_WRONLY, 0o600)
    close(fd)
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    try db.execute(sql)
  }

  /// Writes `node`'s database as SQL text: pragmas, schema, then every row with blobs in hex.
  static func dump(_ node: TemporaryNode, to directory: String) throws {
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    var lines = [
      "PRAGMA application_id = \(try db.scalarInt("PRAGMA application_id"));",
      "PRAGMA user_version = \(try db.scalarInt("PRAGMA user_version"));",
      "BEGIN;",
    ]
    let schema = try db.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
    var tables: [String] = []
    while try schema.step() {
      lines.append(schema.text(1) + ";")
      if schema.text(1).hasPrefix("CREATE TABLE") { tables.append(schema.text(0)) }
    }
    for table in tables {
      let rows = try db.prepare("SELECT * FROM \(table) ORDER BY 1")
      while try rows.step() {
        let count = rows.columnCount
        let values = (0..<count).map { column -> String in
          if rows.isNull(column) { return "NULL" }
          switch rows.columnType(column) {
          case 1: return String(rows.int64(column))
          case 3: return "'" + rows.text(column).replacingOccurrences(of: "'", with: "''") + "'"
          default: return "X'" + rows.blob(column).map { String(format: "%02x", $0) }.joined() + "'"
          }
        }
        lines.append("INSERT INTO \(table) VALUES (\(values.joined(separator: ", ")));")
      }
    }
    lines.append("COMMIT;")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try (lines.joined(separator: "\n") + "\n").write(
      toFile: directory + "/memos.sql", atomically: true, encoding: .utf8)
    for (path, name) in [(node.paths.deviceKeyPath, "device"), (node.paths.listingKeyPath, "listing")]
    where PrivateFiles.exists(path) {
      let key = try PrivateFiles.read(path, limit: 64)
      try (key[6...].map { String(format: "%02x", $0) }.joined() + "\n")
        .write(toFile: directory + "/\(name).key.hex", atomically: true, encoding: .utf8)
    }
  }

  static func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    return try stride(from: 0, to: digits.count, by: 2).map { index in
      guard let byte = UInt8(String(decoding: digits[index..<(index + 2)], as: UTF8.self), radix: 16) else {
        throw MemoPeerError(.io, "bad hex in fixture")
      }
      return byte
    }
  }
}

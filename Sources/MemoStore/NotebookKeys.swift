import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// One generation of a notebook's key, opened: 256 bits from the CSPRNG, in locked memory.
/// A notebook has one generation per device that made one (each store migrated from schema
/// 4 made its own for `personal`) and one more per unshare (rotation); records name the
/// generation that sealed them, and new records use the newest (`NotebookKeyring.current`).
struct NotebookKey {
  /// 16 random bytes, hex: names the key in records, independently of the generation.
  let id: String
  let generation: Int64
  let material: SecureBytes
  let sealer: AES256GCMKey

  /// The order of generations: the higher generation, then the higher id, is newer; every
  /// member that holds the same keys picks the same current one.
  static func isOlder(_ lhs: NotebookKey, _ rhs: NotebookKey) -> Bool {
    (lhs.generation, lhs.id) < (rhs.generation, rhs.id)
  }
}

/// The keys of one notebook this device is a member of.
struct NotebookKeyring {
  let notebook: NotebookID
  private(set) var keys: [String: NotebookKey]
  /// The generation the notebook's log makes current (`notebooks.current_key`), if held.
  let preferred: String?
  /// Whether the notebook has a membership log here: then only the log's current key
  /// seals, and a member that has not received it yet cannot write.
  let logged: Bool

  init(notebook: NotebookID, keys: [NotebookKey], preferred: String? = nil, logged: Bool = false) {
    self.notebook = notebook
    self.keys = Dictionary(keys.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    self.preferred = preferred
    self.logged = logged
  }

  /// The generation new records are sealed with: the log's current one; for a notebook
  /// without a log (from before version 3, before its genesis is signed), the newest held.
  var current: NotebookKey? {
    if let preferred, let key = keys[preferred] { return key }
    return logged ? nil : keys.values.max(by: NotebookKey.isOlder)
  }

  /// The newest generation number held (0 without any).
  var newestGeneration: Int64 { keys.values.map(\.generation).max() ?? 0 }

  subscript(id: String) -> NotebookKey? { keys[id] }
}

/// The opened keyrings of a store, kept while it is open (a store is one per thread): a
/// sync seals and opens thousands of records with a handful of keys. Another connection
/// (the daemon's, a command's) may add keys meanwhile: the cache holds only while SQLite's
/// `data_version` of this connection stays the same.
final class NotebookKeyCache {
  var rings: [NotebookID: NotebookKeyring] = [:]
  var dataVersion: Int64 = -1
}

extension MemoStore {
  /// The keyring of a notebook this device is a member of (empty for a relayed one). Needs
  /// the device key (the keys are sealed under it).
  func keyring(_ notebook: NotebookID) throws -> NotebookKeyring {
    // Asked once per record a sync seals or opens: a cached statement, not a new one each time.
    let version = try sql { try db.withCached("PRAGMA data_version") { try $0.step() ? $0.int64(0) : 0 } }
    if version != notebookKeys.dataVersion {
      notebookKeys.rings = [:]
      notebookKeys.dataVersion = version
    }
    if let ring = notebookKeys.rings[notebook] { return ring }
    let sealer = try sealer()
    let ring = try sql {
      let state = try db.prepare(
        "SELECT current_key, EXISTS (SELECT 1 FROM notebook_ops WHERE notebook = ?1) FROM notebooks WHERE id = ?1")
      try state.bind(1, notebook)
      let hasRow = try state.step()
      let preferred = hasRow && !state.isNull(0) ? state.text(0) : nil
      let logged = hasRow && state.int64(1) != 0
      let read = try db.prepare("SELECT key_id, generation, key FROM notebook_keys WHERE notebook = ?")
      try read.bind(1, notebook)
      var keys: [NotebookKey] = []
      while try read.step() {
        let id = read.text(0)
        let generation = read.int64(1)
        var raw: [UInt8]
        do {
          raw = try sealer.open(
            read.blob(2),
            associatedData: SealingContext.notebookKey(notebook: notebook, keyID: id, generation: generation))
        } catch {
          throw MemoPeerError(
            .integrity, "a key of notebook \(notebook.short) failed the integrity check (tampered or moved)",
            hint: "a member of the notebook can share it with this device again", diagnostics: "\(error)")
        }
        defer { SecureBytes.wipe(&raw) }
        keys.append(try Self.notebookKey(id: id, generation: generation, raw: raw))
      }
      return NotebookKeyring(notebook: notebook, keys: keys, preferred: preferred, logged: logged)
    }
    notebookKeys.rings[notebook] = ring
    return ring
  }

  static func notebookKey(id: String, generation: Int64, raw: [UInt8]) throws -> NotebookKey {
    let material = SecureBytes(copying: raw)
    do {
      return NotebookKey(
        id: id, generation: generation, material: material, sealer: try AES256GCMKey(material))
    } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to load a notebook key", diagnostics: "\(error)")
    }
  }

  /// Stores one key generation (made here or delivered by a member), sealed under the device
  /// key, unless one with its id is already here. Runs inside the caller's transaction.
  func storeNotebookKey(
    _ notebook: NotebookID, id: String, generation: Int64, raw: [UInt8], now: Timestamp
  ) throws {
    let sealed: [UInt8]
    do {
      sealed = try sealer().seal(
        raw, associatedData: SealingContext.notebookKey(notebook: notebook, keyID: id, generation: generation))
    } catch let error as MemoPeerError {
      throw error
    } catch {
      throw MemoPeerError(.crypto, "sealing a notebook key failed", diagnostics: "\(error)")
    }
    try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO notebook_keys (notebook, key_id, generation, key, created) VALUES (?, ?, ?, ?, ?)")
      try insert.bind([
        .id(notebook), .text(id), .integer(generation), .blob(sealed), .integer(now),
      ])
      _ = try insert.step()
    }
    notebookKeys.rings[notebook] = nil
  }
}

extension Optional {
  /// The value, or a storage error: for values a statement just wrote.
  func unwrapOrThrow() throws -> Wrapped {
    guard let self else { throw MemoPeerError(.storage, "a value just written could not be read back") }
    return self
  }
}

extension MemoStore {
  /// The current key of a notebook this device is a member of, as raw bytes in ordinary
  /// memory, for test support only (MemoTestSupport's scripted peer seals records as a
  /// member would): `@_spi(Testing)`, never called by the product.
  @_spi(Testing) public func currentNotebookKeyForTesting(_ notebook: NotebookID) throws -> (id: String, key: [UInt8])?
  {
    guard let key = try keyring(notebook).current else { return nil }
    return (key.id, key.material.withUnsafeBytes { Array($0) })
  }
}

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

  init(notebook: NotebookID, keys: [NotebookKey]) {
    self.notebook = notebook
    self.keys = Dictionary(keys.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
  }

  /// The generation new records are sealed with.
  var current: NotebookKey? { keys.values.max(by: NotebookKey.isOlder) }

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
      let read = try db.prepare("SELECT key_id, generation, key FROM notebook_keys WHERE notebook = ?")
      try read.bind(1, notebook.rawValue)
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
      return NotebookKeyring(notebook: notebook, keys: keys)
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

  /// Makes a new generation of `notebook`'s key from the CSPRNG, sealed under the device
  /// key. Runs inside the caller's transaction.
  @discardableResult
  func makeNotebookKey(_ notebook: NotebookID, now: Timestamp) throws -> NotebookKey {
    let generation = try keyring(notebook).newestGeneration + 1
    let raw: SecureBytes
    let id: String
    do {
      raw = try SecureBytes.random(count: AES256GCMKey.keySize)
      id = Hex.encode(try SystemRandom.bytes(16))
    } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for a notebook key", diagnostics: "\(error)")
    }
    var plain = raw.withUnsafeBytes { Array($0) }
    defer { SecureBytes.wipe(&plain) }
    try storeNotebookKey(notebook, id: id, generation: generation, raw: plain, now: now)
    return try keyring(notebook)[id].unwrapOrThrow()
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
        .text(notebook.rawValue), .text(id), .integer(generation), .blob(sealed), .integer(now),
      ])
      _ = try insert.step()
    }
    notebookKeys.rings[notebook] = nil
  }

  /// The key generations of `notebook` as they travel to a member (`sync-hello`). The key
  /// bytes become base64 text here, inside the process only until the TLS connection sends
  /// them.
  func keyMaterial(_ notebook: NotebookID) throws -> [NotebookOffer.KeyMaterial] {
    try keyring(notebook).keys.values.sorted(by: NotebookKey.isOlder).map { key in
      NotebookOffer.KeyMaterial(
        id: key.id, generation: key.generation,
        key: key.material.withUnsafeBytes { Data($0).base64EncodedString() })
    }
  }
}

extension Optional {
  /// The value, or a storage error: for values a statement just wrote.
  func unwrapOrThrow() throws -> Wrapped {
    guard let self else { throw MemoPeerError(.storage, "a value just written could not be read back") }
    return self
  }
}

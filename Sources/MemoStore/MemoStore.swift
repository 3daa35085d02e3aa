import MemoCore
import MemoCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// The encrypted memo store of one node: an SQLite database whose memo content (title, body,
/// tags), outbox and inbox payloads are sealed with AES-256-GCM under the device key.
///
/// Opening checks, in order: directory permissions, that the file is a memo-peer database
/// of a version we know (foreign or damaged files are never modified), that the device key
/// opens it, then runs forward migrations. Not Sendable: one store per thread or actor.
public final class MemoStore {
  public let paths: NodePaths
  /// A random id for this replica, made at creation; the origin of local revisions.
  public let replicaID: String
  /// The schema version after opening (always `Schema.currentVersion`).
  public let schemaVersion: Int
  let db: SQLiteConnection
  let sealer: AES256GCMKey
  let logger: Logger

  private init(paths: NodePaths, db: SQLiteConnection, sealer: AES256GCMKey, replicaID: String, logger: Logger) {
    self.paths = paths
    self.db = db
    self.sealer = sealer
    self.replicaID = replicaID
    self.schemaVersion = Schema.currentVersion
    self.logger = logger
  }

  /// Opens the node's store, creating the key and database on first use.
  public static func open(paths: NodePaths, logger: Logger = .disabled) throws -> MemoStore {
    try open(paths: paths, logger: logger, schemaVersion: Schema.currentVersion)
  }

  /// Opens at an older schema version: only for building migration fixtures in tests.
  public static func openForFixture(paths: NodePaths, schemaVersion: Int) throws -> MemoStore {
    try open(paths: paths, logger: .disabled, schemaVersion: schemaVersion)
  }

  private static func open(paths: NodePaths, logger: Logger, schemaVersion target: Int) throws -> MemoStore {
    let path = paths.databasePath
    try PrivateFiles.ensureDirectory(paths.dataDirectory, role: "data directory")
    if !PrivateFiles.exists(path) {
      // Create the file ourselves so it is 0600 from its first byte; SQLite gives the
      // -wal and -shm files the same mode.
      let fd = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
      guard fd >= 0 || errno == EEXIST else { throw PrivateFiles.ioError(errno, "cannot create \(path)") }
      if fd >= 0 { close(fd) }
    }
    return try translatingSQLiteErrors(path) {
      let db = try SQLiteConnection(path: path, create: false)
      // Before the first read: after a kill -9 another process may be recovering the WAL.
      try db.execute("PRAGMA busy_timeout = 5000")
      let version = try identify(db, path: path)
      try configure(db)
      let isNew = version == 0
      let key: SecureBytes
      if try isNew || !hasKeyCheck(db) {
        key = try KeyFile.device(paths).loadOrCreate()
      } else {
        guard PrivateFiles.exists(paths.deviceKeyPath) else {
          throw MemoPeerError(
            .keyMissing, "the device key \(paths.deviceKeyPath) is missing, so the memos in \(path) cannot be read",
            hint: "restore the key file from this device; a data directory copied from another device "
              + "cannot be opened here (move memos with `memo-peer export` and `import`)")
        }
        key = try KeyFile.device(paths).load()
      }
      let sealer: AES256GCMKey
      do { sealer = try AES256GCMKey(key) } catch {
        throw MemoPeerError(.crypto, "the cryptographic library failed to load the key", diagnostics: "\(error)")
      }
      if isNew { try db.execute("PRAGMA application_id = \(Schema.applicationID)") }
      if version < target {
        logger.info("migrating schema from \(version, privacy: .public) to \(target, privacy: .public)")
      }
      try Schema.migrate(db, from: version, to: target)
      let replicaID = try prepareMeta(db, sealer: sealer, paths: paths)
      return MemoStore(paths: paths, db: db, sealer: sealer, replicaID: replicaID, logger: logger)
    }
  }

  /// Returns the schema version, refusing foreign, damaged and newer databases before any
  /// write happens.
  private static func identify(_ db: SQLiteConnection, path: String) throws -> Int {
    let applicationID = try db.scalarInt("PRAGMA application_id")
    let version = Int(try db.scalarInt("PRAGMA user_version"))
    let objects = try db.scalarInt("SELECT count(*) FROM sqlite_master")
    if applicationID == 0 && objects == 0 && version == 0 { return 0 }
    guard applicationID == Schema.applicationID else {
      throw MemoPeerError(
        .foreignDatabase, "\(path) is an SQLite database of another program; it was left untouched",
        hint: "move it aside, or set MEMO_PEER_HOME to another directory")
    }
    guard version <= Schema.currentVersion else {
      throw MemoPeerError(
        .newerDatabase,
        "\(path) was written by a newer memo-peer (schema \(version); this one knows up to \(Schema.currentVersion))",
        hint: "upgrade memo-peer; the file was left untouched")
    }
    return version
  }

  private static func configure(_ db: SQLiteConnection) throws {
    let journal = try db.prepare("PRAGMA journal_mode = WAL")
    try journal.step()
    // FULL: every commit that holds user data is on disk before the command says it is done.
    try db.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA secure_delete = ON")
  }

  private static func hasKeyCheck(_ db: SQLiteConnection) throws -> Bool {
    try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'meta'") == 1
      && db.scalarInt("SELECT count(*) FROM meta WHERE key = 'key_check'") == 1
  }

  /// Seals a random value on first open; later opens must open it, which tells a wrong key
  /// from damaged memos.
  private static func prepareMeta(_ db: SQLiteConnection, sealer: AES256GCMKey, paths: NodePaths) throws -> String {
    let read = try db.prepare("SELECT value FROM meta WHERE key = ?")
    try read.bind(1, "key_check")
    if try read.step() {
      do { _ = try sealer.open(read.blob(0), associatedData: SealingContext.keyCheck) } catch {
        throw MemoPeerError(
          .wrongKey, "the device key in \(paths.keyDirectory) does not open the memos in \(paths.dataDirectory)",
          hint: "the data directory was copied from another device, or the key was replaced; "
            + "restore this device's key, or move memos with `memo-peer export` and `import`")
      }
    } else {
      let check = try SystemRandom.bytes(32)
      let insert = try db.prepare("INSERT INTO meta (key, value) VALUES ('key_check', ?)")
      try insert.bind(1, try sealer.seal(check, associatedData: SealingContext.keyCheck))
      try insert.step()
    }
    read.reset()
    try read.bind(1, "replica_id")
    if try read.step() { return String(decoding: read.blob(0), as: UTF8.self) }
    let replica = Hex.encode(try SystemRandom.bytes(16))
    let insert = try db.prepare("INSERT INTO meta (key, value) VALUES ('replica_id', ?)")
    try insert.bind(1, Array(replica.utf8))
    try insert.step()
    return replica
  }

  /// Runs `body`, turning SQLite failures into user-facing errors that name the database.
  static func translatingSQLiteErrors<R>(_ path: String, _ body: () throws -> R) throws -> R {
    do { return try body() } catch let error as SQLiteError {
      throw error.memoPeerError(database: path)
    } catch let error as CryptoError {
      throw MemoPeerError(.crypto, "the cryptographic library failed", diagnostics: "\(error)")
    }
  }

  /// Runs several store operations as one transaction: all of them land, or none.
  public func batch<R>(_ body: () throws -> R) throws -> R {
    try sql { try db.transaction(body) }
  }

  func sql<R>(_ body: () throws -> R) throws -> R {
    try Self.translatingSQLiteErrors(paths.databasePath, body)
  }
}

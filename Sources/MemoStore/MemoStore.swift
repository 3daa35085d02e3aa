import MemoCore
import MemoCrypto
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The encrypted memo store of one node: an SQLite database whose memo content (title, body,
/// tags), outbox and inbox payloads are sealed with AES-256-GCM under the device key, and
/// whose titles of memos not marked private are sealed a second time under the listing key.
///
/// Opening checks, in order: directory permissions, that the file is a memo-peer database
/// of a version we know (foreign or damaged files are never modified), that the keys open
/// it, then runs forward migrations. A protected node that is locked opens without its
/// device key: ids, times, flags and the listing titles can be read, and everything that
/// needs content fails with a `locked` error. Not Sendable: one store per thread or actor.
public final class MemoStore {
  public let paths: NodePaths
  /// A random id for this replica, made at creation; the origin of local revisions.
  public let replicaID: ReplicaID
  /// The schema version after opening (always `Schema.currentVersion`).
  public let schemaVersion: Int
  /// Whether content could be read when the store was opened (it stays so while it is open).
  public let lockState: LockState
  let db: SQLiteConnection
  /// Seals content under the device key; nil while the node is locked.
  let contentSealer: AES256GCMKey?
  /// Seals the listing titles; always available.
  let listingSealer: AES256GCMKey
  let logger: Logger
  /// Notebook keys opened so far (sealed under the device key in `notebook_keys`).
  let notebookKeys = NotebookKeyCache()
  /// The feed's counter and the horizons while a staged batch runs (`stagedBatch`).
  let staged = StagedWrites()
  /// Sinks receiving a sync on this connection (`beginBulkWrites`).
  let bulkWriters = BulkWriters()
  /// Membership logs loaded so far, and what they say (`notebook_ops`).
  let membership = MembershipCache()
  /// The node's keys and the few settings the store reads (`StoreSecrets`).
  let secrets: any StoreSecrets
  /// The identity key, once something was signed (`signer()`).
  let signingKey = Mutex<Ed25519.SigningKey?>(nil)
  /// This device's ID, once read from its public identity key (needs no unlocking).
  let ownDevice = Mutex<DeviceID?>(nil)
  /// The replica id from before sync version 3, once read (`.some(nil)`: there is none).
  let legacyReplica = Mutex<ReplicaID??>(nil)
  /// The history bounds, once read from config.json (`historyLimits()`).
  let historyLimitsCache = Mutex<HistoryLimits?>(nil)
  /// Whether rows keep a body only in their record (schema 12); false only for a store
  /// opened at an older version to build its fixture.
  let bodiesInRecords: Bool

  private init(
    paths: NodePaths, db: SQLiteConnection, contentSealer: AES256GCMKey?, listingSealer: AES256GCMKey,
    lockState: LockState, replicaID: ReplicaID, secrets: any StoreSecrets, logger: Logger, bodiesInRecords: Bool
  ) {
    self.paths = paths
    self.secrets = secrets
    self.db = db
    self.contentSealer = contentSealer
    self.listingSealer = listingSealer
    self.lockState = lockState
    self.replicaID = replicaID
    self.schemaVersion = Schema.currentVersion
    self.logger = logger
    self.bodiesInRecords = bodiesInRecords
  }

  /// The error of every operation that needs memo content while the node is locked.
  public static let lockedError = MemoPeerError(
    .locked, "this node is locked: memo content cannot be read or changed until it is unlocked",
    remedy: .unlock(device: nil))

  /// The device key's sealer, or the `locked` error.
  func sealer() throws -> AES256GCMKey {
    guard let contentSealer else { throw Self.lockedError }
    return contentSealer
  }

  /// Opens the node's store, creating the database (and, through `secrets`, its keys) on
  /// first use. The node's usual opening, with its device keys, is MemoNode's
  /// `open(paths:logger:keys:use:)`.
  public static func open(paths: NodePaths, logger: Logger = .disabled, secrets: any StoreSecrets) throws -> MemoStore {
    try open(paths: paths, logger: logger, secrets: secrets, schemaVersion: Schema.currentVersion)
  }

  /// Opens at an older schema version: only for building migration fixtures in tests
  /// (`@testable import`); not part of the public API.
  static func openForFixture(paths: NodePaths, secrets: any StoreSecrets, schemaVersion: Int) throws -> MemoStore {
    try open(paths: paths, logger: .disabled, secrets: secrets, schemaVersion: schemaVersion)
  }

  private static func open(
    paths: NodePaths, logger: Logger, secrets: any StoreSecrets, schemaVersion target: Int
  ) throws -> MemoStore {
    let path = paths.databasePath
    try PrivateFiles.ensureDirectory(paths.dataDirectory, role: "data directory")
    // One opener at a time: two commands on a fresh node (or after an upgrade) would both
    // make the keys, the tables or the migrations, and one of them would fail.
    let lockPath = path + ".open-lock"
    let lock = try PrivateFiles.call("open", orThrow: "cannot open \(lockPath)") {
      Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    }
    defer { close(lock) }
    try takeOpenLock(lock, path: lockPath, database: path)
    if !PrivateFiles.exists(path) {
      // Create the file ourselves so it is 0600 from its first byte; SQLite gives the
      // -wal and -shm files the same mode.
      do throws(SystemError) {
        close(try System.call("open") { Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600) })
      } catch let error where error.errno == .exists {
        // Already there (made since the check): SQLite opens it below.
      } catch {
        throw PrivateFiles.ioError(error, "cannot create \(path)")
      }
    }
    return try translatingSQLiteErrors(path) {
      let db = try SQLiteConnection(path: path, create: false)
      // Before the first read: after a kill -9 another process may be recovering the WAL.
      try db.execute("PRAGMA busy_timeout = \(busyTimeoutMilliseconds)")
      let version = try identify(db, path: path)
      try configure(db)
      let isNew = version == 0
      let key: SecureBytes?
      if try isNew || !hasKeyCheck(db) {
        key = try secrets.contentKey(creatingIfMissing: true)
        guard key != nil else { throw lockedError }
      } else {
        guard secrets.hasContentKey else {
          throw MemoPeerError(
            .keyMissing, "the device key \(paths.deviceKeyPath) is missing, so the memos in \(path) cannot be read",
            hint: "restore the key file from this device; a data directory copied from another device "
              + "cannot be opened here", remedy: .moveMemosToNewNode)
        }
        key = try secrets.contentKey(creatingIfMissing: false)
      }
      let lockState = try secrets.lockState()
      let contentSealer = try key.map { try sealer(for: $0, role: "device key") }
      let listingSealer = try sealer(for: try secrets.listingKey(), role: "listing key")
      if isNew { try db.execute("PRAGMA application_id = \(Schema.applicationID)") }
      if version < target {
        // The listing titles of schema 3 are copies of sealed titles: making them needs the
        // device key.
        guard contentSealer != nil else { throw lockedError }
        logger.info("migrating schema from \(version, privacy: .public) to \(target, privacy: .public)")
      }
      // A listing index a killed sync left dropped is made again before anything reads
      // the schema (a migration may rebuild it).
      if version >= Schema.bodiesInRecordsVersion { try restoreAbandonedListingIndex(db) }
      try Schema.migrate(db, from: version, to: target) { reached in
        if reached == 3, let contentSealer {
          try backfillListingTitles(db, contentSealer: contentSealer, listingSealer: listingSealer)
        }
        if reached == 4 { try backfillSyncColumns(db) }
        if reached == 5 { try backfillHorizon(db) }
        if reached == Schema.notebooksVersion, let contentSealer {
          // Every device trusted now keeps getting what it got before the upgrade.
          let trusted = isNew ? [] : ((try? secrets.trustedDevices()) ?? [])
          try backfillNotebooks(db, contentSealer: contentSealer, migrated: !isNew, trusted: trusted)
        }
        if reached == Schema.signedVersion { try deriveReplicaID(db, secrets: secrets) }
        if reached == Schema.membershipVersion, isNew, let contentSealer {
          try rootFirstNotebook(
            db, contentSealer: contentSealer, device: try identityDevice(secrets))
        }
      }
      let replicaID = try prepareMeta(
        db, contentSealer: contentSealer, listingSealer: listingSealer, paths: paths,
        listingReady: target >= 3)
      let store = MemoStore(
        paths: paths, db: db, contentSealer: contentSealer, listingSealer: listingSealer, lockState: lockState,
        replicaID: replicaID, secrets: secrets, logger: logger,
        bodiesInRecords: target >= Schema.bodiesInRecordsVersion)
      // Still under the open lock: one opener moves them.
      try store.moveBodiesIntoRecords()
      return store
    }
  }

  /// This device's ID from its public identity key (readable while locked).
  static func identityDevice(_ secrets: any StoreSecrets) throws -> DeviceID {
    do {
      guard let id = DeviceID(bytes: try SHA256.hash(try secrets.identityPublicKey()))
      else {
        throw MemoPeerError(.crypto, "the identity key's fingerprint is not a device ID")
      }
      return id
    } catch let error as MemoPeerError {
      throw error
    } catch {
      throw MemoPeerError(.crypto, "could not read this device's identity key", diagnostics: "\(error)")
    }
  }

  private static func sealer(for key: SecureBytes, role: String) throws -> AES256GCMKey {
    do { return try AES256GCMKey(key) } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to load the \(role)", diagnostics: "\(error)")
    }
  }

  /// Schema 8: the replica id becomes one derived from this device (docs/design/sync-v3.md,
  /// section 2), so no other device can bind it; an older id stays, as
  /// `legacy_replica_id`, the origin of the revisions made under it. Runs inside the
  /// migration's transaction.
  private static func deriveReplicaID(_ db: SQLiteConnection, secrets: any StoreSecrets) throws {
    let device = try identityDevice(secrets)
    let nonce: [UInt8]
    let replica: ReplicaID
    do {
      nonce = try SystemRandom.bytes(SyncDerivations.nonceSize)
      replica = try SyncDerivations.replicaID(device: device, nonce: nonce)
    } catch {
      throw MemoPeerError(.crypto, "could not derive this device's replica id", diagnostics: "\(error)")
    }
    let read = try db.prepare("SELECT value FROM meta WHERE key = 'replica_id'")
    if try read.step() {
      let legacy = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('legacy_replica_id', ?)")
      try legacy.bind(1, read.blob(0))
      _ = try legacy.step()
    }
    for (key, value) in [("replica_id", Array(replica.rawValue.utf8)), ("replica_nonce", nonce)] {
      let write = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
      try write.bind([.text(key), .blob(value)])
      _ = try write.step()
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
    // The WAL file keeps its largest size until it is reset: a received sync checkpoints
    // every 16 MiB (`bulkCheckpointPages`), and its WAL stayed 16 MiB on disk beside a
    // database of 24 MiB. Past this limit it is truncated when it is next reset.
    try db.execute("PRAGMA journal_size_limit = \(walSizeLimit)")
  }

  /// Bytes the WAL file keeps once reset (`journal_size_limit`).
  static let walSizeLimit = 4 << 20

  private static func hasKeyCheck(_ db: SQLiteConnection) throws -> Bool {
    try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'meta'") == 1
      && db.scalarInt("SELECT count(*) FROM meta WHERE key = 'key_check'") == 1
  }

  /// Seals a random value under each key on first open; later opens must open them, which
  /// tells a wrong key from damaged memos. While locked only the listing key is checked.
  private static func prepareMeta(
    _ db: SQLiteConnection, contentSealer: AES256GCMKey?, listingSealer: AES256GCMKey, paths: NodePaths,
    listingReady: Bool
  ) throws -> ReplicaID {
    if let contentSealer {
      try check(
        db, name: "key_check", sealer: contentSealer, context: SealingContext.keyCheck,
        failure: MemoPeerError(
          .wrongKey, "the device key in \(paths.keyDirectory) does not open the memos in \(paths.dataDirectory)",
          hint: "the data directory was copied from another device, or the key was replaced; "
            + "restore this device's key", remedy: .moveMemosToNewNode))
    }
    if listingReady {
      try check(
        db, name: "listing_key_check", sealer: listingSealer, context: SealingContext.listingKeyCheck,
        failure: MemoPeerError(
          .wrongKey, "the listing key \(paths.listingKeyPath) does not open the titles in \(paths.dataDirectory)",
          hint: "restore this device's key directory; the key files belong together"))
    }
    let read = try db.prepare("SELECT value FROM meta WHERE key = 'replica_id'")
    if try read.step() {
      guard let replica = ReplicaID(String(decoding: read.blob(0), as: UTF8.self)) else {
        throw MemoPeerError(
          .integrity, "the database \(paths.databasePath) names no valid replica id",
          hint: "restore it from a backup, or move it away and sync this device again")
      }
      return replica
    }
    guard let replica = ReplicaID(Hex.encode(try SystemRandom.bytes(16))) else {
      throw MemoPeerError(.storage, "could not make a replica id")
    }
    let insert = try db.prepare("INSERT INTO meta (key, value) VALUES ('replica_id', ?)")
    try insert.bind(1, Array(replica.rawValue.utf8))
    try insert.step()
    return replica
  }

  /// Opens the check value `name`, or seals a fresh one when there is none yet.
  private static func check(
    _ db: SQLiteConnection, name: String, sealer: AES256GCMKey, context: [UInt8], failure: MemoPeerError
  ) throws {
    let read = try db.prepare("SELECT value FROM meta WHERE key = ?")
    try read.bind(1, name)
    if try read.step() {
      do { _ = try sealer.open(read.blob(0), associatedData: context) } catch { throw failure }
      return
    }
    let insert = try db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)")
    try insert.bind([.text(name), .blob(try sealer.seal(try SystemRandom.bytes(32), associatedData: context))])
    try insert.step()
  }

  /// Schema 3: seals a listing copy of every live title not marked private. Runs inside the
  /// migration's transaction; it only fills the new column.
  private static func backfillListingTitles(
    _ db: SQLiteConnection, contentSealer: AES256GCMKey, listingSealer: AES256GCMKey
  ) throws {
    let rows = try db.prepare("SELECT id, title, revision FROM memos WHERE deleted = 0 AND private = 0")
    var listed: [(id: String, title: [UInt8], revision: Int64)] = []
    while try rows.step() { listed.append((rows.text(0), rows.blob(1), rows.int64(2))) }
    let update = try db.prepare("UPDATE memos SET listing_title = ? WHERE id = ?")
    for row in listed {
      guard let memoID = MemoID(canonical: row.id) else { continue }
      var title: [UInt8]
      do {
        title = try contentSealer.open(
          row.title, associatedData: SealingContext.memoField(.title, id: memoID, revision: row.revision))
      } catch { continue }  // a damaged title stays unlisted; reading the memo reports it
      defer { for index in title.indices { title[index] = 0 } }
      let sealed = try listingSealer.seal(
        title, associatedData: SealingContext.memoField(.listingTitle, id: memoID, revision: row.revision))
      try update.bind([.blob(sealed), .text(row.id)])
      try update.step()
      update.reset()
    }
  }

  /// How long a command waits for another process's write transaction (or its open)
  /// before it gives up with the busy error, which names that process (`LockHolder`;
  /// docs/CLI.md, exit status 7). Every write transaction is short: the daemon holds one
  /// only while it writes, never across network I/O, other threads or D-Bus (`batch`), so
  /// only a process stopped or stuck inside one makes a person wait this long.
  public static let busyTimeoutMilliseconds = 5000

  /// Takes the opener's flock within the busy timeout: an opener stopped while it holds
  /// it (SIGSTOP during a migration) must not hold every later command forever.
  private static func takeOpenLock(_ lock: Int32, path lockPath: String, database: String) throws {
    let pause: UInt32 = 50_000
    let attempts = busyTimeoutMilliseconds * 1000 / Int(pause) + 1
    for attempt in 1...attempts {
      if flock(lock, LOCK_EX | LOCK_NB) == 0 { return }
      let failure = errno
      if failure == EINTR { continue }
      guard failure == EWOULDBLOCK else {
        throw MemoPeerError(
          .storage, "cannot lock \(lockPath)", hint: "check that the file system is writable",
          diagnostics: "flock: errno \(failure)")
      }
      if attempt < attempts { usleep(pause) }
    }
    throw LockHolder.busyError(
      LockHolder.find(database: database), waitedMilliseconds: busyTimeoutMilliseconds,
      diagnostics: "flock \(lockPath): held by another process")
  }

  /// Runs `body`, turning SQLite failures into user-facing errors that name the database
  /// (and, when it is busy, the process holding its write lock).
  static func translatingSQLiteErrors<R>(_ path: String, _ body: () throws -> R) throws -> R {
    do { return try body() } catch let error as SQLiteError {
      if error.isBusy {
        throw LockHolder.busyError(
          LockHolder.find(database: path), waitedMilliseconds: busyTimeoutMilliseconds,
          diagnostics: error.diagnostics)
      }
      throw error.memoPeerError(database: path)
    } catch let error as CryptoError {
      throw MemoPeerError(.crypto, "the cryptographic library failed", diagnostics: "\(error)")
    }
  }

  /// Runs several store operations as one transaction: all of them land, or none.
  ///
  /// The rule of every write transaction (issue 39): it lasts as long as writing takes.
  /// `body` does no network I/O, waits on no other thread (signature checks run before:
  /// `PrecheckedSignatures`), no D-Bus and no sleep; whatever needs one happens before or
  /// after. A person's command waits at most `busyTimeoutMilliseconds` for the lock.
  public func batch<R>(_ body: () throws -> R) throws -> R {
    do {
      return try sql { try db.transaction(body) }
    } catch {
      // What the caches read inside a transaction that rolled back is not in the file.
      membership.reset()
      notebookKeys.rings = [:]
      throw error
    }
  }

  func sql<R>(_ body: () throws -> R) throws -> R {
    try Self.translatingSQLiteErrors(paths.databasePath, body)
  }
}

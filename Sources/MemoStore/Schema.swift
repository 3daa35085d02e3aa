import MemoCore

/// The database schema and its forward migrations.
///
/// Rules (docs/FORMATS.md, "Migrations"): a migration only adds (it may rebuild an index,
/// which holds no data of its own); it never drops or rewrites a row, so no undelivered
/// outbox entry or unsynced change can be lost. The one exception empties a column whose
/// content the same row keeps elsewhere, checked row by row (version 12). Each runs
/// in its own transaction together with its `user_version` bump, so a crash mid-migration
/// leaves the previous version intact. Every released version has a fixture under
/// Tests/MemoStoreTests/Fixtures that the tests migrate.
enum Schema {
  /// `PRAGMA application_id`: "MEMO". Tells our databases from other programs' SQLite files.
  static let applicationID: Int64 = 0x4D45_4D4F

  /// The version this build writes.
  static var currentVersion: Int { migrations.count }

  /// The version that brought notebooks (its migration fills them in Swift).
  static let notebooksVersion = 6

  /// `migrations[i]` moves the schema from version i to i + 1.
  static let migrations: [String] = [
    // Version 1: memos with room for sync fields, the outbox and the inbox, node metadata.
    """
    CREATE TABLE meta (
      key TEXT PRIMARY KEY,
      value BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE memos (
      id TEXT PRIMARY KEY,
      title BLOB NOT NULL,
      body BLOB NOT NULL,
      tags BLOB NOT NULL,
      created INTEGER NOT NULL,
      updated INTEGER NOT NULL,
      private INTEGER NOT NULL DEFAULT 0,
      revision INTEGER NOT NULL DEFAULT 1,
      origin TEXT NOT NULL,
      clock BLOB,
      deleted INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE outbox (
      id TEXT PRIMARY KEY,
      recipient TEXT NOT NULL,
      payload BLOB NOT NULL,
      created INTEGER NOT NULL,
      expires INTEGER,
      state TEXT NOT NULL DEFAULT 'queued',
      attempts INTEGER NOT NULL DEFAULT 0,
      delivered INTEGER
    );
    CREATE TABLE inbox (
      id TEXT PRIMARY KEY,
      sender TEXT NOT NULL,
      payload BLOB NOT NULL,
      received INTEGER NOT NULL
    );
    """,
    // Version 2: a pinned flag (the status-bar widget shows a pinned memo first) and a
    // covering index for `list`: newest first with no sort, and without reading the table's
    // rows, whose sealed bodies would make a listing read every page of the file. The index
    // holds only sealed values, like the table.
    """
    ALTER TABLE memos ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memos_for_listing ON memos(deleted, updated DESC, id, title, tags, created, private, revision);
    """,
    // Version 3: a second copy of each title not marked private, sealed under the listing key
    // (which has no passphrase), so `list` and the widget can name those memos while the node
    // is locked; NULL for private memos and tombstones. The listing index is rebuilt to cover
    // it and the pinned flag (an index holds no data of its own: nothing is lost). The copies
    // of existing titles are made by `MemoStore` inside this migration's transaction.
    """
    ALTER TABLE memos ADD COLUMN listing_title BLOB;
    DROP INDEX memos_for_listing;
    CREATE INDEX memos_for_listing ON memos(
      deleted, updated DESC, id, title, listing_title, tags, created, private, revision, pinned);
    """,
    // Version 4: sync (docs/PROTOCOL.md, "Sync"). Each memo row is one head of a memo: its
    // dot (origin replica and that replica's sequence number), its version vector (`clock`,
    // a column reserved since version 1) and its place in this replica's change feed. A
    // conflict copy is a row whose `conflict_of` names the memo. `knowledge` holds, per
    // origin, the highest sequence this replica has seen all of; `sync_peers` where each
    // peer's feed was read up to; `sync_held` deletes the mass-delete guard held back. The
    // dots, clocks and feed positions of existing memos are filled in by `MemoStore`.
    """
    ALTER TABLE memos ADD COLUMN dot_origin TEXT;
    ALTER TABLE memos ADD COLUMN dot_seq INTEGER;
    ALTER TABLE memos ADD COLUMN feed_seq INTEGER;
    ALTER TABLE memos ADD COLUMN conflict_of TEXT;
    CREATE INDEX memos_by_feed ON memos(feed_seq);
    CREATE INDEX memos_by_conflict ON memos(conflict_of) WHERE conflict_of IS NOT NULL;
    DROP INDEX memos_for_listing;
    CREATE INDEX memos_for_listing ON memos(
      deleted, updated DESC, id, title, listing_title, tags, created, private, revision, pinned, conflict_of);
    CREATE TABLE knowledge (
      origin TEXT PRIMARY KEY,
      seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE counters (
      name TEXT PRIMARY KEY,
      value INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE sync_peers (
      device TEXT PRIMARY KEY,
      replica TEXT,
      cursor INTEGER NOT NULL DEFAULT 0,
      acked INTEGER NOT NULL DEFAULT 0,
      knowledge BLOB,
      last_seen INTEGER,
      last_synced INTEGER
    );
    CREATE TABLE sync_held (
      device TEXT NOT NULL,
      memo TEXT NOT NULL,
      dot_origin TEXT NOT NULL,
      dot_seq INTEGER NOT NULL,
      clock BLOB NOT NULL,
      revision INTEGER NOT NULL,
      created INTEGER NOT NULL,
      updated INTEGER NOT NULL,
      private INTEGER NOT NULL,
      PRIMARY KEY (device, memo, dot_origin, dot_seq)
    );
    """,
    // Version 5: a broken device cannot hurt the others (docs/PROTOCOL.md, "Limits").
    // `horizon` holds, per replica, the highest sequence this replica has seen in any clock
    // it stored or held: a peer's knowledge is adopted only up to it. `sync_held.payload` is
    // the sealed content of a held edit that empties a memo (NULL: a held delete);
    // `sync_guard` the removals applied from each peer without asking, which the mass-delete
    // guard adds up over 24 hours; `received_log` when each memo delivered under the
    // `accept` policy was stored, for that policy's daily limit. The horizon of existing
    // rows is filled in by `MemoStore`.
    """
    CREATE TABLE horizon (
      origin TEXT PRIMARY KEY,
      seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    ALTER TABLE sync_held ADD COLUMN payload BLOB;
    CREATE TABLE sync_guard (
      device TEXT NOT NULL,
      time INTEGER NOT NULL,
      count INTEGER NOT NULL
    );
    CREATE INDEX sync_guard_by_device ON sync_guard(device, time);
    CREATE TABLE received_log (
      sender TEXT NOT NULL,
      time INTEGER NOT NULL
    );
    CREATE INDEX received_log_by_sender ON received_log(sender, time);
    """,
    // Version 6: notebooks (docs/FORMATS.md, "Notebooks"). Every memo row names
    // its notebook; each notebook this device is a member of has keys (generations, sealed
    // under the device key); `notebook_members` says with whom it is shared and how; sync
    // knowledge, cursors and each peer's last knowledge become per notebook; `relayed`
    // holds the sealed revisions of notebooks this device relays and cannot read. The
    // `personal` notebook, its key, its members (every device trusted at the migration) and
    // the copies of the old knowledge and cursors are made by `MemoStore` in this
    // migration's transaction; the old rows stay as they are.
    """
    ALTER TABLE memos ADD COLUMN notebook TEXT;
    DROP INDEX memos_for_listing;
    CREATE INDEX memos_for_listing ON memos(
      deleted, updated DESC, id, title, listing_title, tags, created, private, revision, pinned, conflict_of, notebook);
    CREATE TABLE notebooks (
      id TEXT PRIMARY KEY,
      name TEXT,
      role TEXT NOT NULL,
      created INTEGER NOT NULL,
      deleted INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    CREATE TABLE notebook_keys (
      notebook TEXT NOT NULL,
      key_id TEXT NOT NULL,
      generation INTEGER NOT NULL,
      key BLOB NOT NULL,
      created INTEGER NOT NULL,
      PRIMARY KEY (notebook, key_id)
    ) WITHOUT ROWID;
    CREATE TABLE notebook_members (
      notebook TEXT NOT NULL,
      device TEXT NOT NULL,
      role TEXT NOT NULL,
      added INTEGER NOT NULL,
      PRIMARY KEY (notebook, device)
    ) WITHOUT ROWID;
    CREATE TABLE notebook_knowledge (
      notebook TEXT NOT NULL,
      origin TEXT NOT NULL,
      seq INTEGER NOT NULL,
      PRIMARY KEY (notebook, origin)
    ) WITHOUT ROWID;
    CREATE TABLE sync_cursors (
      device TEXT NOT NULL,
      notebook TEXT NOT NULL,
      replica TEXT NOT NULL,
      position INTEGER NOT NULL,
      PRIMARY KEY (device, notebook)
    ) WITHOUT ROWID;
    CREATE TABLE sync_peer_knowledge (
      device TEXT NOT NULL,
      notebook TEXT NOT NULL,
      knowledge BLOB NOT NULL,
      PRIMARY KEY (device, notebook)
    ) WITHOUT ROWID;
    CREATE TABLE relayed (
      memo TEXT NOT NULL,
      dot_origin TEXT NOT NULL,
      dot_seq INTEGER NOT NULL,
      notebook TEXT NOT NULL,
      clock BLOB NOT NULL,
      key_id TEXT NOT NULL,
      sealed BLOB NOT NULL,
      feed_seq INTEGER NOT NULL,
      received INTEGER NOT NULL,
      PRIMARY KEY (memo, dot_origin, dot_seq)
    );
    CREATE INDEX relayed_by_feed ON relayed(feed_seq);
    ALTER TABLE sync_held ADD COLUMN notebook TEXT;
    CREATE INDEX relayed_by_notebook ON relayed(notebook);
    """,
    // Version 7: the horizon per notebook. A peer's knowledge of a notebook is adopted only
    // up to the revisions this device has seen *in that notebook* (their dots): with one
    // horizon for all, a member of one notebook could claim, for it, sequences this device
    // saw only in another, and honest devices would then never send it that replica's
    // earlier revisions of the first. Filled from the dots of the rows, relayed records
    // and held removals already here (numbers past 2^53, planted before the checks, are
    // left out).
    """
    CREATE TABLE notebook_horizon (
      notebook TEXT NOT NULL,
      origin TEXT NOT NULL,
      seq INTEGER NOT NULL,
      PRIMARY KEY (notebook, origin)
    ) WITHOUT ROWID;
    INSERT INTO notebook_horizon (notebook, origin, seq)
      SELECT notebook, dot_origin, max(dot_seq) FROM (
        SELECT notebook, dot_origin, dot_seq FROM memos WHERE dot_origin IS NOT NULL AND dot_seq IS NOT NULL
        UNION ALL SELECT notebook, dot_origin, dot_seq FROM relayed
        UNION ALL SELECT notebook, dot_origin, dot_seq FROM sync_held
      )
      WHERE notebook IS NOT NULL AND dot_seq BETWEEN 1 AND \(SyncLimits.maximumSequence)
      GROUP BY notebook, dot_origin;
    """,
    // Version 8: sync version 3 (docs/design/sync-v3.md). A head keeps the record it travels
    // as, sealed under its notebook key and signed by its author (`record_key`, `record`,
    // `signature`, `author`), so it is forwarded as signed; relayed records and held
    // removals keep their signatures too. `device_keys` holds the public keys of devices,
    // `replica_bindings` which device each replica belongs to (and which peer it came from:
    // the per-peer quota counts it), `legacy_ceiling` the highest
    // sequence of every replica seen before this version (unsigned revisions are taken up
    // to it, never beyond), `quarantine` what a peer sent that did not pass the checks,
    // sealed as it came. The store's own replica id becomes one derived from its device
    // (made by `MemoStore` in this migration's transaction; the old one stays the origin of
    // the revisions made under it, `meta.legacy_replica_id`). The listing index covers
    // `author` too (`list` names who wrote each memo). `memo_history` keeps the superseded
    // revisions of memos this device can read (their fields sealed under the device key as
    // they were in their row, `sealed_as`), bounded (docs/FORMATS.md, "History"); `trash`
    // the memos whose delete won here, restorable for 30 days; `relayed_history` the sealed
    // records a relay forwarded and then replaced, within the same bounds.
    """
    ALTER TABLE memos ADD COLUMN record_key TEXT;
    ALTER TABLE memos ADD COLUMN record BLOB;
    ALTER TABLE memos ADD COLUMN signature BLOB;
    ALTER TABLE memos ADD COLUMN author TEXT;
    ALTER TABLE relayed ADD COLUMN signature BLOB;
    ALTER TABLE sync_held ADD COLUMN record_key TEXT;
    ALTER TABLE sync_held ADD COLUMN record BLOB;
    ALTER TABLE sync_held ADD COLUMN signature BLOB;
    CREATE TABLE device_keys (
      device TEXT PRIMARY KEY,
      key BLOB NOT NULL,
      learned INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE replica_bindings (
      replica TEXT PRIMARY KEY,
      device TEXT NOT NULL,
      key BLOB NOT NULL,
      nonce BLOB NOT NULL,
      signature BLOB NOT NULL,
      received INTEGER NOT NULL,
      via TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX replica_bindings_via ON replica_bindings (via);
    CREATE TABLE legacy_ceiling (
      origin TEXT PRIMARY KEY,
      seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO legacy_ceiling (origin, seq)
      SELECT origin, max(seq) FROM (
        SELECT origin, seq FROM knowledge UNION ALL SELECT origin, seq FROM horizon
        UNION ALL SELECT origin, seq FROM notebook_horizon
      )
      WHERE seq BETWEEN 1 AND \(SyncLimits.maximumSequence)
      GROUP BY origin;
    CREATE TABLE quarantine (
      id INTEGER PRIMARY KEY,
      peer TEXT NOT NULL,
      notebook TEXT,
      reason TEXT NOT NULL,
      item BLOB NOT NULL,
      received INTEGER NOT NULL
    );
    CREATE INDEX quarantine_by_peer ON quarantine(peer);
    DROP INDEX memos_for_listing;
    CREATE INDEX memos_for_listing ON memos(
      deleted, updated DESC, id, title, listing_title, tags, created, private, revision, pinned, conflict_of, notebook,
      author);
    CREATE TABLE memo_history (
      id INTEGER PRIMARY KEY,
      memo TEXT NOT NULL,
      sealed_as TEXT NOT NULL,
      revision INTEGER NOT NULL,
      dot_origin TEXT NOT NULL,
      dot_seq INTEGER NOT NULL,
      clock BLOB NOT NULL,
      notebook TEXT,
      author TEXT,
      title BLOB NOT NULL,
      body BLOB NOT NULL,
      tags BLOB NOT NULL,
      created INTEGER NOT NULL,
      updated INTEGER NOT NULL,
      private INTEGER NOT NULL,
      deleted INTEGER NOT NULL,
      size INTEGER NOT NULL,
      superseded INTEGER NOT NULL,
      UNIQUE (memo, dot_origin, dot_seq)
    );
    CREATE INDEX memo_history_by_superseded ON memo_history(superseded);
    CREATE TABLE trash (
      memo TEXT PRIMARY KEY,
      deleted INTEGER NOT NULL,
      author TEXT
    ) WITHOUT ROWID;
    CREATE INDEX trash_by_time ON trash(deleted);
    CREATE TABLE relayed_history (
      id INTEGER PRIMARY KEY,
      memo TEXT NOT NULL,
      dot_origin TEXT NOT NULL,
      dot_seq INTEGER NOT NULL,
      notebook TEXT NOT NULL,
      clock BLOB NOT NULL,
      key_id TEXT NOT NULL,
      sealed BLOB NOT NULL,
      signature BLOB,
      received INTEGER NOT NULL,
      superseded INTEGER NOT NULL,
      UNIQUE (memo, dot_origin, dot_seq)
    );
    CREATE INDEX relayed_history_by_superseded ON relayed_history(superseded);
    """,
    // Version 9: revocations (docs/PROTOCOL.md, "Revocations"). `revocations` keeps each
    // signed revocation this device made, applied, or holds against itself (`state`), as it
    // travels, so it is passed on in every hello (`name`: the revoked device's name here when
    // it was applied, never sent); `revoked_cut` is, per revoked device and
    // replica, the highest sequence still accepted from it (the lowest of the cuts that
    // revoked it). `purges` keeps each signed purge this device made or took (docs/PROTOCOL.md,
    // "Purges"), passed on to the members and relays of its notebook: the memo's rows are gone,
    // and a record of it arriving later is dropped.
    """
    CREATE TABLE revocations (
      id TEXT PRIMARY KEY,
      revoker TEXT NOT NULL,
      revoked TEXT NOT NULL,
      made INTEGER NOT NULL,
      bytes BLOB NOT NULL,
      state TEXT NOT NULL,
      received INTEGER NOT NULL,
      via TEXT,
      name TEXT
    ) WITHOUT ROWID;
    CREATE INDEX revocations_by_revoked ON revocations(revoked);
    CREATE TABLE revoked_cut (
      device TEXT NOT NULL,
      replica TEXT NOT NULL,
      seq INTEGER NOT NULL,
      PRIMARY KEY (device, replica)
    ) WITHOUT ROWID;
    CREATE TABLE purges (
      id TEXT PRIMARY KEY,
      notebook TEXT NOT NULL,
      memo TEXT NOT NULL,
      author TEXT NOT NULL,
      made INTEGER NOT NULL,
      bytes BLOB NOT NULL,
      received INTEGER NOT NULL,
      via TEXT
    ) WITHOUT ROWID;
    CREATE INDEX purges_by_notebook ON purges(notebook, received);
    CREATE INDEX purges_by_memo ON purges(memo);
    """,
    // Version 10: the signed membership log on the wire (docs/PROTOCOL.md, "Sync, version 3").
    // `notebook_ops` keeps every op of each notebook's log as it travels, in the order it was
    // admitted (a causal order), with the peer it came from; `notebook_members` becomes what
    // the log says, recomputed whenever it changes. `legacy_members` keeps the members of
    // version 2 (the only authors whose legacy genesis of a notebook this device takes);
    // `invitations` the notebooks whose log has this device in it and that a person has not
    // accepted (or declined: `shares` holds the share ops seen then). A notebook remembers
    // the nonce its id was derived from (`nonce`, null for one from before version 3), the
    // key generation new records are sealed with (`current_key`, from the log) and the
    // rename op whose name it took (`name_op`). `sync_added` counts the memos each peer
    // added here by sync per day (docs/PROTOCOL.md, "Quotas").
    """
    CREATE TABLE notebook_ops (
      notebook TEXT NOT NULL,
      position INTEGER NOT NULL,
      id BLOB NOT NULL,
      author TEXT NOT NULL,
      bytes BLOB NOT NULL,
      received INTEGER NOT NULL,
      via TEXT,
      PRIMARY KEY (notebook, position)
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX notebook_ops_by_id ON notebook_ops(notebook, id);
    CREATE TABLE legacy_members (
      notebook TEXT NOT NULL,
      device TEXT NOT NULL,
      PRIMARY KEY (notebook, device)
    ) WITHOUT ROWID;
    INSERT INTO legacy_members (notebook, device)
      SELECT notebook, device FROM notebook_members WHERE role = 'member';
    CREATE TABLE invitations (
      notebook TEXT PRIMARY KEY,
      peer TEXT NOT NULL,
      inviter TEXT,
      role TEXT NOT NULL,
      state TEXT NOT NULL,
      received INTEGER NOT NULL,
      shares BLOB
    ) WITHOUT ROWID;
    CREATE INDEX invitations_by_peer ON invitations(peer, state);
    ALTER TABLE notebooks ADD COLUMN nonce BLOB;
    ALTER TABLE notebooks ADD COLUMN current_key TEXT;
    ALTER TABLE notebooks ADD COLUMN name_op BLOB;
    CREATE TABLE sync_added (
      peer TEXT NOT NULL,
      day INTEGER NOT NULL,
      memos INTEGER NOT NULL,
      PRIMARY KEY (peer, day)
    ) WITHOUT ROWID;
    """,
    // Version 11: a refusal names its evidence (docs/PROTOCOL.md, "Refusals"). The last sync
    // data this device refused from each peer: when, the refusal's reason code and its detail
    // (this program's words: numbers and field names, never the peer's bytes), for `peers`.
    """
    ALTER TABLE sync_peers ADD COLUMN refused_at INTEGER;
    ALTER TABLE sync_peers ADD COLUMN refused_reason TEXT;
    ALTER TABLE sync_peers ADD COLUMN refused_detail TEXT;
    """,
    // Version 12: content stored once (docs/FORMATS.md, "Bodies in records"). A head with a
    // record keeps its body only there, and its `body` column is empty (zero bytes). The
    // rows already here are moved after this version's transaction, a thousand per
    // transaction, by `MemoStore.moveBodiesIntoRecords`, each only once its record is
    // checked to hold the same body; the marker says that work is not finished, so an
    // opening after a kill goes on with it.
    """
    INSERT OR REPLACE INTO meta (key, value) VALUES ('body_copies', X'31');
    """,
  ]

  /// The columns of `memos_for_listing` as schema 8 made it: what a deferred listing index
  /// is made again with (`MemoStore.restoreListingIndex`). A migration that changes the
  /// index changes this too.
  static let listingIndexColumns =
    "deleted, updated DESC, id, title, listing_title, tags, created, private, revision, pinned, conflict_of, "
    + "notebook, author"

  /// The version from which a row's body is kept only in its record.
  static let bodiesInRecordsVersion = 12

  /// The version that brought sync version 3 (its migration derives the replica id).
  static let signedVersion = 8

  /// The version that brought the membership log on the wire (a new store's first notebook
  /// gets a derived id in its migration).
  static let membershipVersion = 10

  /// Brings the database up to `currentVersion` (or `target`, for building fixtures).
  /// `fill(version)` runs inside the transaction that reaches `version`, for migrations that
  /// must compute a new column's values in Swift.
  static func migrate(
    _ db: SQLiteConnection, from version: Int, to target: Int = currentVersion, fill: (Int) throws -> Void = { _ in }
  ) throws {
    guard version < target else { return }
    for next in version..<target {
      try db.transaction {
        try db.execute(migrations[next])
        try fill(next + 1)
        try db.execute("PRAGMA user_version = \(next + 1)")
      }
    }
  }
}

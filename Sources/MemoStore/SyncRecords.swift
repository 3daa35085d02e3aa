import MemoCore
import MemoCrypto
import MemoProtocol

/// Records (docs/PROTOCOL.md, "Records"): how a member seals a memo revision under its
/// notebook's key for sync, and opens one it received. A relay does neither: it keeps and
/// forwards the sealed bytes as they came.
extension MemoStore {
  /// `revision` sealed under the current key of its notebook.
  func sealRecord(_ revision: SyncRevision) throws -> SyncRecord {
    guard let notebook = revision.notebook else {
      throw MemoPeerError(.storage, "memo \(revision.memo.short) has a revision without a notebook")
    }
    guard let key = try keyring(notebook).current else {
      throw MemoPeerError(
        .keyMissing, "notebook \(notebook.short) has no current key on this device yet",
        hint: "a member of the notebook seals it to this device at their next sync (through a relay too)",
        remedy: .sync)
    }
    var record = SyncRecord(
      notebook: notebook, memo: revision.memo, dot: revision.head.dot, clock: revision.head.clock, keyID: key.id,
      sealed: [])
    var content = RecordContent.encode(revision)
    defer { SecureBytes.wipe(&content) }
    do {
      record.sealed = try key.sealer.seal(content, associatedData: record.associatedData)
    } catch {
      throw MemoPeerError(.crypto, "sealing memo \(revision.memo.short) for sync failed", diagnostics: "\(error)")
    }
    return record
  }

  /// What opening a received record gave.
  enum OpenedRecord {
    case revision(SyncRevision)
    /// Sealed with a key generation this device does not hold (yet): a member that has it
    /// seals it to this device in the notebook's log, which reaches it at a later sync.
    case missingKey
  }

  /// Opens a record of a notebook this device is a member of. A record that does not open
  /// with the key it names, or whose content is not well formed, is refused like any bad
  /// sync data (`SyncViolation`: the session sends `sync-refuse` and names the peer):
  /// someone changed it on the way (or a device is broken), and nothing of its batch is
  /// stored.
  /// `author`: the device the record's signature proved wrote it (nil: unsigned), kept with
  /// the revision.
  func openRecord(_ record: SyncRecord, author: DeviceID? = nil) throws -> OpenedRecord {
    guard let key = try keyring(record.notebook)[record.keyID] else { return .missingKey }
    var content: [UInt8]
    do {
      content = try key.sealer.open(record.sealed, associatedData: record.associatedData)
    } catch {
      throw SyncViolation(.invalidRevision, "a record that does not open with its notebook's key")
    }
    defer { SecureBytes.wipe(&content) }
    guard var revision = RecordContent.decode(content, of: record) else {
      throw SyncViolation(.malformed, "a record whose sealed content does not decode")
    }
    revision.record = SealedRecord(
      keyID: record.keyID, sealed: record.sealed, signature: record.signature, author: author)
    return .revision(revision)
  }
}

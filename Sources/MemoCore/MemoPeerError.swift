/// The one error type that crosses module boundaries and reaches the user.
///
/// Its `message` and `hint` are shown to a person, so they must never contain memo text,
/// titles, tags, passphrases or key material; `diagnostics` carries technical detail (a C
/// call, an errno) and is only ever logged, never shown without `--debug`.
public struct MemoPeerError: Error, Equatable, Sendable, CustomStringConvertible {
  /// Stable, documented error codes (docs/CLI.md). Scripts may match on them in `--json`
  /// output, and each maps to one exit status.
  public enum Code: String, Sendable, CaseIterable {
    /// The command line was wrong: unknown command or option, missing argument.
    case usage
    /// No memo (or entry) has the given id or prefix.
    case notFound = "not-found"
    /// An id prefix matched more than one memo.
    case ambiguousID = "ambiguous-id"
    /// Input was well-formed bytes but not an acceptable memo (empty, bad tag, …).
    case invalidInput = "invalid-input"
    /// Input exceeded a documented size limit.
    case tooLarge = "too-large"
    /// Input was not valid UTF-8.
    case invalidUTF8 = "invalid-utf8"
    /// A key or data directory or file is readable or writable by other users.
    case permissionsTooOpen = "permissions-too-open"
    /// The device key is missing while the data it protects exists.
    case keyMissing = "key-missing"
    /// The device key does not open this data directory.
    case wrongKey = "wrong-key"
    /// A sealed value failed authentication: tampered, truncated or moved.
    case integrity
    /// The database file is damaged or is not an SQLite database at all.
    case corruptDatabase = "corrupt-database"
    /// The database is a valid SQLite file that belongs to some other program.
    case foreignDatabase = "foreign-database"
    /// The database was written by a newer memo-peer with a schema we do not know.
    case newerDatabase = "newer-database"
    /// The disk (or quota) is full; the write was rolled back.
    case diskFull = "disk-full"
    /// Another storage failure (I/O error, read-only file system, locked database).
    case storage
    /// The cryptographic library failed in a way that is not an integrity failure.
    case crypto
    /// Reading or writing a file outside the store failed.
    case io
    /// The editor could not be started or exited with an error.
    case editor
    /// The user declined a confirmation.
    case cancelled
    /// A passphrase was missing, mismatched or wrong.
    case passphrase
    /// An export archive was damaged, truncated, or of an unknown version.
    case archive
    /// A local-network use needs a consent nobody has given yet, and nobody can be asked.
    case consentRequired = "consent-required"
    /// The user denied (or revoked) local-network access: dns_sd's PolicyDenied.
    case policyDenied = "policy-denied"
    /// A DNS-SD service type was used without being declared: dns_sd's NoAuth.
    case noAuth = "no-auth"
    /// The system's mDNS daemon (avahi-daemon) cannot be reached.
    case daemonUnavailable = "daemon-unavailable"
    /// DNS-SD failed for another reason.
    case discovery
    /// A peer is not in the trust store, or presented a key other than the one pinned.
    case untrustedPeer = "untrusted-peer"
    /// A connection to a peer could not be made or was lost: unreachable, handshake failed,
    /// timed out, closed, or the peer broke the protocol.
    case connection
    /// The device key is wrapped under a passphrase and not unlocked: memo content cannot
    /// be read or written until `memo-peer unlock`.
    case locked
    /// A lock or unlock was asked of a node whose key has no passphrase (protection none).
    case notProtected = "not-protected"
    /// The memo has conflict copies (or is one): a person resolves them first.
    case conflict
    /// The mass-delete guard held back a sync's deletes: a person decides.
    case syncHeld = "sync-held"
    /// A trusted device sent data that breaks the protocol's rules (docs/PROTOCOL.md,
    /// "Refusals"), or refused this device's as such: the sync stopped, nothing of the bad
    /// batch was stored. The message names the device and the kind of data.
    case protocolViolation = "protocol-violation"
    /// The memo belongs to a notebook this device only relays: it holds the memo's sealed
    /// revisions and no key to open them. Its members can read it.
    case sealed
  }

  public let code: Code
  /// What went wrong, for a person. Never contains memo content.
  public let message: String
  /// What to do next, for a person, in words that name no command (any reader may show it).
  public let hint: String?
  /// What to do next as a fact: each reader words it (the command line as the command to
  /// run, the page as what to do on the page). See `Remedy`.
  public let remedy: Remedy?
  /// Technical detail for `--debug` logs only (C call names, errno, SQLite codes).
  public let diagnostics: String?

  /// The dns_sd.h error code, for errors that have one (NoAuth, PolicyDenied, …).
  public let dnsServiceCode: Int32?

  public init(
    _ code: Code, _ message: String, hint: String? = nil, remedy: Remedy? = nil, diagnostics: String? = nil,
    dnsServiceCode: Int32? = nil
  ) {
    self.code = code
    self.message = message
    self.hint = hint
    self.remedy = remedy
    self.diagnostics = diagnostics
    self.dnsServiceCode = dnsServiceCode
  }

  public var description: String { "\(code.rawValue): \(message)" }

  /// The process exit status for this error (documented in docs/CLI.md).
  public var exitStatus: Int32 {
    switch code {
    case .usage: 2
    case .notFound, .ambiguousID: 3
    case .invalidInput, .tooLarge, .invalidUTF8: 4
    case .permissionsTooOpen, .keyMissing, .wrongKey, .passphrase, .notProtected: 5
    case .integrity, .corruptDatabase, .foreignDatabase, .newerDatabase, .archive: 6
    case .diskFull, .storage, .io: 7
    case .crypto: 8
    case .editor: 9
    case .cancelled: 10
    case .consentRequired: 11
    case .policyDenied: 12
    case .noAuth: 13
    case .daemonUnavailable: 14
    case .discovery: 15
    case .untrustedPeer: 16
    case .connection: 17
    case .locked: 18
    case .conflict: 19
    case .syncHeld: 20
    case .protocolViolation: 21
    case .sealed: 22
    }
  }
}

import MemoCore
import MemoCrypto
import MemoSystem

/// Who is using the device key: a person's command counts as activity for the idle timeout
/// of protection `complete`; the widget, `status` and the daemon do not, or a status bar
/// polling every few seconds would keep the node unlocked forever.
public enum KeyUse: Sendable {
  /// A command a person ran: restarts the idle timeout.
  case person
  /// The widget, `status`, the daemon: leaves the idle timeout running.
  case background
}

/// The device key and its protection: which class it is in, whether it is unlocked, and the
/// changes between them (`protect`, `unlock`, `lock`).
///
/// The unwrapped key of a protected node lives only in the kernel keyring (`SecretKeyring`)
/// between commands, and in a command's memory while it runs. Memos are never re-encrypted
/// by any of these operations: only the 32-byte key is wrapped, unwrapped or re-wrapped.
/// Every change is one atomic replacement of the key file, made only after the current
/// passphrase was verified, so a wrong passphrase or a crash leaves the file as it was.
public struct DeviceKeys: Sendable {
  public let paths: NodePaths
  let keyring: any SecretKeyring
  let kdfParameters: ScryptParameters
  let file: KeyFile

  public init(
    paths: NodePaths, keyring: any SecretKeyring = KernelKeyring(), kdfParameters: ScryptParameters = .standard
  ) {
    self.paths = paths
    self.keyring = keyring
    self.kdfParameters = kdfParameters
    file = KeyFile.device(paths)
  }

  /// The class, the lock state and (for `complete`) the idle timeout.
  public struct Status: Sendable, Equatable {
    public let protection: ProtectionClass
    public let lockState: LockState
    /// Seconds without use after which `complete` locks by itself; nil for other classes.
    public let idleTimeout: UInt32?
  }

  public func status() throws -> Status {
    guard file.exists else { return Status(protection: .none, lockState: .unprotected, idleTimeout: nil) }
    switch try file.contents() {
    case .plain: return Status(protection: .none, lockState: .unprotected, idleTimeout: nil)
    case .sealed: throw damagedDeviceKey
    case .wrapped(let wrapped):
      let names = KeyringNames(wrapped.keyID)
      let state = LockState.of(
        protection: wrapped.protection, keyInKeyring: keyring.contains(names.deviceKey),
        unlockedSinceBoot: keyring.contains(names.unlockedSinceBoot))
      return Status(
        protection: wrapped.protection, lockState: state,
        idleTimeout: wrapped.protection == .complete ? wrapped.idleTimeout : nil)
    }
  }

  /// Whether the node is locked now: what the page's front door, the web's lock watch and
  /// the daemon's live sessions ask, once a request or once a second. A node without a
  /// passphrase never is; a key file that cannot be read counts as not locked here, since
  /// nothing can then be opened anyway and the store's own open says why.
  public var isLocked: Bool {
    guard case .locked? = (try? status())?.lockState else { return false }
    return true
  }

  /// The device key, or nil while the node is locked. A person's use restarts the idle
  /// timeout of `complete`.
  public func dataKey(use: KeyUse) throws -> SecureBytes? {
    switch try file.contents() {
    case .plain(let key): return key
    case .sealed: throw damagedDeviceKey
    case .wrapped(let wrapped):
      let names = KeyringNames(wrapped.keyID)
      guard let key = try keyring.read(names.deviceKey, maxCount: AES256GCMKey.keySize) else { return nil }
      if use == .person && wrapped.protection == .complete {
        try keyring.setTimeout(names.deviceKey, seconds: wrapped.idleTimeout)
      }
      return key
    }
  }

  /// The device key, made (unprotected) on a node's first use (`MemoStore.open`).
  public func dataKeyCreatingIfMissing(use: KeyUse) throws -> SecureBytes? {
    file.exists ? try dataKey(use: use) : try file.create()
  }

  /// How the node's other secrets (identity key, discovery key, trust store) are kept, with
  /// the device key when it can be had. They follow the device key: plain without a
  /// passphrase, sealed under the device key with one (`NodeSecrets`).
  public enum SecretMode {
    /// Protection none: secrets are plain. `deviceKey` (nil on a node that has none yet)
    /// still opens a sealed one left by an interrupted `protect none`.
    case plain(deviceKey: SecureBytes?)
    /// A passphrase, from before secrets were sealed (wrapped key version 2): plain and
    /// sealed secrets are both read, and the next unlock seals the plain ones.
    case legacy(deviceKey: SecureBytes?)
    /// A passphrase (version 3): every secret is sealed; a plain one is refused.
    case sealed(deviceKey: SecureBytes?)

    /// The device key, or nil (locked, or none yet).
    public var deviceKey: SecureBytes? {
      switch self {
      case .plain(let key), .legacy(let key), .sealed(let key): key
      }
    }

    /// Whether a passphrase protects the node (so a missing key means locked).
    public var isProtected: Bool {
      if case .plain = self { return false }
      return true
    }

    /// Whether every secret must be sealed (a plain one is refused).
    var isSealed: Bool {
      if case .sealed = self { return true }
      return false
    }
  }

  /// The node's `SecretMode` now. Background use: reading a secret does not restart the
  /// idle timeout of `complete`.
  public func secretMode() throws -> SecretMode {
    guard file.exists else { return .plain(deviceKey: nil) }
    switch try file.contents() {
    case .plain(let key): return .plain(deviceKey: key)
    case .sealed: throw damagedDeviceKey
    case .wrapped(let wrapped):
      let key = try keyring.read(KeyringNames(wrapped.keyID).deviceKey, maxCount: AES256GCMKey.keySize)
      return wrapped.sealsSecrets ? .sealed(deviceKey: key) : .legacy(deviceKey: key)
    }
  }

  /// Unwraps the key with `passphrase` and puts it in the keyring. On a node protected
  /// before secrets were sealed, also seals them and rewrites the key file as version 3
  /// (with the same passphrase, class, timeout and key id); otherwise nothing changes on disk.
  @discardableResult
  public func unlock(passphrase: SecureBytes) throws -> Status {
    let wrapped = try wrappedKey(for: "unlock")
    let key = try wrapped.unwrap(passphrase: passphrase, magic: file.magic)
    try admit(key, wrapped)
    if !wrapped.sealsSecrets {
      try NodeSecrets(paths: paths, keys: self).sealPlainSecrets(with: key)
      try file.write(
        wrapped: try WrappedKey.wrap(
          key, passphrase: passphrase, protection: wrapped.protection, idleTimeout: wrapped.idleTimeout,
          keyID: wrapped.keyID, parameters: wrapped.parameters, magic: file.magic))
    }
    nudgeDaemon()
    return try status()
  }

  /// Removes the unwrapped key from the keyring: content is unreadable until `unlock`.
  public func lock() throws {
    let wrapped = try wrappedKey(for: "lock")
    try keyring.remove(KeyringNames(wrapped.keyID).deviceKey)
    nudgeDaemon()
  }

  /// Where `lock` and `unlock` leave a mark for a running `serve`: the kernel keyring tells
  /// nobody when a key leaves it, and the daemon, which sleeps on an inotify watch of the
  /// state folder (waking at most once a second otherwise), closes its sessions at once
  /// rather than at its next second. Empty; its only content is that it was written.
  public var lockChangedPath: String { paths.stateDirectory + "/lock-changed" }

  /// Best effort: a daemon that missed the mark still sees the lock within a second.
  private func nudgeDaemon() { try? PrivateFiles.writeAtomically([], to: lockChangedPath) }

  /// What `protect` did.
  public enum ProtectOutcome: Sendable, Equatable {
    /// Already as asked; nothing was written.
    case unchanged
    /// The key was wrapped under a passphrase for the first time.
    case protected
    /// Re-wrapped: another class, idle timeout or passphrase.
    case changed
    /// Unwrapped: protection none.
    case unprotected
  }

  /// Moves the key to `target`, asking for passphrases only as `ProtectionPlan` says.
  ///
  /// - Parameters:
  ///   - idleTimeout: for `complete`; nil keeps the current one (or the default).
  ///   - currentPassphrase: asked first, before anything else happens.
  ///   - newPassphrase: asked only once the current one proved right.
  public func protect(
    _ target: ProtectionClass, idleTimeout: UInt32?, changePassphrase: Bool,
    currentPassphrase: () throws -> SecureBytes, newPassphrase: () throws -> SecureBytes
  ) throws -> ProtectOutcome {
    if let idleTimeout, !ProtectionClass.idleTimeoutRange.contains(idleTimeout) {
      throw MemoPeerError(
        .invalidInput, "the idle timeout must be between 1 second and 7 days (604800 seconds)",
        hint: "for example --idle-timeout 300")
    }
    if idleTimeout != nil && target != .complete {
      throw MemoPeerError(
        .usage, "--idle-timeout applies only to protection complete", hint: "drop --idle-timeout, or choose complete")
    }
    let contents: KeyFile.Contents? = file.exists ? try file.contents() : nil
    let current = contents?.protection ?? .none
    var currentTimeout: UInt32?
    if case .wrapped(let wrapped)? = contents, wrapped.protection == .complete { currentTimeout = wrapped.idleTimeout }
    let timeout = idleTimeout ?? currentTimeout ?? ProtectionClass.defaultIdleTimeoutSeconds
    let plan = try ProtectionPlan.make(
      from: current, to: target, changePassphrase: changePassphrase,
      settingsChange: target == .complete && current == .complete && timeout != currentTimeout)
    switch plan.action {
    case .nothing:
      return .unchanged
    case .wrap:
      let key: SecureBytes
      if case .plain(let plain)? = contents { key = plain } else { key = try randomKey() }
      let wrapped = try WrappedKey.wrap(
        key, passphrase: try newPassphrase(), protection: target, idleTimeout: timeout,
        keyID: try WrappedKey.random(WrappedKey.keyIDSize), parameters: kdfParameters, magic: file.magic)
      // Secrets first, the key file last: until it is written, the node reads as unprotected
      // and opens the secrets already sealed with its plain key, so a crash loses nothing.
      try NodeSecrets(paths: paths, keys: self).sealPlainSecrets(with: key)
      // The key goes into the keyring before the file names it: the other way round, the
      // node read as locked in between, and a web server looking then suspended every
      // session of its page. Until the file is written the entry is under a key id nothing
      // names; if the write fails it is taken out again.
      try admit(key, wrapped)
      do { try file.write(wrapped: wrapped, exclusive: contents == nil) } catch {
        let names = KeyringNames(wrapped.keyID)
        try? keyring.remove(names.deviceKey)
        try? keyring.remove(names.unlockedSinceBoot)
        throw error
      }
      return .protected
    case .rewrap:
      guard case .wrapped(let old)? = contents else { return .unchanged }
      let passphrase = try currentPassphrase()
      let key = try old.unwrap(passphrase: passphrase, magic: file.magic)
      let wrapped = try WrappedKey.wrap(
        key, passphrase: plan.needsNewPassphrase ? try newPassphrase() : passphrase, protection: target,
        idleTimeout: timeout, keyID: old.keyID, parameters: kdfParameters, magic: file.magic)
      if !old.sealsSecrets { try NodeSecrets(paths: paths, keys: self).sealPlainSecrets(with: key) }
      try file.write(wrapped: wrapped)
      try admit(key, wrapped)
      return .changed
    case .unwrap:
      guard case .wrapped(let old)? = contents else { return .unchanged }
      let key = try old.unwrap(passphrase: try currentPassphrase(), magic: file.magic)
      // The key file first: from then on the node is unprotected and still opens the sealed
      // secrets with its plain key, so a crash before they are all rewritten loses nothing.
      try file.write(plain: key)
      try NodeSecrets(paths: paths, keys: self).unsealSecrets(with: key)
      let names = KeyringNames(old.keyID)
      try keyring.remove(names.deviceKey)
      try keyring.remove(names.unlockedSinceBoot)
      return .unprotected
    }
  }

  /// Puts an unwrapped key in the keyring with its class's timeout, and notes that the node
  /// was unlocked since boot.
  private func admit(_ key: SecureBytes, _ wrapped: WrappedKey) throws {
    let names = KeyringNames(wrapped.keyID)
    try keyring.store(names.deviceKey, secret: key)
    try keyring.setTimeout(names.deviceKey, seconds: wrapped.protection == .complete ? wrapped.idleTimeout : 0)
    try keyring.store(names.unlockedSinceBoot, secret: SecureBytes(copying: [1]))
  }

  private func wrappedKey(for action: String) throws -> WrappedKey {
    guard file.exists, case .wrapped(let wrapped) = try file.contents() else {
      throw MemoPeerError(
        .notProtected, "this node's key has no passphrase (protection none), so there is nothing to \(action)",
        remedy: .protectKey)
    }
    return wrapped
  }

  private var damagedDeviceKey: MemoPeerError {
    MemoPeerError(
      .wrongKey, "\(file.path) is damaged (a device key cannot be sealed)",
      hint: "restore the key file from a backup of this device")
  }

  private func randomKey() throws -> SecureBytes {
    do { return try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the device key", diagnostics: "\(error)")
    }
  }
}

/// The keyring names of one node's entries. The key id is random per node, so several nodes
/// (`MEMO_PEER_HOME`) of one user never share an entry.
struct KeyringNames {
  let deviceKey: String
  /// Present once the node was unlocked since the machine started; `lock` keeps it.
  let unlockedSinceBoot: String

  init(_ keyID: [UInt8]) {
    let id = Hex.encode(keyID)
    deviceKey = "memo-peer:\(id):device-key"
    unlockedSinceBoot = "memo-peer:\(id):unlocked-since-boot"
  }
}

internal import CSystemShims
import MemoCore
import MemoCrypto
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The kernel's per-user keyring (keyrings(7)) as a `SecretKeyring`.
///
/// Secrets are "user" keys linked into the user keyring (@u), which the kernel keeps until
/// the machine restarts (or until removed), and are looked up from the session keyring,
/// which normally links @u. The kernel keeps them in its own memory, never on disk and never
/// in swap, and gives them only to processes of this user (and to root).
///
/// There is only ever one key object per name, so one `remove` (invalidate) takes it away
/// from every process at once: a name this session already reaches is updated in place; a
/// new key is made in the process's own keyring (so the process possesses it, which the
/// kernel requires for linking it), linked into @u (replacing a stale key of that name no
/// session can reach any more) and then dropped from the process keyring. A session that
/// does not reach @u (one made with `keyctl session -`, as the tests do to stand for a
/// restart) does not find keys unlocked elsewhere; the key it unlocks itself is also linked
/// into that session, so it works there.
public struct KernelKeyring: SecretKeyring {
  public init() {}

  public func store(_ name: String, secret: SecureBytes) throws {
    do throws(SystemError) {
      if let existing = find(name) {
        try System.call("keyctl(UPDATE)") {
          secret.withUnsafeBytes { memo_keyring_update(existing, $0.baseAddress, $0.count) }
        }
        return
      }
      let serial = try System.call("add_key") {
        secret.withUnsafeBytes { memo_keyring_add_process_key(name, $0.baseAddress, $0.count) }
      }
      // Errors ignored: the process keyring goes with the process anyway.
      defer { _ = memo_keyring_unlink_from_process(serial) }
      try System.call("keyctl(LINK @u)") { memo_keyring_link_to_user(serial) }
      if find(name) != serial {
        try System.call("keyctl(LINK @s)") { memo_keyring_link_to_session(serial) }
      }
    } catch {
      throw Self.failure(error)
    }
  }

  public func read(_ name: String, maxCount: Int) throws -> SecureBytes? {
    guard let serial = find(name) else { return nil }
    var length = 0
    let secret: SecureBytes
    do {
      secret = try SecureBytes.filled(count: maxCount) { buffer in
        length = try System.call("keyctl(READ)") { memo_keyring_read(serial, buffer.baseAddress, buffer.count) }
      }
    } catch let error as SystemError {
      // Expired or removed between the search and the read: locked, not an error.
      if [ENOKEY, EKEYEXPIRED, EKEYREVOKED].contains(error.code) { return nil }
      throw Self.failure(error)
    }
    guard length == maxCount else {
      throw MemoPeerError(
        .wrongKey, "the kernel keyring holds a memo-peer key of the wrong size",
        remedy: .relock)
    }
    return secret
  }

  public func contains(_ name: String) -> Bool { find(name) != nil }

  public func setTimeout(_ name: String, seconds: UInt32) throws {
    guard let serial = find(name) else { return }
    do throws(SystemError) {
      try System.call("keyctl(SET_TIMEOUT)") { memo_keyring_set_timeout(serial, seconds) }
    } catch {
      throw Self.failure(error)
    }
  }

  public func remove(_ name: String) throws {
    guard let serial = find(name) else { return }
    do throws(SystemError) {
      try System.call("keyctl(INVALIDATE)") { memo_keyring_invalidate(serial) }
    } catch let error where error.code == ENOKEY {
      // Gone already (expired or removed by another process): what was asked.
    } catch {
      throw Self.failure(error)
    }
  }

  /// The key's serial number, or nil when the session reaches none of that name. A failed
  /// search is "not found", whatever the errno: callers then store anew, or have nothing to
  /// read or remove.
  private func find(_ name: String) -> Int32? {
    let serial = memo_keyring_search_session(name)
    return serial > 0 ? serial : nil
  }

  private static func failure(_ error: SystemError) -> MemoPeerError {
    var hint: String?
    var remedy: Remedy?
    switch error.code {
    case ENOSYS, EPERM:
      hint = "this system does not let memo-peer use the kernel keyring (a container's seccomp profile may block it)"
    case EDQUOT:
      hint = "your kernel keyring quota is full (see /proc/key-users); remove unused keys with keyctl"
    default:
      remedy = .debugLog
    }
    return MemoPeerError(
      .crypto, "the kernel keyring refused a request (\(error.errno))", hint: hint, remedy: remedy,
      diagnostics: error.diagnostics)
  }
}

internal import CSystemShims
import MemoCore
import MemoCrypto

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
    if let existing = find(name) {
      let updated = secret.withUnsafeBytes { memo_keyring_update(existing, $0.baseAddress, $0.count) }
      guard updated == 0 else { throw Self.failure("keyctl(UPDATE)", errno) }
      return
    }
    let serial = secret.withUnsafeBytes { memo_keyring_add_process_key(name, $0.baseAddress, $0.count) }
    guard serial > 0 else { throw Self.failure("add_key", errno) }
    defer { _ = memo_keyring_unlink_from_process(serial) }
    guard memo_keyring_link_to_user(serial) == 0 else { throw Self.failure("keyctl(LINK @u)", errno) }
    if find(name) != serial {
      guard memo_keyring_link_to_session(serial) == 0 else { throw Self.failure("keyctl(LINK @s)", errno) }
    }
  }

  public func read(_ name: String, maxCount: Int) throws -> SecureBytes? {
    guard let serial = find(name) else { return nil }
    var length = 0
    let secret = SecureBytes.filled(count: maxCount) { buffer in
      length = memo_keyring_read(serial, buffer.baseAddress, buffer.count)
    }
    if length < 0 {
      // Expired or removed between the search and the read: locked, not an error.
      if [ENOKEY, EKEYEXPIRED, EKEYREVOKED].contains(errno) { return nil }
      throw Self.failure("keyctl(READ)", errno)
    }
    guard length == maxCount else {
      throw MemoPeerError(
        .wrongKey, "the kernel keyring holds a memo-peer key of the wrong size",
        hint: "run `memo-peer lock`, then `memo-peer unlock` again")
    }
    return secret
  }

  public func contains(_ name: String) -> Bool { find(name) != nil }

  public func setTimeout(_ name: String, seconds: UInt32) throws {
    guard let serial = find(name) else { return }
    guard memo_keyring_set_timeout(serial, seconds) == 0 else { throw Self.failure("keyctl(SET_TIMEOUT)", errno) }
  }

  public func remove(_ name: String) throws {
    guard let serial = find(name) else { return }
    guard memo_keyring_invalidate(serial) == 0 || errno == ENOKEY else {
      throw Self.failure("keyctl(INVALIDATE)", errno)
    }
  }

  private func find(_ name: String) -> Int32? {
    let serial = memo_keyring_search_session(name)
    return serial > 0 ? serial : nil
  }

  private static func failure(_ call: String, _ code: Int32) -> MemoPeerError {
    let hint: String
    switch code {
    case ENOSYS, EPERM:
      hint = "this system does not let memo-peer use the kernel keyring (a container's seccomp profile may block it)"
    case EDQUOT:
      hint = "your kernel keyring quota is full (see /proc/key-users); remove unused keys with keyctl"
    default:
      hint = "see `memo-peer --debug` for the system call that failed"
    }
    return MemoPeerError(
      .crypto, "the kernel keyring refused a request (\(String(cString: strerror(code))))", hint: hint,
      diagnostics: "\(call): errno \(code)")
  }
}

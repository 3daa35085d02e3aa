import MemoCrypto

/// Where an unlocked device key waits between commands: the seam between the protection
/// logic and the kernel, so the logic can be tested against a fake.
///
/// Contract:
/// - `store` puts a secret under a name, replacing any secret of that name, where every
///   later process of this user *in a session that reaches the user keyring* finds it
///   (normally every session; a new keyring session stands for a reboot in tests).
/// - `read` returns the secret, or nil when this session cannot reach one of that name
///   (never stored, removed, expired, or stored before the "reboot").
/// - `setTimeout` makes the secret disappear by itself `seconds` from now (0: never).
/// - `remove` makes it unreachable for every process at once; removing a missing secret is
///   not an error.
/// No method ever logs or returns a secret in an error.
public protocol SecretKeyring: Sendable {
  func store(_ name: String, secret: SecureBytes) throws
  func read(_ name: String, maxCount: Int) throws -> SecureBytes?
  func contains(_ name: String) -> Bool
  func setTimeout(_ name: String, seconds: UInt32) throws
  func remove(_ name: String) throws
}

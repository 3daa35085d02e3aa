import MemoApp
import MemoCore
import MemoCrypto
import MemoVault

/// `protect`, `unlock` and `lock`: the device key's protection class and lock state.
enum ProtectionCommands {
  /// The options of `protect`.
  enum ProtectOptions {
    static let idleTimeout = ValueOption(
      "idle-timeout", value: "SECONDS", "complete only: lock after this long without use")
    static let changePassphrase = Flag(
      "change-passphrase", "set a new passphrase (keeps the class unless CLASS is given)")
    static let passphraseFD = SharedOptions.passphraseFD.withHelp(
      "read the current passphrase from this file descriptor")
    static let newPassphraseFD = ValueOption(
      "new-passphrase-fd", value: "N", "read the new passphrase from this file descriptor")
    static let json = SharedOptions.json.withHelp(
      "print {schema, protection, state, idle_timeout, unlocked_since_boot, changed}")
  }

  static let protect = Command(
    name: "protect", summary: "Choose how the device key is protected: none, after-first-unlock or complete.",
    details: """
      none keeps the key unwrapped (file permissions only), for headless hosts that must work
      unattended. after-first-unlock wraps it under a passphrase: after each restart,
      `memo-peer unlock` puts it in the kernel keyring until the next restart or `memo-peer
      lock`. complete does the same and also locks after --idle-timeout seconds without use
      (default 300). Only the key is re-wrapped: memos are never re-encrypted. Changing a
      protected key asks for its current passphrase first. Without CLASS, shows the current
      protection. Passphrases come from the terminal (not echoed), or from descriptors:
      --passphrase-fd N (the current one) and --new-passphrase-fd M (the new one).
      """,
    options: [
      ProtectOptions.idleTimeout, ProtectOptions.changePassphrase, ProtectOptions.passphraseFD,
      ProtectOptions.newPassphraseFD, ProtectOptions.json,
    ],
    positionals: [
      PositionalSpec(
        name: "CLASS", optional: true, help: "none, after-first-unlock or complete",
        completion: .choices(["none", "after-first-unlock", "complete"]))
    ]
  ) { context in
    let requested = try context.arguments.positional(0).map(parseClass)
    let timeout = try context.arguments[ProtectOptions.idleTimeout].map(parseTimeout)
    let console = context.console
    let change = try context.app().protection.protect(
      requested, idleTimeout: timeout, changePassphrase: context.arguments.has(ProtectOptions.changePassphrase),
      currentPassphrase: {
        try console.passphrase(
          prompt: "Current passphrase: ", confirm: false, fd: try fd(context, ProtectOptions.passphraseFD))
      },
      newPassphrase: {
        try console.passphrase(
          prompt: "New passphrase: ", confirm: true, fd: try fd(context, ProtectOptions.newPassphraseFD))
      })
    printProtection(change, context)
  }

  /// The options of `unlock`.
  enum UnlockOptions {
    static let passphraseFD = SharedOptions.passphraseFD
    static let json = SharedOptions.json.withHelp(
      "print {schema, protection, state, idle_timeout, unlocked_since_boot}")
  }

  static let unlock = Command(
    name: "unlock", summary: "Unlock memo content with the passphrase, until restart, `lock` or the idle timeout.",
    details: """
      Unwraps the device key and keeps it in your kernel keyring (never on disk), where every
      memo-peer of yours, the daemon included, finds it. A wrong passphrase changes nothing.
      The passphrase comes from the terminal (not echoed) or, for scripts, as one line from
      --passphrase-fd N.
      """,
    options: [UnlockOptions.passphraseFD, UnlockOptions.json],
    positionals: []
  ) { context in
    let change = try context.app().protection.unlock {
      try context.console.passphrase(
        prompt: "Passphrase: ", confirm: false, fd: try fd(context, UnlockOptions.passphraseFD))
    }
    printProtection(change, context)
  }

  /// The options of `lock`.
  enum LockOptions {
    static let json = SharedOptions.json.withHelp(
      "print {schema, protection, state, idle_timeout, unlocked_since_boot}")
  }

  static let lock = Command(
    name: "lock", summary: "Lock memo content now: nothing can read it until `memo-peer unlock`.",
    details: """
      Removes the unwrapped device key from the kernel keyring. Commands running now keep the
      copy they hold until they finish; every later one, and the daemon, finds the node
      locked. Titles of memos not marked private stay listable.
      """,
    options: [LockOptions.json],
    positionals: []
  ) { context in
    printProtection(try context.app().protection.lock(), context)
  }

  // MARK: - Helpers

  static func printProtection(_ change: ProtectionChange, _ context: CommandContext) {
    if context.wantsJSON {
      context.printJSON(ProtectionJSON(change))
    } else {
      context.console.print(describe(change.status))
    }
  }

  /// `protection complete (locks after 300 s without use): unlocked`
  static func describe(_ status: DeviceKeys.Status) -> String {
    var text = "protection \(status.protection.rawValue)"
    if let timeout = status.idleTimeout { text += " (locks after \(timeout) s without use)" }
    text += ": \(status.lockState.name)"
    if status.lockState == .locked(unlockedSinceBoot: false) { text += " (not unlocked since the machine started)" }
    return text
  }

  static func parseClass(_ text: String) throws -> ProtectionClass {
    guard let protection = ProtectionClass(rawValue: text) else {
      throw ArgumentParser.usage(
        "unknown protection class \(ArgumentParser.echo(text))",
        suggestion: ArgumentParser.closest(to: text, among: ProtectionClass.allCases.map(\.rawValue)),
        command: "protect")
    }
    return protection
  }

  static func parseTimeout(_ text: String) throws -> UInt32 {
    guard let seconds = UInt32(text), ProtectionClass.idleTimeoutRange.contains(seconds) else {
      throw ArgumentParser.usage(
        "--idle-timeout needs a number of seconds from 1 to 604800", suggestion: nil, command: "protect")
    }
    return seconds
  }

  /// A `--…-fd N` option's descriptor number.
  static func fd(_ context: CommandContext, _ option: ValueOption) throws -> Int32? {
    guard let text = context.arguments[option] else { return nil }
    guard let fd = Int32(text), fd >= 0 else {
      throw ArgumentParser.usage("--\(option.spec.name) needs a file descriptor number", suggestion: nil, command: nil)
    }
    return fd
  }
}

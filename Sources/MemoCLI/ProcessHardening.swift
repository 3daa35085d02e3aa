import CSystemShims
import MemoCore
import MemoCrypto
import MemoNode

/// What memo-peer does to itself before anything else, so what it holds cannot be read out
/// of it: not dumpable (no core file, no ptrace or /proc/PID/mem by other processes of the
/// user) and a core limit of 0. Secrets are also locked into RAM page by page where the
/// kernel allows it (`SecureBytes`); `doctor` says when it does not.
enum ProcessHardening {
  static func apply() {
    _ = memo_harden_process()
    MemoryLocking.enableOpenSSLSecureHeap()
  }

  /// `doctor`'s findings about this process's own protection.
  static func checks() -> [DoctorCheck] {
    let dumpable = memo_process_dumpable()
    let core = memo_core_limit()
    let protected = dumpable == 0 && core == 0
    let lockable = MemoryLocking.probe() && MemoryLocking.openSSLSecureHeap
    let limit = memo_memlock_limit()
    let limitText = limit == -2 ? "unlimited" : limit < 0 ? "unknown" : "\(limit / 1024) KiB"
    return [
      DoctorCheck(
        name: "process protection", ok: protected,
        detail: protected
          ? "memo-peer cannot be dumped or traced by other processes, and writes no core files"
          : "memo-peer could not make itself undumpable (dumpable \(dumpable), core limit \(core))",
        fix: protected ? nil : "check that no security module blocks prctl(PR_SET_DUMPABLE) and setrlimit"),
      DoctorCheck(
        name: "key memory", ok: lockable,
        detail: lockable
          ? "keys, and OpenSSL's private keys, are held in locked memory (mlock), so they never reach swap (limit \(limitText))"
          : "the kernel does not let memo-peer lock key memory (RLIMIT_MEMLOCK \(limitText)): keys may reach swap",
        fix: lockable
          ? nil
          : "raise the limit (`ulimit -l`, LimitMEMLOCK= in the systemd unit, /etc/security/limits.conf) or encrypt swap"
      ),
    ]
  }
}

import MemoApp
import MemoCore
import MemoNode

/// `memo-peer doctor`: discovery failing in silence, explained.
enum DoctorCommand {
  /// The options of `doctor`.
  enum DoctorOptions {
    static let json = SharedOptions.json.withHelp("print {schema, ok, checks: [{name, ok, detail, fix}]} as JSON")
  }

  static let doctor = Command(
    name: "doctor", summary: "Explain why discovery finds nothing, and how to fix it.",
    details: """
      Checks consent, the D-Bus system bus, avahi-daemon, the network interfaces, the daemon
      (`serve`) and its port, (only with consent) whether this node sees its own
      advertisement and which trusted devices met before DNS-SD shows — trying the addresses
      of those it does not (remembered, or given with `trust address`), and naming filtered
      multicast when only an address answers — and how memo-peer protects what it holds in
      memory (not dumpable, no core files, keys in locked memory). Exits 0 when every check
      passes, 1 otherwise (a trusted device that answers on no path is a failure).
      """,
    options: [DoctorOptions.json],
    positionals: []
  ) { context in
    let checks = try context.app().doctor.run(environment: context.environment) + ProcessHardening.checks()
    let ok = checks.allSatisfy(\.ok)
    if context.wantsJSON {
      struct DoctorJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let ok: Bool
        let checks: [DoctorCheck]
      }
      context.printJSON(DoctorJSON(ok: ok, checks: checks))
    } else {
      for check in checks {
        context.console.print("\(check.ok ? "ok  " : "FAIL") \(check.name): \(check.detail)")
        if let fix = check.fix { context.console.print("     fix: \(fix)") }
      }
    }
    if !ok { throw DoctorFound() }
  }
}

/// `doctor` found a problem: exit status 1, its findings already printed.
struct DoctorFound: Error {}

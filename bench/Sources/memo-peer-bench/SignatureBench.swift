import Foundation
import MemoCrypto

/// Ed25519 sign and verify per operation (µs) for a 300-byte message (about a signed
/// revision's header and a sealed title), 10,000 of each, next to `openssl speed -seconds 1
/// ed25519` in the same run (best of 3 each, interleaved). Both are user CPU time, as
/// `openssl speed` counts by default, so other load on the machine does not enter. Each of
/// ours is a whole call as sync version 3 makes it: a signature through OpenSSL's EVP (a
/// fresh EVP_MD_CTX and init each), a verification through libsodium from the key's 32
/// bytes; `openssl speed` reuses one initialised context and signs 20 bytes, so a signing
/// ratio a little above 1 is the cost of those, not of the curve arithmetic.
struct SignatureBench {
  let options: BenchOptions
  static let operations = 10_000
  static let messageSize = 300

  func run(into report: inout BenchReport) throws {
    print("Ed25519 (µs per operation, \(Self.messageSize)-byte message, \(Self.operations) each):")
    let key = try Ed25519.SigningKey.random()
    let message = (0..<Self.messageSize).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    let signature = try key.signature(for: message)
    // Best of 3, interleaved with openssl's, so both see the same machine load.
    var baseline = (sign: Double.infinity, verify: Double.infinity)
    var sign = Double.infinity
    var verify = Double.infinity
    for _ in 0..<3 {
      let openSSL = try openSSLSpeed()
      baseline = (min(baseline.sign, openSSL.sign), min(baseline.verify, openSSL.verify))
      sign = min(sign, try userSeconds { for _ in 0..<Self.operations { _ = try key.signature(for: message) } })
      var valid = 0
      verify = min(
        verify,
        userSeconds {
          for _ in 0..<Self.operations where Ed25519.verify(signature, message: message, publicKey: key.publicKey) {
            valid += 1
          }
        })
      guard valid == Self.operations else { throw BenchError("a valid signature did not verify") }
    }
    let perOperation = 1e6 / Double(Self.operations)
    report.add(
      "sign", value: sign * perOperation, unit: "µs", baselineName: "openssl speed", baseline: baseline.sign)
    report.add(
      "verify", value: verify * perOperation, unit: "µs", baselineName: "openssl speed", baseline: baseline.verify)
  }

  /// User CPU seconds of this process spent in `body` (getrusage; the other threads are idle).
  private func userSeconds(_ body: () throws -> Void) rethrows -> Double {
    func now() -> Double {
      var usage = rusage()
      getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
      return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    }
    let start = now()
    try body()
    return now() - start
  }

  /// `openssl speed -seconds 1 ed25519`: its summary line ends in sign/s and verify/s,
  /// turned into µs per operation.
  private func openSSLSpeed() throws -> (sign: Double, verify: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["speed", "-seconds", "1", "ed25519"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard
      let line = output.split(separator: "\n").last(where: { $0.contains("(Ed25519)") }),
      case let fields = line.split(separator: " "), fields.count >= 2,
      let signs = Double(fields[fields.count - 2]), let verifies = Double(fields[fields.count - 1]),
      signs > 0, verifies > 0
    else { throw BenchError("could not read `openssl speed ed25519` output") }
    return (1e6 / signs, 1e6 / verifies)
  }
}

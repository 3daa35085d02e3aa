import Foundation
import MemoCrypto

/// Seal/open throughput against `openssl speed -evp aes-256-gcm` at the same block size,
/// interleaved so both see the same machine load.
struct AEADBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    print("AES-256-GCM (MB/s, 1 MB = 10^6 bytes):")
    let key = try AES256GCMKey(SecureBytes.random(count: 32))
    let associatedData = Array("memo-peer/1\0memo\0bench\0body\01".utf8)
    for size in [1024, 16 * 1024] {
      let plaintext = [UInt8](repeating: 0x61, count: size)
      let sealedSample = try key.seal(plaintext, associatedData: associatedData)
      var bestSeal = 0.0
      var bestOpen = 0.0
      var bestOpenSSL = 0.0
      for _ in 0..<3 {
        bestOpenSSL = max(bestOpenSSL, try openSSLSpeed(bytes: size))
        bestSeal = max(bestSeal, try throughput(size) { _ = try key.seal(plaintext, associatedData: associatedData) })
        bestOpen = max(
          bestOpen, try throughput(size) { _ = try key.open(sealedSample, associatedData: associatedData) })
      }
      let label = size >= 1024 * 16 ? "16 KiB" : "1 KiB"
      let target = size == 16 * 1024 ? "≥ 80% of openssl" : nil
      report.add(
        "seal \(label)", value: bestSeal, unit: "MB/s", baselineName: "openssl speed", baseline: bestOpenSSL,
        target: target, met: target.map { _ in bestSeal / bestOpenSSL >= 0.8 })
      report.add(
        "open \(label)", value: bestOpen, unit: "MB/s", baselineName: "openssl speed", baseline: bestOpenSSL,
        target: target, met: target.map { _ in bestOpen / bestOpenSSL >= 0.8 })
    }
  }

  /// MB/s of `operation` on `size`-byte inputs over about one second.
  private func throughput(_ size: Int, _ operation: () throws -> Void) throws -> Double {
    var operations = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: UInt64 = 0
    while elapsed < 1_000_000_000 {
      for _ in 0..<64 { try operation() }
      operations += 64
      elapsed = DispatchTime.now().uptimeNanoseconds - start
    }
    return Double(operations * size) / (Double(elapsed) / 1e9) / 1e6
  }

  /// `openssl speed -evp aes-256-gcm -bytes N`, parsed from its summary line (in 1000s of
  /// bytes per second), converted to MB/s.
  private func openSSLSpeed(bytes: Int) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["speed", "-evp", "aes-256-gcm", "-bytes", String(bytes), "-seconds", "1"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard
      let line = output.split(separator: "\n").last(where: { $0.lowercased().hasPrefix("aes-256-gcm") }),
      let field = line.split(separator: " ").last, field.hasSuffix("k"), let thousands = Double(field.dropLast())
    else { throw BenchError("could not read `openssl speed` output") }
    return thousands * 1000 / 1e6
  }
}

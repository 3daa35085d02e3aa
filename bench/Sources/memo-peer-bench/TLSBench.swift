import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoTransport

/// The trusted connection on loopback (127.0.0.1 only), against OpenSSL's own tools with
/// the same kind of certificates (Ed25519, mutual authentication, TLS 1.3), in the same run:
///  - setup: full handshakes per second, memo-peer client → memo-peer server, vs
///    `openssl s_time -new` → `openssl s_server -verify`;
///  - throughput: 64 KiB frames, memo-peer client → server, vs `openssl s_client` piping
///    the same number of bytes into `openssl s_server`.
/// Target: throughput at least 0.7 of openssl's.
struct TLSBench {
  let options: BenchOptions
  static let frameSize = 64 * 1024
  static let totalBytes = 256 << 20

  func run(into report: inout BenchReport) throws {
    print("TLS 1.3 on loopback:")
    let scratch = try makeScratch()
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let serverIdentity = try DeviceIdentity(seed: SecureBytes.random(count: 32))
    let clientIdentity = try DeviceIdentity(seed: SecureBytes.random(count: 32))
    let received = ByteCounter()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: serverIdentity, role: .server),
      accepts: { $0 == clientIdentity.deviceID }, events: { _ in },
      handler: { connection in
        while let frame = try? connection.receive() {
          if frame.kind == .ping && frame.payload.isEmpty {
            try? connection.send(Frame(.pong))
          } else {
            received.add(frame.payload.count)
          }
        }
      })
    defer { server.stop() }
    let client = TLSClient(context: try TLSContext(identity: clientIdentity, role: .client))
    try writeOpenSSLCredentials(in: scratch)

    var bestSetup = 0.0
    var bestSetupBaseline = 0.0
    var bestThroughput = 0.0
    var bestThroughputBaseline = 0.0
    for _ in 0..<max(1, options.repeats / 2) {
      bestSetupBaseline = max(bestSetupBaseline, try openSSLHandshakes(scratch))
      bestSetup = max(bestSetup, try handshakes(client, port: server.port, expected: serverIdentity.deviceID))
      bestThroughputBaseline = max(bestThroughputBaseline, try openSSLThroughput(scratch))
      bestThroughput = max(
        bestThroughput, try throughput(client, port: server.port, expected: serverIdentity.deviceID))
    }
    report.add(
      "connection setup", value: bestSetup, unit: "handshakes/s", baselineName: "openssl s_time",
      baseline: bestSetupBaseline, target: nil, met: nil)
    report.add(
      "64 KiB frames", value: bestThroughput, unit: "MB/s", baselineName: "openssl s_client→s_server",
      baseline: bestThroughputBaseline, target: "≥ 0.7 of openssl", met: bestThroughput / bestThroughputBaseline >= 0.7)
  }

  /// Sequential full handshakes (each with a ping round trip, so the server has checked
  /// the client's certificate) for about two seconds.
  private func handshakes(_ client: TLSClient, port: UInt16, expected: DeviceID) throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    var count = 0
    while DispatchTime.now().uptimeNanoseconds - start < 2_000_000_000 && count < 20_000 {
      let connection = try client.connect(host: "127.0.0.1", port: port) { $0 == expected }
      try connection.send(Frame(.ping))
      _ = try connection.receive()
      connection.shutdown()
      count += 1
    }
    return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
  }

  /// MB/s of 64 KiB frames until the server confirms it has them all.
  private func throughput(_ client: TLSClient, port: UInt16, expected: DeviceID) throws -> Double {
    let payload = [UInt8](repeating: 0x5A, count: Self.frameSize)
    let start = DispatchTime.now().uptimeNanoseconds
    let connection = try client.connect(host: "127.0.0.1", port: port) { $0 == expected }
    for _ in 0..<(Self.totalBytes / Self.frameSize) { try connection.send(Frame(.pong, payload: payload)) }
    try connection.send(Frame(.ping))
    _ = try connection.receive()
    connection.shutdown()
    return Double(Self.totalBytes) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9) / 1e6
  }

  private func openSSLHandshakes(_ scratch: String) throws -> Double {
    let port = freePort()
    let server = try spawn(
      [
        "s_server", "-accept", "127.0.0.1:\(port)", "-tls1_3", "-cert", "\(scratch)/server.crt", "-key",
        "\(scratch)/server.key", "-verify", "1", "-quiet", "-naccept", "100000",
      ])
    defer { stop(server) }
    try waitForPort(port)
    let timer = try spawn(
      [
        "s_time", "-connect", "127.0.0.1:\(port)", "-new", "-time", "2", "-cert", "\(scratch)/client.crt", "-key",
        "\(scratch)/client.key",
      ], captureOutput: true)
    timer.process.waitUntilExit()
    let output = String(decoding: timer.output!.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    // "1234 connections in 2.00s; 617.00 connections/user sec, …" and "… in 2 real seconds"
    guard let line = output.split(separator: "\n").first(where: { $0.contains("real seconds") }),
      let connections = Double(line.split(separator: " ").first ?? ""),
      let seconds = line.split(separator: " ").compactMap({ Double($0) }).dropFirst().first, seconds > 0
    else { throw BenchError("could not read openssl s_time's output: \(output.suffix(200))") }
    return connections / seconds
  }

  private func openSSLThroughput(_ scratch: String) throws -> Double {
    let port = freePort()
    let start = DispatchTime.now().uptimeNanoseconds
    let server = try spawn(
      [
        "s_server", "-accept", "127.0.0.1:\(port)", "-tls1_3", "-cert", "\(scratch)/server.crt", "-key",
        "\(scratch)/server.key", "-verify", "1", "-quiet", "-naccept", "1",
      ])
    try waitForPort(port)
    let client = try spawn(
      [
        "s_client", "-connect", "127.0.0.1:\(port)", "-quiet", "-no_ign_eof", "-cert", "\(scratch)/client.crt",
        "-key", "\(scratch)/client.key",
      ], stdin: "\(scratch)/payload")
    server.process.waitUntilExit()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    stop(client)
    return Double(Self.totalBytes) / elapsed / 1e6
  }

  // MARK: - Plumbing

  private func makeScratch() throws -> String {
    let path = NSTemporaryDirectory() + "memo-peer-tls-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  private func writeOpenSSLCredentials(in scratch: String) throws {
    for role in ["server", "client"] {
      for arguments in [
        ["genpkey", "-algorithm", "ed25519", "-out", "\(scratch)/\(role).key"],
        [
          "req", "-x509", "-new", "-key", "\(scratch)/\(role).key", "-subj", "/CN=bench", "-days", "1", "-out",
          "\(scratch)/\(role).crt",
        ],
      ] {
        let tool = try spawn(arguments)
        tool.process.waitUntilExit()
        guard tool.process.terminationStatus == 0 else { throw BenchError("openssl \(arguments[0]) failed") }
      }
    }
    let chunk = Data(repeating: 0x5A, count: 1 << 20)
    _ = FileManager.default.createFile(atPath: "\(scratch)/payload", contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(scratch)/payload"))
    for _ in 0..<(Self.totalBytes >> 20) { handle.write(chunk) }
    try handle.close()
  }

  /// Runs openssl. s_server reads its stdin too and shuts down at its end, so a server gets
  /// a pipe that stays open (never written) rather than /dev/null.
  private func spawn(_ arguments: [String], stdin: String? = nil, captureOutput: Bool = false) throws -> (
    process: Process, output: Pipe?
  ) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    if arguments.first == "s_server" {
      process.standardInput = Pipe()
    } else {
      process.standardInput = FileHandle(forReadingAtPath: stdin ?? "/dev/null")
    }
    let pipe = captureOutput ? Pipe() : nil
    process.standardOutput = pipe ?? FileHandle(forWritingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    return (process, pipe)
  }

  private func stop(_ spawned: (process: Process, output: Pipe?)) {
    if spawned.process.isRunning { kill(spawned.process.processIdentifier, SIGTERM) }
    spawned.process.waitUntilExit()
  }

  /// A port that was free a moment ago (the kernel picks it).
  private func freePort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        _ = bind(fd, $0, length)
        return getsockname(fd, $0, &length)
      }
    }
    return UInt16(bigEndian: address.sin_port)
  }

  /// Waits until something listens on 127.0.0.1:port, by reading /proc/net/tcp rather
  /// than connecting (a probe connection would use up s_server's accept count).
  private func waitForPort(_ port: UInt16) throws {
    let wanted = String(format: "0100007F:%04X", port)
    for _ in 0..<200 {
      let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
      let listening = table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[1] == wanted && fields[3] == "0A"
      }
      if listening { return }
      Thread.sleep(forTimeInterval: 0.01)
    }
    throw BenchError("openssl s_server did not start on port \(port)")
  }
}

/// Bytes counted from several threads. `@unchecked Sendable`: every access to `total`
/// holds `lock`.
final class ByteCounter: @unchecked Sendable {
  private let lock = NSLock()
  private var total = 0
  func add(_ count: Int) { lock.withLock { total += count } }
}

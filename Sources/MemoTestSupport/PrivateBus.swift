import Foundation

/// A dbus-daemon of the test's own: a unix socket in a private temporary directory, no
/// service files (so nothing can be started on demand), nothing on the network; stopped by
/// `stop()`. Shared by the D-Bus tests (MemoDBusTests) and the Avahi-less discovery tests
/// (MemoDiscoveryTests).
public final class PrivateBus {
  /// Why a bus could not be started.
  public struct Failure: Error, CustomStringConvertible {
    public let description: String
  }

  /// Its D-Bus address (`unix:path=…`).
  public let address: String
  private let process = Process()
  private let directory: String

  public init() throws {
    guard let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first(where: FileManager.default.isExecutableFile)
    else { throw Failure(description: "dbus-daemon is missing: run `make deps`") }
    directory = NSTemporaryDirectory() + "memo-peer-bus-\(UUID().uuidString)"
    try FileManager.default.createDirectory(
      atPath: directory, withIntermediateDirectories: false,
      attributes: [.posixPermissions: 0o700])
    let socket = directory + "/bus"
    address = "unix:path=" + socket
    // No DOCTYPE line: dbus-daemon does not need one, and no Swift source holds markup that
    // looks like a web page (MemoWebTests.WebAssetsTests).
    let config = """
      <busconfig>
        <type>custom</type>
        <listen>\(address)</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow send_destination="*"/>
          <allow receive_sender="*"/>
          <allow own="*"/>
        </policy>
      </busconfig>
      """
    try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
    process.executableURL = URL(fileURLWithPath: daemon)
    process.arguments = ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile", "--nosyslog"]
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    // The socket file appears when dbus-daemon binds it, a moment before it listens: wait
    // until a connection is accepted (at most 2 s), not only for the file.
    for _ in 0..<100 where !Self.accepts(socket) {
      Thread.sleep(forTimeInterval: 0.02)
    }
    guard Self.accepts(socket) else {
      stop()
      throw Failure(description: "dbus-daemon did not start")
    }
  }

  /// Whether a unix-socket connection to `path` is accepted now.
  private static func accepts(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      buffer.copyBytes(from: bytes)
    }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
      }
    }
  }

  /// Stops the daemon (the one this object started, by its process) and removes its
  /// directory. Idempotent.
  public func stop() {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    try? FileManager.default.removeItem(atPath: directory)
  }
}

internal import CDBus
import Foundation
import MemoCore
import XCTest

@testable import MemoDiscovery

/// The D-Bus layer against a real bus daemon of the test's own (a private socket in a
/// temporary directory, no service files, nothing on the network), and Avahi's absence
/// from it: what users of a machine without avahi-daemon see.
final class BusConnectionTests: XCTestCase {
  private var bus: PrivateBus!

  override func setUpWithError() throws {
    bus = try PrivateBus()
  }

  override func tearDown() {
    bus?.stop()
    super.tearDown()
  }

  func testCallsAreAnsweredAndErrorsKeepTheirNames() throws {
    let connection = try BusConnection(address: bus.address)
    let id = try wait(
      connection,
      BusCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus", member: "GetId")
    ).get()
    XCTAssertEqual(id.kind, .methodReturn)
    XCTAssertEqual(id.arguments.first?.string?.count, 32, "the bus's id: 32 hex digits")

    let instance = ServiceInstance(name: "n", type: "_memo-peer._tcp.", domain: "local.", interfaceIndex: 0)
    let nobody = wait(connection, AvahiAPI.resolveService(instance, protocol: AvahiAPI.inet))
    XCTAssertThrowsError(try nobody.get()) { error in
      let error = error as? BusError
      XCTAssertEqual(error?.name, "org.freedesktop.DBus.Error.NameHasNoOwner", "not started on demand")
      XCTAssertEqual(error?.memoPeerError.code, .daemonUnavailable)
    }
    connection.close()
    XCTAssertThrowsError(try wait(connection, AvahiAPI.resolveService(instance, protocol: AvahiAPI.inet)).get()) {
      XCTAssertEqual($0 as? BusError, .disconnected)
    }
  }

  func testBrowsingWithoutAvahiSaysTheDaemonIsUnavailable() async throws {
    let session = try AvahiSession(busAddress: bus.address)
    do {
      for try await event in session.browse(type: "_memo-peer._tcp") { XCTFail("no daemon, yet \(event)") }
      XCTFail("the stream ended without an error")
    } catch let error as MemoPeerError {
      XCTAssertEqual(error.code, .daemonUnavailable)
      XCTAssertTrue(error.hint?.contains("systemctl start avahi-daemon") ?? false, "\(error)")
    }
    let instance = ServiceInstance(name: "n", type: "_memo-peer._tcp.", domain: "local.", interfaceIndex: 0)
    do {
      _ = try await session.resolve(instance, timeout: .seconds(5))
      XCTFail("resolved without a daemon")
    } catch let error as MemoPeerError {
      XCTAssertEqual(error.code, .daemonUnavailable)
    }
  }

  func testNoBusAtAllSaysTheDaemonIsUnavailable() {
    XCTAssertThrowsError(try AvahiSession(busAddress: "unix:path=/nonexistent/memo-peer-test-bus")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .daemonUnavailable)
    }
  }

  func testArgumentsSurviveLibdbusAndCallsNeverStartServices() throws {
    let call = BusCall(
      destination: "org.example", path: "/a", interface: "org.example.I", member: "M",
      arguments: [.int32(-1), .uint32(7), .uint16(33175), .string("_memo-peer._tcp"), .objectPath("/b")])
    let message = try XCTUnwrap(BusMessageCoding.makeMessage(call))
    defer { dbus_message_unref(message) }
    XCTAssertEqual(dbus_message_get_auto_start(message), 0)
    let parsed = BusMessageCoding.parse(message)
    XCTAssertEqual(parsed.arguments, call.arguments)
    XCTAssertEqual(parsed.member, "M")
    XCTAssertNil(
      BusMessageCoding.makeMessage(
        BusCall(
          destination: "a.b", path: "/", interface: "a.b", member: "M",
          arguments: [.bytes([1])])), "only the basic types Avahi's calls take")
  }

  /// Sends `call` and waits (at most 5 s) for its answer.
  private func wait(_ connection: BusConnection, _ call: BusCall) -> Result<BusMessage, BusError> {
    let answer = AnswerBox()
    let done = DispatchSemaphore(value: 0)
    connection.call(call) {
      answer.set($0)
      done.signal()
    }
    guard done.wait(timeout: .now() + 5) == .success else { return .failure(.timedOut) }
    return answer.get()
  }
}

private struct BusTestError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

private final class AnswerBox: @unchecked Sendable {
  private let lock = NSLock()
  private var result: Result<BusMessage, BusError> = .failure(.timedOut)
  func set(_ value: Result<BusMessage, BusError>) { lock.withLock { result = value } }
  func get() -> Result<BusMessage, BusError> { lock.withLock { result } }
}

/// A dbus-daemon of the test's own: a unix socket in a private temporary directory, no
/// service files (so nothing can be started on demand), stopped by `stop()`.
private final class PrivateBus {
  let address: String
  private let process = Process()
  private let directory: String

  init() throws {
    guard let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first(where: FileManager.default.isExecutableFile)
    else { throw BusTestError("dbus-daemon is missing: run `make deps`") }
    directory = NSTemporaryDirectory() + "memo-peer-bus-\(UUID().uuidString)"
    try FileManager.default.createDirectory(
      atPath: directory, withIntermediateDirectories: false,
      attributes: [.posixPermissions: 0o700])
    let socket = directory + "/bus"
    address = "unix:path=" + socket
    let config = """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
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
    for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) {
      Thread.sleep(forTimeInterval: 0.02)
    }
    guard FileManager.default.fileExists(atPath: socket) else {
      stop()
      throw BusTestError("dbus-daemon did not start")
    }
  }

  func stop() {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    try? FileManager.default.removeItem(atPath: directory)
  }
}

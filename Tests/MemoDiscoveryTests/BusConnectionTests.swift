import Foundation
import MemoCore
import MemoDBus
import MemoTestSupport
import Synchronization
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
    let connection = try DispatchedBusConnection(.address(bus.address))
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

  /// Sends `call` and waits (at most 5 s) for its answer.
  private func wait(_ connection: DispatchedBusConnection, _ call: BusCall) -> Result<BusMessage, BusError> {
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

private final class AnswerBox: Sendable {
  private let result = Mutex<Result<BusMessage, BusError>>(.failure(.timedOut))
  func set(_ value: Result<BusMessage, BusError>) { result.withLock { $0 = value } }
  func get() -> Result<BusMessage, BusError> { result.withLock { $0 } }
}

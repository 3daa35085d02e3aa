internal import CDBus
import Foundation
import MemoTestSupport
import XCTest

@testable import MemoDBus

/// The one libdbus wrapper, against a bus daemon of the test's own (nothing on the network,
/// no service files): blocking calls and signals as the session bus's notifications use
/// them, arguments through libdbus and back, and which bus an environment names.
final class BusConnectionTests: XCTestCase {
  private var bus: PrivateBus!

  override func setUpWithError() throws {
    bus = try PrivateBus()
  }

  override func tearDown() {
    bus?.stop()
    super.tearDown()
  }

  private static let busDaemon = BusCall(
    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
    member: "GetId")

  func testBlockingCallsAnswerAndErrorsKeepTheirNames() throws {
    let connection = try BusConnection(.address(bus.address))
    let id = try connection.call(Self.busDaemon, timeoutMilliseconds: 5000)
    XCTAssertEqual(id.kind, .methodReturn)
    XCTAssertEqual(id.arguments.first?.string?.count, 32, "the bus's id: 32 hex digits")

    let nobody = BusCall(
      destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
      interface: "org.freedesktop.Notifications", member: "Notify", startsService: true)
    XCTAssertThrowsError(try connection.call(nobody, timeoutMilliseconds: 5000)) {
      XCTAssertEqual(
        ($0 as? BusError)?.name, "org.freedesktop.DBus.Error.ServiceUnknown", "no service file: nothing to start")
    }
    connection.close()
    XCTAssertFalse(connection.isConnected)
    XCTAssertThrowsError(try connection.call(Self.busDaemon, timeoutMilliseconds: 5000)) {
      XCTAssertEqual($0 as? BusError, .disconnected)
    }
    XCTAssertNil(connection.popMessage())
  }

  func testSignalsMatchedAreReceived() throws {
    let connection = try BusConnection(.address(bus.address))
    try connection.addMatchAndWait("type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged'")
    // Another client's arrival is announced as a new name with an owner.
    let other = try BusConnection(.address(bus.address))
    defer { other.close() }
    let deadline = Date().addingTimeInterval(5)
    var announced: BusMessage?
    while announced == nil && Date() < deadline {
      connection.readWrite(timeoutMilliseconds: 100)
      while announced == nil, let message = connection.popMessage() {
        if message.kind == .signal && message.member == "NameOwnerChanged" { announced = message }
      }
    }
    let signal = try XCTUnwrap(announced, "no NameOwnerChanged within 5 s")
    XCTAssertEqual(signal.interface, "org.freedesktop.DBus")
    XCTAssertEqual(signal.arguments.count, 3, "(name, old owner, new owner)")
    XCTAssertTrue(signal.arguments.allSatisfy { $0.string != nil })
  }

  func testNoBusAtAllIsAnErrorByName() {
    XCTAssertThrowsError(try BusConnection(.address("unix:path=/nonexistent/memo-peer-test-bus"))) {
      XCTAssertEqual(($0 as? BusError)?.name, "org.freedesktop.DBus.Error.FileNotFound", "libdbus's name, kept")
    }
  }

  func testArgumentsSurviveLibdbusAndCallsNeverStartServices() throws {
    let call = BusCall(
      destination: "org.example", path: "/a", interface: "org.example.I", member: "M",
      arguments: [.int32(-1), .uint32(7), .uint16(33175), .string("_memo-peer._tcp"), .objectPath("/b")])
    let parsed = try XCTUnwrap(
      BusMessageCoding.withMessage(call) { message in
        XCTAssertEqual(dbus_message_get_auto_start(message), 0)
        return BusMessageCoding.parse(message)
      })
    XCTAssertEqual(parsed.arguments, call.arguments)
    XCTAssertEqual(parsed.member, "M")
    XCTAssertNil(
      BusMessageCoding.withMessage(
        BusCall(
          destination: "a.b", path: "/", interface: "a.b", member: "M",
          arguments: [.bytes([1])]), { _ in true }), "no call sends bytes")
  }

  func testContainersSurviveLibdbusAndServicesStartOnlyWhenAsked() throws {
    let arguments: [BusValue] = [
      .strings(["default", "Open"]), .properties([:]),
      .properties(["urgency": .uint32(1), "category": .string("im.received")]),
      .array([.array([.int32(1), .int32(2)]), .array([.int32(3)])]), .int32(-1),
    ]
    let call = BusCall(
      destination: "org.example", path: "/a", interface: "org.example.I", member: "Notify", arguments: arguments,
      startsService: true)
    let parsed = try XCTUnwrap(
      BusMessageCoding.withMessage(call) { message in
        XCTAssertEqual(dbus_message_get_auto_start(message), 1)
        XCTAssertEqual(String(cString: dbus_message_get_signature(message)), "asa{sv}a{sv}aaii")
        return BusMessageCoding.parse(message)
      })
    XCTAssertEqual(parsed.arguments, arguments)
    for untyped: BusValue in [.array([]), .array([.int32(1), .string("x")])] {
      XCTAssertNil(
        BusMessageCoding.withMessage(
          BusCall(destination: "a.b", path: "/", interface: "a.b", member: "M", arguments: [untyped]), { _ in true }),
        "an array needs one element type: \(untyped)")
    }
  }

  func testTheSessionBusIsTheOneTheEnvironmentNames() throws {
    XCTAssertEqual(
      BusAddress.session(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"]),
      .address("unix:path=/run/user/1000/bus"))
    let runtime = NSTemporaryDirectory() + "memo-peer-runtime-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    XCTAssertNil(BusAddress.session(environment: ["XDG_RUNTIME_DIR": runtime]), "no socket there")
    XCTAssertTrue(FileManager.default.createFile(atPath: runtime + "/bus", contents: nil))
    XCTAssertEqual(
      BusAddress.session(environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": runtime]),
      .address("unix:path=\(runtime)/bus"))
    XCTAssertNil(BusAddress.session(environment: ["XDG_RUNTIME_DIR": "relative/dir"]))
    XCTAssertNil(BusAddress.session(environment: [:]), "never autolaunch")
  }
}

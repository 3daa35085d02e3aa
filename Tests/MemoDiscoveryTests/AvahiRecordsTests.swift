import MemoDBus
import XCTest

@_spi(Fuzzing) @testable import MemoDiscovery

/// Avahi's D-Bus calls and answers, as values: no daemon needed.
final class AvahiRecordsTests: XCTestCase {
  func testBrowsersArePreparedThenStartedAndFallBackToNew() {
    let browser = AvahiAPI.Browser.services(type: "_memo-peer._tcp")
    let prepare = browser.prepare(interface: 2)
    XCTAssertEqual(prepare.interface, "org.freedesktop.Avahi.Server2")
    XCTAssertEqual(prepare.member, "ServiceBrowserPrepare")
    XCTAssertEqual(prepare.arguments, [.int32(2), .int32(-1), .string("_memo-peer._tcp"), .string(""), .uint32(0)])
    XCTAssertEqual(browser.new(interface: -1).interface, "org.freedesktop.Avahi.Server")
    XCTAssertEqual(browser.new(interface: -1).member, "ServiceBrowserNew")
    XCTAssertEqual(browser.start(path: "/Client1/ServiceBrowser1").member, "Start")
    XCTAssertEqual(browser.free(path: "/Client1/ServiceBrowser1").interface, "org.freedesktop.Avahi.ServiceBrowser")

    let types = AvahiAPI.Browser.serviceTypes
    XCTAssertEqual(types.prepare(interface: -1).member, "ServiceTypeBrowserPrepare")
    XCTAssertEqual(types.prepare(interface: -1).arguments, [.int32(-1), .int32(-1), .string(""), .uint32(0)])
    XCTAssertTrue(types.matchRule.contains("interface='org.freedesktop.Avahi.ServiceTypeBrowser'"))
  }

  func testEachAddressFamilyIsResolvedOverItsOwnTransport() {
    let instance = ServiceInstance(name: "memo-peer-1", type: "_memo-peer._tcp.", domain: "local.", interfaceIndex: 2)
    let call = AvahiAPI.resolveService(instance, protocol: AvahiAPI.inet6)
    XCTAssertEqual(call.member, "ResolveService")
    XCTAssertEqual(
      call.arguments,
      [
        .int32(2), .int32(1), .string("memo-peer-1"), .string("_memo-peer._tcp"), .string("local"), .int32(1),
        .uint32(0),
      ])
  }

  func testBrowseItemsUseTheDNSSDForms() throws {
    let item = try XCTUnwrap(
      AvahiItem(
        signal: [
          .int32(2), .int32(0), .string("memo-peer-1"), .string("_memo-peer._tcp"), .string("local"), .uint32(4),
        ],
        browser: .services(type: "_memo-peer._tcp")))
    XCTAssertEqual(
      item.instance, ServiceInstance(name: "memo-peer-1", type: "_memo-peer._tcp.", domain: "local.", interfaceIndex: 2)
    )
    XCTAssertEqual(item.transport, AvahiAPI.inet)

    let type = try XCTUnwrap(
      AvahiItem(
        signal: [.int32(2), .int32(1), .string("_memo-peer._tcp"), .string("local"), .uint32(0)],
        browser: .serviceTypes))
    XCTAssertEqual(type.instance.name, "_memo-peer")
    XCTAssertEqual(type.instance.type, "_tcp.")
    XCTAssertNil(AvahiItem(signal: [.int32(2)], browser: .serviceTypes))
    XCTAssertNil(AvahiItem(signal: [.string("x"), .int32(0)], browser: .serviceTypes))
  }

  func testAnInstanceComesWithItsFirstTransportAndGoesWithItsLast() {
    let instance = ServiceInstance(name: "n", type: "_memo-peer._tcp.", domain: "local.", interfaceIndex: 2)
    let (v4, v6) = (
      AvahiItemSetProbe.item(instance, AvahiAPI.inet), AvahiItemSetProbe.item(instance, AvahiAPI.inet6)
    )
    var set = AvahiItemSet()
    XCTAssertTrue(set.insert(v6))
    XCTAssertFalse(set.insert(v4))
    XCTAssertFalse(set.insert(v4), "a repeated item is not news")
    XCTAssertFalse(set.remove(v6))
    XCTAssertTrue(set.remove(v4))
    XCTAssertFalse(set.remove(v4), "already gone")
    XCTAssertTrue(set.insert(v4), "back again")
  }

  func testResolveRepliesGiveHostPortScopedAddressAndTXT() throws {
    let txt: BusValue = .array([.bytes(Array("v=1".utf8)), .bytes(Array("tag=0123456789abcdef".utf8))])
    let reply: [BusValue] = [
      .int32(1), .int32(1), .string("memo-peer-1"), .string("_memo-peer._tcp"), .string("local"),
      .string("lab-a.local"), .int32(1), .string("fe80::1"), .uint16(33175), txt, .uint32(0),
    ]
    let answer = try XCTUnwrap(AvahiResolution(reply: reply, interfaceIndex: 1))
    XCTAssertEqual(answer.host, "lab-a.local")
    XCTAssertEqual(answer.port, 33175)
    XCTAssertEqual(answer.address, "fe80::1%lo")
    XCTAssertEqual(TXTRecordBytes.decode(answer.txtRecord), ["v": "1", "tag": "0123456789abcdef"])
    XCTAssertNil(AvahiResolution(reply: Array(reply.prefix(5)), interfaceIndex: 1))
  }

  func testTXTWireFormatAndAddressScopes() {
    XCTAssertEqual(AvahiResolution.wireFormat([Array("a=b".utf8), []]), [3] + Array("a=b".utf8) + [0])
    XCTAssertEqual(AvahiResolution.wireFormat([Array(repeating: 1, count: 256)]), [])
    XCTAssertEqual(AvahiResolution.scoped("169.254.77.11", interfaceIndex: 1), "169.254.77.11")
    XCTAssertEqual(AvahiResolution.scoped("2001:db8::1", interfaceIndex: 1), "2001:db8::1")
    XCTAssertNil(AvahiResolution.scoped("lab-a.local", interfaceIndex: 1))
    XCTAssertEqual(AvahiNames.qualified("lab-a.local"), "lab-a.local.")
    XCTAssertEqual(AvahiNames.qualified("local."), "local.")
    XCTAssertEqual(AvahiNames.bare("_memo-peer._tcp."), "_memo-peer._tcp")
  }
}

/// Builds items the way browse signals do.
private enum AvahiItemSetProbe {
  static func item(_ instance: ServiceInstance, _ transport: Int32) -> AvahiItem {
    AvahiItem(
      signal: [
        .int32(Int32(instance.interfaceIndex)), .int32(transport), .string(instance.name),
        .string(AvahiNames.bare(instance.type)), .string(AvahiNames.bare(instance.domain)), .uint32(0),
      ], browser: .services(type: AvahiNames.bare(instance.type)))!
  }
}

import MemoDBus

/// The parts of avahi-daemon's D-Bus API (org.freedesktop.Avahi, avahi 0.8) that browsing
/// uses: names, protocol numbers and the calls, as values. Pure, so the calls are tested
/// without a daemon.
enum AvahiAPI {
  static let service = "org.freedesktop.Avahi"
  static let server = "org.freedesktop.Avahi.Server"
  /// avahi 0.8's second server interface: browsers made with `…Prepare` report nothing until
  /// `Start`, so a client can subscribe first and results from the cache come at once.
  static let server2 = "org.freedesktop.Avahi.Server2"

  /// AVAHI_IF_UNSPEC and AVAHI_PROTO_*, from avahi-common/address.h.
  static let anyInterface: Int32 = -1
  static let anyProtocol: Int32 = -1
  static let inet: Int32 = 0
  static let inet6: Int32 = 1

  /// What to browse for.
  enum Browser: Sendable, Equatable {
    /// Instances of one service type (`_memo-peer._tcp`).
    case services(type: String)
    /// The service types present on the network (DNS-SD's `_services._dns-sd._udp`).
    case serviceTypes

    /// The D-Bus interface of the browser object, and the stem of the server's methods.
    var interface: String {
      switch self {
      case .services: "org.freedesktop.Avahi.ServiceBrowser"
      case .serviceTypes: "org.freedesktop.Avahi.ServiceTypeBrowser"
      }
    }

    private var stem: String {
      switch self {
      case .services: "ServiceBrowser"
      case .serviceTypes: "ServiceTypeBrowser"
      }
    }

    /// The signals of every browser of this kind that avahi-daemon addresses to us.
    var matchRule: String { "type='signal',sender='\(AvahiAPI.service)',interface='\(interface)'" }

    /// `Server2.…BrowserPrepare`: makes the browser, which waits for `Start`.
    func prepare(interface: Int32) -> BusCall {
      BusCall(
        destination: AvahiAPI.service, path: "/", interface: AvahiAPI.server2, member: stem + "Prepare",
        arguments: arguments(interface: interface))
    }

    /// `Server.…BrowserNew`, for daemons older than 0.8: the browser starts by itself.
    func new(interface: Int32) -> BusCall {
      BusCall(
        destination: AvahiAPI.service, path: "/", interface: AvahiAPI.server, member: stem + "New",
        arguments: arguments(interface: interface))
    }

    func start(path: String) -> BusCall {
      BusCall(destination: AvahiAPI.service, path: path, interface: interface, member: "Start")
    }

    func free(path: String) -> BusCall {
      BusCall(destination: AvahiAPI.service, path: path, interface: interface, member: "Free")
    }

    /// (interface, protocol, [type,] domain, flags); the empty domain means `local`.
    private func arguments(interface: Int32) -> [BusValue] {
      switch self {
      case .services(let type):
        [.int32(interface), .int32(AvahiAPI.anyProtocol), .string(type), .string(""), .uint32(0)]
      case .serviceTypes:
        [.int32(interface), .int32(AvahiAPI.anyProtocol), .string(""), .uint32(0)]
      }
    }
  }

  /// `Server.ResolveService`: one round trip that answers host name, one address of the
  /// IP family `addressProtocol`, port and TXT record, from the daemon's cache when it can.
  /// `protocol` is the transport the answer must have come over; Avahi publishes A records
  /// only over IPv4 by default, so each family is asked over its own transport.
  static func resolveService(_ instance: ServiceInstance, protocol: Int32) -> BusCall {
    BusCall(
      destination: service, path: "/", interface: server, member: "ResolveService",
      arguments: [
        .int32(instance.interfaceIndex == 0 ? anyInterface : Int32(bitPattern: instance.interfaceIndex)),
        .int32(`protocol`), .string(instance.name), .string(AvahiNames.bare(instance.type)),
        .string(AvahiNames.bare(instance.domain)), .int32(`protocol`), .uint32(0),
      ])
  }
}

import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Listening sockets on the loopback addresses, made here rather than by libmicrohttpd so
/// that the only `bind` is on an address from `LoopbackAddress`, and a port in use is a
/// clear error.
enum LoopbackListener {
  /// A listening, non-blocking, close-on-exec socket on `address:port` (port 0: any free
  /// port), and the port it got.
  static func listen(_ address: LoopbackAddress, port: UInt16, backlog: Int32 = 128) throws(ListenFailure) -> (
    fd: Int32, port: UInt16
  ) {
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_family = address == .ipv6 ? AF_INET6 : AF_INET
    var list: UnsafeMutablePointer<addrinfo>?
    // getaddrinfo answers with codes of its own, not errnos: a numeric loopback address it
    // refuses is one this machine does not have.
    guard getaddrinfo(address.rawValue, String(port), &hints, &list) == 0, let info = list?.pointee,
      let socketAddress = info.ai_addr
    else { throw ListenFailure(address: address, port: port, code: EADDRNOTAVAIL) }
    defer { freeaddrinfo(list) }
    let fd: Int32
    do throws(SystemError) {
      fd = try System.call("socket") {
        socket(info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
      }
    } catch {
      throw failure(address, port, error)
    }
    var yes: Int32 = 1
    // Cannot fail on a new IPv6 socket; were it to, bind would still keep to ::1.
    if address == .ipv6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size)) }
    do throws(SystemError) {
      try System.call("bind") { bind(fd, socketAddress, info.ai_addrlen) }
      try System.call("listen") { Glibc.listen(fd, backlog) }
    } catch {
      close(fd)
      throw failure(address, port, error)
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var bound = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &bound) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    // sin_port and sin6_port sit at the same offset.
    let boundPort = withUnsafePointer(to: &bound) {
      $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    }
    return (fd, boundPort)
  }

  static func failure(_ address: LoopbackAddress, _ port: UInt16, _ error: SystemError) -> ListenFailure {
    ListenFailure(address: address, port: port, code: error.code)
  }
}

/// Why a listening socket could not be made.
struct ListenFailure: Error {
  let address: LoopbackAddress
  let port: UInt16
  let code: Int32

  /// The machine has no such address (IPv6 disabled): the other one may do.
  var isUnavailable: Bool { code == EADDRNOTAVAIL || code == EAFNOSUPPORT }

  var error: MemoPeerError {
    if code == EADDRINUSE {
      return MemoPeerError(
        .io, "port \(port) on \(address.rawValue) is in use by another program",
        hint: "choose another with --port, or --port 0 for any free port")
    }
    return MemoPeerError(
      .io, "cannot listen on \(address.urlHost) port \(port): \(Errno(code))",
      hint: isUnavailable
        ? "this machine has no \(address.rawValue); use --address \(address == .ipv6 ? "127.0.0.1" : "::1")" : nil)
  }
}

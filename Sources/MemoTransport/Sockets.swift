import Foundation
import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// TCP plumbing for the transport: a dual-stack listening socket and a connect with a
/// deadline. Descriptors are close-on-exec, so no child process inherits a connection.
enum Sockets {
  /// A listening socket on every address of the host (IPv6 dual-stack), or on 127.0.0.1
  /// only (tests and benchmarks on the machine itself).
  static func listen(port: UInt16, loopbackOnly: Bool, backlog: Int32 = 64) throws -> (fd: Int32, port: UInt16) {
    let family = loopbackOnly ? AF_INET : AF_INET6
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TransportError(.library, "socket: \(String(cString: strerror(errno)))") }
    var no: Int32 = 0
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var storage = sockaddr_storage()
    let length: socklen_t
    if loopbackOnly {
      length = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
          $0.pointee.sin_family = sa_family_t(AF_INET)
          $0.pointee.sin_port = port.bigEndian
          $0.pointee.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
          return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
      }
    } else {
      setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &no, socklen_t(MemoryLayout<Int32>.size))
      length = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          $0.pointee.sin6_family = sa_family_t(AF_INET6)
          $0.pointee.sin6_port = port.bigEndian
          $0.pointee.sin6_addr = in6addr_any
          return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
      }
    }
    let bound = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
      let code = errno
      close(fd)
      throw MemoPeerError(
        .io, "cannot listen on TCP port \(port): \(String(cString: strerror(code)))",
        hint: "choose another port with --port, or 0 for any free port")
    }
    var actual = sockaddr_storage()
    var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
    }
    let boundPort = withUnsafePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    return (fd, boundPort)
  }

  /// Connects to a numeric address within the deadline. `interfaceIndex` scopes IPv6
  /// link-local addresses (fe80::/10), which mean nothing without an interface.
  static func connect(host: String, port: UInt16, interfaceIndex: UInt32, deadline: Deadline) throws(TransportError)
    -> Int32
  {
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list?.pointee, let address = info.ai_addr
    else { throw TransportError(.connectFailed, "not a numeric address: \(host)") }
    defer { freeaddrinfo(list) }
    if info.ai_family == AF_INET6 {
      address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
        if $0.pointee.sin6_scope_id == 0 { $0.pointee.sin6_scope_id = interfaceIndex }
      }
    }
    let fd = socket(info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TransportError(.connectFailed, "socket: \(String(cString: strerror(errno)))") }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    if Glibc.connect(fd, address, info.ai_addrlen) != 0 && errno != EINPROGRESS {
      let code = errno
      close(fd)
      throw TransportError(.connectFailed, String(cString: strerror(code)))
    }
    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    var ready: Int32 = 0
    repeat { ready = poll(&descriptor, 1, deadline.remaining) } while ready < 0 && errno == EINTR
    var failure: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
    guard ready > 0, failure == 0 else {
      close(fd)
      throw TransportError(.connectFailed, ready == 0 ? "connect timed out" : String(cString: strerror(failure)))
    }
    return fd
  }

  /// The numeric address of a socket's peer, for logs.
  static func peerAddress(_ fd: Int32) -> String {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    let ok = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getpeername(fd, $0, &length) == 0
          && getnameinfo($0, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0
      }
    }
    return ok ? String(nulTerminated: host) : "?"
  }
}

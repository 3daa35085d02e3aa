import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem

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
    let fd: Int32
    do throws(SystemError) {
      fd = try System.call("socket") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    } catch {
      throw TransportError(.library, error.description)
    }
    var no: Int32 = 0
    var yes: Int32 = 1
    // Options on a new socket, which only fail on bad arguments: errors ignored.
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
    do throws(SystemError) {
      try System.call("bind") {
        withUnsafePointer(to: &storage) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
      }
      try System.call("listen") { Glibc.listen(fd, backlog) }
    } catch {
      close(fd)
      throw MemoPeerError(
        .io, "cannot listen on TCP port \(port): \(error.errno)",
        hint: "choose another port with --port, or 0 for any free port", diagnostics: error.diagnostics)
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
    let fd: Int32
    do throws(SystemError) {
      fd = try System.call("socket") {
        socket(info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
      }
    } catch {
      throw TransportError(.connectFailed, error.description)
    }
    // Options on a new socket, which only fail on bad arguments: errors ignored.
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    do throws(SystemError) {
      // Not retried: after EINTR the connection goes on in the background, like EINPROGRESS.
      try System.call("connect", retryingOnInterrupt: false) { Glibc.connect(fd, address, info.ai_addrlen) }
    } catch let error where error.errno == .inProgress {
      // Non-blocking: the poll below waits for it.
    } catch {
      close(fd)
      throw TransportError(.connectFailed, error.errno.description)
    }
    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    // Retried on EINTR with what is left of the deadline; a failed poll is reported below
    // with the socket's own error.
    let ready = (try? System.call("poll") { poll(&descriptor, 1, deadline.remaining) }) ?? -1
    var failure: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
    guard ready > 0, failure == 0 else {
      close(fd)
      throw TransportError(.connectFailed, ready == 0 ? "connect timed out" : String(cString: strerror(failure)))
    }
    return fd
  }

  /// The numeric addresses a DNS name stands for (`getaddrinfo`, IPv4 first), for an
  /// address a person gave by name. Blocking, as long as the system resolver takes.
  static func resolve(name: String) throws(TransportError) -> [String] {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(name, nil, &hints, &list)
    guard status == 0 else {
      throw TransportError(.connectFailed, "\(name) does not resolve: \(String(cString: gai_strerror(status)))")
    }
    defer { freeaddrinfo(list) }
    var found: [String] = []
    var next = list
    while let info = next?.pointee {
      var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
      if let address = info.ai_addr,
        getnameinfo(address, info.ai_addrlen, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0
      {
        let text = String(nulTerminated: host)
        if !found.contains(text) { found.append(text) }
      }
      next = info.ai_next
    }
    return TLSClient.dialOrder(found)
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

